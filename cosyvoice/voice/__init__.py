"""Voice adaptation: a prompt's voice profile applied to synthesized speech.

:class:`VoiceProfile` measures a recording (pitch, formants, long-term mel envelope,
speaking rate); :class:`VoiceAdapter` moves synthesized speech toward a profile and
renders it through the mel vocoder. This is analysis-and-transformation, not neural
cloning: it matches pitch, vocal-tract length and spectral tilt/colour, not a
speaker's articulation, accent or prosody style.
"""

from cosyvoice.voice.adapter import AdapterConfig, AdaptPlan, VoiceAdapter
from cosyvoice.voice.profile import VoiceProfile

__all__ = ["AdaptPlan", "AdapterConfig", "VoiceAdapter", "VoiceProfile"]

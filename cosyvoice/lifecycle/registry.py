"""The models this app serves, as :class:`ModelSpec` entries for the ModelManager.

Imports happen inside the loaders so that importing this module loads nothing.
"""

from __future__ import annotations

import numpy as np

from cosyvoice.lifecycle.manager import ModelSpec
from cosyvoice.settings import Settings


def _load_vocoder(device: str):
    from cosyvoice.vocoder.loader import HifiGanVocoder

    return HifiGanVocoder.load(device=device)


def _warm_vocoder(vocoder) -> None:
    vocoder.vocode(np.full((vocoder.mel_config.n_mels, 16), -5.0, np.float32))


def _load_encoder(device: str):
    from cosyvoice.speaker.encoder import SpeakerEncoder

    return SpeakerEncoder.load(device=device)


def _load_vad(device: str):
    from cosyvoice.speaker.vad import SileroVad

    return SileroVad.load()


def _piper_loader(settings: Settings):
    def load(device: str):
        from cosyvoice.acoustic.piper_en import PiperEnglish

        # In models/, not cache/: a derived model file that a hard restart need not rebuild.
        return PiperEnglish.load(device=device, cache_dir=settings.models_dir / "optimized")

    return load


def _warm_acoustic(model) -> None:
    model.synthesize("Ready.", seed=0)


def default_specs(settings: Settings) -> list[ModelSpec]:
    """Every model, in load order. ``speaker_encoder`` is only needed for similarity."""
    return [
        ModelSpec("vocoder", _load_vocoder, "HiFi-GAN V1 universal (22.05 kHz)", _warm_vocoder),
        ModelSpec("acoustic_en", _piper_loader(settings), "English Piper VITS en_US-joe-medium",
                  _warm_acoustic),
        ModelSpec("vad", _load_vad, "Silero VAD (prompt validation)"),
        ModelSpec("speaker_encoder", _load_encoder, "GE2E speaker encoder (Resemblyzer)",
                  required=False),
    ]

"""The offline engine, the embedded default: text frontend → Piper (English) / FastSpeech2
(Mandarin) → voice adapter → HiFi-GAN, plus Kokoro-82M's preset voices, every weight from a
registry package.

Importing this package loads no model: :data:`FACTORY` holds the capabilities as data, the
model specs and the builder import their modules when called. The Kokoro voices are
offered when setup installed their files (a directory listing, see
:func:`~cosyvoice.acoustic.kokoro.installed_voices`); without npm they are not.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from cosyvoice.acoustic.kokoro import installed_voices, voice_label, voice_language
from cosyvoice.engine.base import Capabilities, EngineFactory
from cosyvoice.frontend.languages import LANGUAGES

KOKORO = "kokoro"  # the managed model that speaks every Kokoro voice
# preset voice → (its acoustic model, label)
PRESET_VOICES = {
    "joe": ("acoustic_en", "English · male (Piper en_US-joe-medium)"),
    "baker": ("acoustic_zh", "Mandarin · female (Baker FastSpeech2, non-commercial)"),
    **{name: (KOKORO, voice_label(name)) for name in installed_voices()},
}
# Kokoro voices that read their text in Spanish, French, Italian, Portuguese, Hindi or
# Japanese (the frontend's other languages); the rest read English and Mandarin.
VOICE_LANGUAGES = {name: voice_language(name) for name, (model, _) in PRESET_VOICES.items()
                   if model == KOKORO and voice_language(name) in LANGUAGES}

# The voice a request that names none gets, per text language, chosen by measurement
# (docs/kokoro.md: DNSMOS, WER, tones, RTF side by side with Piper and Baker). Without the
# Kokoro files the engine keeps joe (and joe's Mandarin is Baker moved toward joe).
LANGUAGE_DEFAULTS = {"en": "af_heart", "zh": "zm_yunxi"}
LANGUAGE_VOICES = {lang: v for lang, v in LANGUAGE_DEFAULTS.items() if v in PRESET_VOICES}

CAPABILITIES = Capabilities(
    name="offline",
    label="Offline (Piper · FastSpeech2 · HiFi-GAN · Kokoro)",
    modes=("preset", "clone", "cross_lingual", "instruct"),
    languages=("en", "zh", *sorted(set(VOICE_LANGUAGES.values()))),
    voices={name: label for name, (_, label) in PRESET_VOICES.items()},
    default_voice=LANGUAGE_VOICES.get("en", "joe"),
    sample_rate=22050,  # HiFi-GAN V1 universal; every output goes through its rate
    prompt_modes=("clone", "cross_lingual"),
    voice_modes=("preset", "instruct"),
    streaming=True,
    instructions=True,
    seed_deterministic=True,
    saved_voices=True,
    part_chars={"zh": 80},  # FastSpeech2's positions end at 25.6 s (MAX_CHUNK_CHARS)
    blend_voices=tuple(n for n, (model, _) in PRESET_VOICES.items() if model == KOKORO),
    voice_languages=VOICE_LANGUAGES,
    language_voices=LANGUAGE_VOICES,
)


def voice_space_file(settings) -> Path:
    """Where setup stores Kokoro's measured voice space (what cloning v2 blends from)."""
    from cosyvoice.voice.space import FILE_NAME

    return Path(settings.models_dir) / KOKORO / FILE_NAME


def configured(settings) -> Capabilities:
    """The capabilities under ``settings``: cloning is a blend of Kokoro's voices nearest
    to the prompt where cloning v2 is on and their voice space is there (shipped with the
    code, or measured by setup), else the voice adapter on joe/baker. The similarity
    strength changes a clone only where the adapter moves it: the adapter path, or a blend
    with ``clone_adapter_scale`` > 0. Fitting a voice needs the same: Kokoro and its voice
    space (a fit starts from the blend)."""
    from cosyvoice.voice.space import SHIPPED

    blend = bool(settings.clone_space and CAPABILITIES.blend_voices
                 and (SHIPPED.is_file() or voice_space_file(settings).is_file()))
    return dataclasses.replace(CAPABILITIES, cloning="blend" if blend else "adapter",
                               clone_strength=not blend or settings.clone_adapter_scale > 0,
                               voice_fitting=blend)


def _specs(settings):
    from cosyvoice.engine.offline.models import offline_specs

    return offline_specs(settings)


def _build(manager, settings):
    from cosyvoice.engine.offline.engine import OfflineEngine

    return OfflineEngine(manager, settings)


FACTORY = EngineFactory(CAPABILITIES, _specs, _build, configured)

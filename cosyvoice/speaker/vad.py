"""Silero VAD (v5/v6 ONNX graph from the ``silero-vad`` package) behind a small wrapper.

The graph is stateful: each call takes a window of 512 samples at 16 kHz, preceded by the
last 64 samples of the previous window (the "context"), plus a recurrent state tensor
``(2, B, 128)``, and returns the speech probability of that window and the new state. We
run it with our own onnxruntime session; the package is never imported.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from cosyvoice.assets import package_dir
from cosyvoice.config import dataclass_from_dict
from cosyvoice.errors import ModelError

logger = logging.getLogger(__name__)

Segment = tuple[int, int]


@dataclass
class VadConfig:
    """Fixed facts of the Silero graph (see the package's ``utils_vad.py``)."""

    sample_rate: int = 16000
    window: int = 512          # samples per speech probability (32 ms)
    context: int = 64          # samples of the previous window prepended to each call
    state_layers: int = 2
    state_size: int = 128

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> VadConfig:
        return dataclass_from_dict(cls, data)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def default_vad_path() -> Path:
    """``silero_vad/data/silero_vad.onnx`` inside the installed package (not imported)."""
    hint = "run `bash run.sh --setup-only` (silero-vad, see requirements.txt)"
    return package_dir("silero_vad", hint) / "data" / "silero_vad.onnx"


class SileroVad:
    """Speech probabilities and speech segments of 16 kHz mono audio.

    Thread-safe: the recurrent state lives in each call, and onnxruntime sessions may be
    run from several threads at once.
    """

    def __init__(self, session: Any, config: VadConfig | None = None) -> None:
        self.session = session
        self.config = config or VadConfig()
        self._sr = np.array(self.config.sample_rate, dtype=np.int64)

    @classmethod
    def load(cls, path: str | Path | None = None, device: str = "cpu",
             threads: int = 1) -> SileroVad:
        """Open the ONNX graph on the CPU (the model is tiny; a GPU would only add copies).

        ``device`` is accepted for interface symmetry with the torch models and ignored.
        """
        import onnxruntime as ort

        path = Path(path) if path is not None else default_vad_path()
        if not path.is_file():
            raise ModelError(f"Silero VAD model not found at {path}; reinstall silero-vad")
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        try:
            session = ort.InferenceSession(str(path), sess_options=opts,
                                           providers=["CPUExecutionProvider"])
        except Exception as e:
            raise ModelError(f"could not open the Silero VAD model {path}: {e}") from e
        logger.info("loaded Silero VAD from %s (device %s ignored: CPU)", path, device)
        return cls(session)

    def speech_prob(self, wav16k: np.ndarray) -> np.ndarray:
        """Speech probability per 512-sample window: ``(T,)`` at 16 kHz → ``(ceil(T/512),)``.

        The last window is zero-padded. Empty input gives an empty array.
        """
        cfg = self.config
        wav = np.asarray(wav16k, dtype=np.float32).reshape(-1)
        n_windows = -(-len(wav) // cfg.window)
        # 64 leading zeros stand in for the context of the first window.
        padded = np.zeros(cfg.context + n_windows * cfg.window, dtype=np.float32)
        padded[cfg.context:cfg.context + len(wav)] = wav
        state = np.zeros((cfg.state_layers, 1, cfg.state_size), dtype=np.float32)
        probs = np.empty(n_windows, dtype=np.float32)
        span = cfg.context + cfg.window
        for i in range(n_windows):
            start = i * cfg.window
            chunk = padded[None, start:start + span]
            out, state = self.session.run(None, {"input": chunk, "state": state, "sr": self._sr})
            probs[i] = out[0, 0]
        return probs

    def speech_segments(self, wav16k: np.ndarray, threshold: float = 0.5,
                        min_speech_ms: float = 250, min_silence_ms: float = 100,
                        pad_ms: float = 30) -> list[Segment]:
        """Speech regions as ``[(start, end), ...]`` sample ranges of ``wav16k``.

        Hysteresis like Silero's reference: speech starts at ``p >= threshold`` and ends
        after ``min_silence_ms`` below ``threshold - 0.15``; regions shorter than
        ``min_speech_ms`` are dropped; the rest are padded by ``pad_ms`` and merged where
        the padding makes them touch.
        """
        probs = self.speech_prob(wav16k)
        return segments_from_probs(probs, len(wav16k), self.config, threshold,
                                   min_speech_ms, min_silence_ms, pad_ms)


def segments_from_probs(probs: np.ndarray, n_samples: int, config: VadConfig,
                        threshold: float = 0.5, min_speech_ms: float = 250,
                        min_silence_ms: float = 100, pad_ms: float = 30) -> list[Segment]:
    """Turn per-window probabilities ``(W,)`` into padded sample ranges (see above)."""
    per_ms = config.sample_rate / 1000
    raw = _hysteresis(probs, n_samples, config.window, threshold,
                      max(threshold - 0.15, 0.01), min_silence_ms * per_ms)
    kept = [(s, e) for s, e in raw if e - s > min_speech_ms * per_ms]
    return _pad_and_merge(kept, int(pad_ms * per_ms), n_samples)


def _hysteresis(probs: np.ndarray, n_samples: int, window: int, on: float, off: float,
                min_silence: float) -> list[Segment]:
    segments: list[Segment] = []
    start: int | None = None
    silence_from: int | None = None
    for i, p in enumerate(probs.tolist()):
        pos = i * window
        if p >= on:
            silence_from = None
            if start is None:
                start = pos
        elif start is not None and p < off:
            if silence_from is None:
                silence_from = pos
            if pos - silence_from >= min_silence:
                segments.append((start, silence_from))
                start, silence_from = None, None
    if start is not None:
        segments.append((start, silence_from if silence_from is not None else n_samples))
    return segments


def _pad_and_merge(segments: list[Segment], pad: int, n_samples: int) -> list[Segment]:
    merged: list[Segment] = []
    for s, e in segments:
        s, e = max(0, s - pad), min(n_samples, e + pad)
        if merged and s <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], e))
        else:
            merged.append((s, e))
    return merged


def speech_seconds(segments: list[Segment], sample_rate: int) -> float:
    """Total length of ``segments`` in seconds."""
    return sum(e - s for s, e in segments) / sample_rate

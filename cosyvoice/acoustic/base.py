"""The acoustic-model interface every language backend implements."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np


@dataclass
class AcousticOutput:
    """One sentence of speech from an acoustic backend: audio, or a mel for the engine's
    vocoder.

    ``wav`` is float32 mono ``(T,)`` at ``sample_rate``; a backend that ends in a mel leaves
    it None and gives ``mel`` ``(n_mels, frames)`` in its vocoder's space instead, plus an
    optional ``finish`` applied to the vocoded audio. ``pitch_applied``: the backend
    already followed the controls' pitch (so a style does not shift it again).
    ``phonemes`` is what was spoken. ``marks``: ``(start_s, end_s, text)`` per word or
    syllable in seconds of this output's audio, from a backend that knows its durations.
    """

    wav: np.ndarray | None
    sample_rate: int
    phonemes: list[str] = field(default_factory=list)
    mel: np.ndarray | None = None
    finish: Callable[[np.ndarray], np.ndarray] | None = None
    pitch_applied: bool = False
    marks: list[tuple[float, float, str]] = field(default_factory=list)


def to_audio(out: AcousticOutput, vocode: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """The output's audio ``(T,)`` float32 in [-1, 1]: its ``wav``, or its mel through
    ``vocode`` and then its ``finish``."""
    if out.mel is None:
        wav = np.asarray(out.wav, dtype=np.float32).reshape(-1)
    else:
        wav = np.asarray(vocode(out.mel), dtype=np.float32).reshape(-1)
    if out.finish is not None:
        wav = out.finish(wav)
    return np.clip(wav, -1.0, 1.0)


@runtime_checkable
class AcousticModel(Protocol):
    """One normalized sentence of one language → speech. One entry point:
    :meth:`synthesize`, the same signature for every backend."""

    name: str
    language: str
    sample_rate: int

    def phonemize(self, text: str) -> list[list[str]]:
        """Normalized text → phonemes, one list per sentence."""
        ...

    def synthesize(self, text: str, speed: float = 1.0, seed: int | None = None,
                   controls: Any = None) -> AcousticOutput:
        """Speak one normalized sentence. ``speed`` > 1 is faster; ``controls``: the
        backend's prosody controls (a backend without per-phone controls ignores them and
        says so with ``pitch_applied=False``)."""
        ...

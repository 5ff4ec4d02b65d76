"""The acoustic-model interface every language backend implements."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np


@dataclass
class AcousticOutput:
    """One sentence of speech from an acoustic backend.

    ``wav`` is float32 mono ``(T,)`` at ``sample_rate``; ``phonemes`` is what was spoken.
    """

    wav: np.ndarray
    sample_rate: int
    phonemes: list[str] = field(default_factory=list)


@runtime_checkable
class AcousticModel(Protocol):
    """Text of one language → waveform. One obvious entry point: :meth:`synthesize`."""

    name: str
    language: str
    sample_rate: int

    def phonemize(self, text: str) -> list[list[str]]:
        """Normalized text → phonemes, one list per sentence."""
        ...

    def synthesize(self, text: str, speed: float = 1.0, seed: int | None = None) -> AcousticOutput:
        """Speak one sentence (already normalized). ``speed`` > 1 is faster."""
        ...

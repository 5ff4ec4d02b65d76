"""The vocoder interface: log-mel frames in, waveform out."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np
import torch

from cosyvoice.audio.mel import MelConfig


@runtime_checkable
class Vocoder(Protocol):
    """Maps log-mels computed with :attr:`mel_config` back to audio.

    ``vocode(mel)`` takes ``(n_mels, T)`` or ``(B, n_mels, T)`` (numpy or torch, any
    device) and returns a float32 numpy waveform ``(T * hop_length,)`` for a single mel or
    ``(B, T * hop_length)`` for a batch. It runs under ``torch.inference_mode()`` and the
    result is on the CPU.
    """

    mel_config: MelConfig
    sample_rate: int
    device: str

    def vocode(self, mel: np.ndarray | torch.Tensor) -> np.ndarray:
        ...

"""Log-mel analysis exactly as HiFi-GAN (jik876 ``meldataset.py``) was trained on it.

Every stage that needs mels (voice adapter, tests, benchmarks) uses :class:`MelAnalyzer`,
so the vocoder always receives features computed by the same formula:

1. reflect-pad the waveform by ``(n_fft - hop_length) // 2`` on each side,
2. ``torch.stft`` with a periodic Hann window of ``win_length``, ``center=False``,
3. magnitude ``sqrt(re² + im² + 1e-9)``,
4. librosa's Slaney-normalised mel filterbank (``htk=False``, ``norm="slaney"``),
5. ``log(clamp(mel, min=clamp))``.

With that padding a waveform of ``T`` samples gives ``T // hop_length`` frames, so a
vocoder maps the frames back to exactly ``frames * hop_length`` samples.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from cosyvoice.config import dataclass_from_dict
from cosyvoice.errors import CosyVoiceError

logger = logging.getLogger(__name__)

_MAG_EPS = 1e-9  # added under the square root, as in jik876 meldataset.py


@dataclass
class MelConfig:
    """Parameters of the log-mel analysis (defaults: HiFi-GAN V1 / LJSpeech, 22.05 kHz)."""

    sample_rate: int = 22050
    n_fft: int = 1024
    hop_length: int = 256
    win_length: int = 1024
    n_mels: int = 80
    fmin: float = 0.0
    fmax: float | None = 8000.0
    clamp: float = 1e-5

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> MelConfig:
        """Build from a dict with this dataclass's field names; unknown keys are ignored."""
        return dataclass_from_dict(cls, d)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_hifigan_config(cls, d: Mapping[str, Any]) -> MelConfig:
        """Read the keys of a jik876 HiFi-GAN ``config.json``.

        (``sampling_rate, n_fft, hop_size, win_size, num_mels, fmin, fmax``).
        """
        try:
            return cls(
                sample_rate=int(d["sampling_rate"]),
                n_fft=int(d["n_fft"]),
                hop_length=int(d["hop_size"]),
                win_length=int(d["win_size"]),
                n_mels=int(d["num_mels"]),
                fmin=float(d["fmin"]),
                fmax=None if d["fmax"] is None else float(d["fmax"]),
            )
        except KeyError as e:
            raise CosyVoiceError(
                f"HiFi-GAN config is missing the mel key {e.args[0]!r}; expected the jik876 "
                "config.json keys sampling_rate, n_fft, hop_size, win_size, num_mels, fmin, fmax"
            ) from e

    @property
    def pad(self) -> int:
        """Reflect padding on each side of the waveform, in samples."""
        return (self.n_fft - self.hop_length) // 2


def mel_filterbank(cfg: MelConfig) -> np.ndarray:
    """librosa's Slaney mel filterbank ``(n_mels, n_fft // 2 + 1)`` float32."""
    import librosa

    return librosa.filters.mel(
        sr=cfg.sample_rate, n_fft=cfg.n_fft, n_mels=cfg.n_mels, fmin=cfg.fmin, fmax=cfg.fmax,
        htk=False, norm="slaney",
    ).astype(np.float32)


class MelAnalyzer(torch.nn.Module):
    """Waveform ``(T,)`` / ``(B, T)`` → log-mel ``(B, n_mels, T // hop_length)`` float32.

    The filterbank and window are buffers, so ``.to(device)`` moves them; calling with
    a tensor on another device moves the analyzer's buffers there once (the old copies
    are dropped, nothing is cached at module level).
    """

    mel_basis: torch.Tensor
    window: torch.Tensor

    def __init__(self, config: MelConfig | None = None, device: str | torch.device = "cpu"):
        super().__init__()
        self.config = config or MelConfig()
        self.register_buffer("mel_basis", torch.from_numpy(mel_filterbank(self.config)),
                             persistent=False)
        self.register_buffer("window", torch.hann_window(self.config.win_length),
                             persistent=False)
        self.to(device)

    @property
    def device(self) -> torch.device:
        return self.mel_basis.device

    def forward(self, wav: torch.Tensor | np.ndarray) -> torch.Tensor:
        """``(T,)`` or ``(B, T)`` float waveform in [-1, 1] → ``(B, n_mels, frames)``."""
        x = self._as_batch(wav)
        if x.device != self.device:
            self.to(x.device)
        cfg = self.config
        if x.shape[-1] <= cfg.pad:
            raise CosyVoiceError(
                f"audio is {x.shape[-1]} samples long; mel analysis needs more than "
                f"{cfg.pad} samples ({cfg.pad / cfg.sample_rate * 1000:.0f} ms)"
            )
        x = torch.nn.functional.pad(x.unsqueeze(1), (cfg.pad, cfg.pad), mode="reflect")
        spec = torch.stft(
            x.squeeze(1), cfg.n_fft, hop_length=cfg.hop_length, win_length=cfg.win_length,
            window=self.window, center=False, normalized=False, onesided=True,
            return_complex=True,
        )
        mag = torch.sqrt(spec.real.square() + spec.imag.square() + _MAG_EPS)
        mel = torch.matmul(self.mel_basis, mag)
        return torch.log(torch.clamp(mel, min=cfg.clamp))

    @staticmethod
    def _as_batch(wav: torch.Tensor | np.ndarray) -> torch.Tensor:
        x = torch.from_numpy(np.ascontiguousarray(wav)) if isinstance(wav, np.ndarray) else wav
        if x.ndim == 1:
            x = x.unsqueeze(0)
        if x.ndim != 2:
            raise CosyVoiceError(f"expected a waveform (T,) or (B, T); got shape {tuple(x.shape)}")
        return x.to(torch.float32)

    def num_frames(self, num_samples: int) -> int:
        """Frames produced for a waveform of ``num_samples`` samples."""
        cfg = self.config
        return (num_samples + 2 * cfg.pad - cfg.n_fft) // cfg.hop_length + 1

"""The neural-source-filter excitation of HiFT: F0 (per sample) -> a harmonic sine source.

Harmonics 1…H+1 of F0 are integrated to a phase at the frame rate (down-sampled, summed,
up-sampled back), given a random initial phase (none for the fundamental), voiced by
``F0 > voiced_threshold``, mixed with noise and merged by a linear layer + tanh.

Random numbers, as the reference draws them:
- non-causal (v2): per call, from the global torch generator (or ``generator``) in the
  reference's order: the initial phases ``rand(B, H+1)``, the sine noise
  ``randn(B, L, H+1)``, then the unused noise-branch ``randn(B, L, 1)`` (drawn only to
  keep the random stream aligned with the reference's);
- causal (v3): fixed per model, so streamed chunks continue the same noise: initial
  phases and uniform noise read from the start of a sequence. The reference draws them
  once at construction (5 minutes' worth); here they come from ``noise_seed`` on demand, or
  are set with :meth:`SineSource.set_fixed_noise` (e.g. to the reference's own draws).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn


class SineSource(nn.Module):
    """``forward(f0 (B, L, 1)) -> source (B, L, 1)``; the only weights are ``l_linear``."""

    def __init__(self, sampling_rate: int, upsample_scale: int, harmonics: int = 8,
                 sine_amp: float = 0.1, noise_std: float = 0.003, voiced_threshold: float = 10,
                 causal: bool = False, noise_seed: int = 0) -> None:
        super().__init__()
        self.sampling_rate, self.upsample_scale = sampling_rate, int(upsample_scale)
        self.harmonics, self.sine_amp, self.noise_std = harmonics, sine_amp, noise_std
        self.voiced_threshold, self.causal, self.noise_seed = voiced_threshold, causal, noise_seed
        self.l_linear = nn.Linear(harmonics + 1, 1)
        self._fixed: tuple[torch.Tensor, torch.Tensor] | None = None

    def set_fixed_noise(self, phase_init: torch.Tensor, sine_noise: torch.Tensor) -> None:
        """Causal variant: phases (1, H+1) and uniform noise (1, N, H+1) to read from."""
        self._fixed = (phase_init.detach().float().cpu(), sine_noise.detach().float().cpu())

    def _fixed_noise(self, length: int) -> tuple[torch.Tensor, torch.Tensor]:
        if self._fixed is None or self._fixed[1].size(1) < length:
            have = 0 if self._fixed is None else self._fixed[1].size(1)
            size = max(length, 2 * have, 24000 * 30)
            generator = torch.Generator().manual_seed(self.noise_seed)
            phase = torch.rand(1, self.harmonics + 1, generator=generator)
            phase[:, 0] = 0
            generator = torch.Generator().manual_seed(self.noise_seed + 1)
            self._fixed = (phase, torch.rand(1, size, self.harmonics + 1, generator=generator))
        return self._fixed

    def _phase(self, rad: torch.Tensor) -> torch.Tensor:
        """Per-sample phase increments (B, L, H+1) -> sines, integrated at the frame rate."""
        scale = self.upsample_scale
        rad = F.interpolate(rad.transpose(1, 2), scale_factor=1 / scale, mode="linear")
        rad = rad.transpose(1, 2)
        phase = torch.cumsum(rad, dim=1) * 2 * math.pi
        phase = F.interpolate(phase.transpose(1, 2) * scale, scale_factor=scale,
                              mode="nearest" if self.causal else "linear").transpose(1, 2)
        return torch.sin(phase)

    def forward(self, f0: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
        batch, length = f0.size(0), f0.size(1)
        overtones = torch.arange(1, self.harmonics + 2, dtype=torch.float32, device=f0.device)
        rad = (f0 * overtones.view(1, 1, -1) / self.sampling_rate) % 1
        if self.causal:
            phase_init, fixed = self._fixed_noise(length)
            rad[:, 0, :] = rad[:, 0, :] + phase_init.to(rad.device)
        else:
            phase_init = torch.rand(batch, self.harmonics + 1, device=f0.device,
                                    generator=generator)
            phase_init[:, 0] = 0
            rad[:, 0, :] = rad[:, 0, :] + phase_init
        sines = self._phase(rad) * self.sine_amp
        voiced = (f0 > self.voiced_threshold).type(torch.float32)
        noise_amp = voiced * self.noise_std + (1 - voiced) * self.sine_amp / 3
        if self.causal:
            noise = noise_amp * fixed[:, :length].to(sines.device)
        else:
            # drawn like ``randn_like``: in the memory order of the (transposed) sines
            noise = noise_amp * torch.empty_like(sines).normal_(generator=generator)
            torch.empty_like(voiced).normal_(generator=generator)
        return torch.tanh(self.l_linear(sines * voiced + noise))

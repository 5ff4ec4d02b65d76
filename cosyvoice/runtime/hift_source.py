"""The neural-source-filter excitation of HiFT: F0 (per sample) -> a harmonic sine source.

Harmonics 1…H+1 of F0 are integrated to a phase at the frame rate (down-sampled, summed,
up-sampled back), given a random initial phase (none for the fundamental), voiced by
``F0 > voiced_threshold``, mixed with noise and merged by a linear layer + tanh.

Random numbers, as the reference draws them:
- non-causal (v2): per call, from the global torch generator (or ``generator``) in the
  reference's order: the initial phases ``rand(B, H+1)``, the sine noise like ``randn_like``
  of the sines (whose memory order is transposed), then the unused noise-branch
  ``randn_like(uv)`` (drawn only to keep the random stream aligned with the reference's);
- causal (v3): fixed per model, so streamed chunks continue the same noise. The reference
  draws it when it is built (initial phases, then 5 minutes of uniform noise), right after
  the flow model reseeds the global generator with 0 and builds its remaining layers. We
  replay those draws by size (:class:`ConstructionDraws`) with a private generator, so our
  noise is the reference's, value for value, without touching the global generator; only the
  length needed is drawn (uniform draws are prefix-stable).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn


@dataclass(frozen=True)
class ConstructionDraws:
    """Sizes of what the reference builds between the flow's reseed and the causal HiFT's noise:
    the flow's own noise (mel × 15000 normals), its token embedding (normal), its speaker
    projection and the F0 predictor's five convolutions and head (uniform inits)."""

    mel_channels: int = 80
    vocab_size: int = 6561
    flow_input_size: int = 80
    spk_embed_dim: int = 192
    f0_in_channels: int = 80
    f0_cond_channels: int = 512

    def replay(self, harmonics: int, length: int) -> tuple[torch.Tensor, torch.Tensor]:
        """-> the reference's phases (1, H+1) and the first ``length`` of its noise (1, L, H+1)."""
        gen = torch.Generator().manual_seed(0)

        def uniform(*shape: int) -> None:
            torch.empty(*shape).uniform_(generator=gen)

        torch.randn([1, self.mel_channels, 50 * 300], generator=gen)
        torch.empty(self.vocab_size, self.flow_input_size).normal_(generator=gen)
        uniform(self.mel_channels, self.spk_embed_dim)
        uniform(self.mel_channels)
        cond = self.f0_cond_channels
        for i, kernel in enumerate((4, 3, 3, 3, 3)):  # weight, then bias, per convolution
            uniform(cond, self.f0_in_channels if i == 0 else cond, kernel)
            uniform(cond)
        uniform(1, cond)
        uniform(1)
        phase = torch.rand(1, harmonics + 1, generator=gen)
        phase[:, 0] = 0
        return phase, torch.rand(1, length, harmonics + 1, generator=gen)


class SineSource(nn.Module):
    """``forward(f0 (B, L, 1)) -> source (B, L, 1)``; the only weights are ``l_linear``."""

    def __init__(self, sampling_rate: int, upsample_scale: int, harmonics: int = 8,
                 sine_amp: float = 0.1, noise_std: float = 0.003, voiced_threshold: float = 10,
                 causal: bool = False, draws: ConstructionDraws | None = None) -> None:
        super().__init__()
        self.sampling_rate, self.upsample_scale = sampling_rate, int(upsample_scale)
        self.harmonics, self.sine_amp, self.noise_std = harmonics, sine_amp, noise_std
        self.voiced_threshold, self.causal = voiced_threshold, causal
        self.draws = draws or ConstructionDraws()
        self.l_linear = nn.Linear(harmonics + 1, 1)
        self._fixed: tuple[torch.Tensor, torch.Tensor] | None = None

    def fixed_noise(self, length: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Causal variant: the phases (1, H+1) and at least ``length`` noise samples (1, N, H+1)."""
        if self._fixed is None or self._fixed[1].size(1) < length:
            have = 0 if self._fixed is None else self._fixed[1].size(1)
            self._fixed = self.draws.replay(self.harmonics, max(length, 2 * have, 24000 * 30))
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
            phase_init, fixed = self.fixed_noise(length)
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

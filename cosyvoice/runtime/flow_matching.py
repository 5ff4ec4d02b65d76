"""Conditional flow matching at inference: an Euler solver over a cosine time schedule, with
classifier-free guidance, starting from a fixed noise sequence.

The noise is the reference's: 80 × 15000 standard normals drawn from seed 0 (five minutes
of mel at 50 Hz), read from the start for every request, so the same inputs give the same
mel and a streamed chunk sees the same noise as the whole utterance.
"""

from __future__ import annotations

import torch
from torch import nn

NOISE_SEED = 0
NOISE_FRAMES = 50 * 300


def fixed_noise(channels: int = 80, frames: int = NOISE_FRAMES,
                seed: int = NOISE_SEED) -> torch.Tensor:
    """(1, channels, frames) standard normals from ``seed``."""
    generator = torch.Generator().manual_seed(seed)
    return torch.randn([1, channels, frames], generator=generator)


def cosine_schedule(steps: int, device: torch.device, dtype: torch.dtype) -> torch.Tensor:
    """``steps + 1`` times from 0 to 1, dense near 0: ``1 - cos(π/2 · u)``."""
    u = torch.linspace(0, 1, steps + 1, device=device, dtype=dtype)
    return 1 - torch.cos(u * 0.5 * torch.pi)


class FlowSolver(nn.Module):
    """Integrates the estimator's velocity from noise (t=0) to mel (t=1).

    ``estimator(x, mask, mu, t, spks, cond, streaming)`` is the U-Net (v2) or DiT (v3);
    ``cfg_rate`` mixes the conditional and unconditional velocities as
    ``(1 + r) · v_cond - r · v_uncond``; the unconditional pass zeroes mu, spks and cond.
    """

    def __init__(self, estimator: nn.Module, cfg_rate: float = 0.7, schedule: str = "cosine",
                 channels: int = 80) -> None:
        super().__init__()
        if schedule not in ("cosine", "linear"):
            raise ValueError(f"unknown flow time schedule {schedule!r}; "
                             "expected 'cosine' or 'linear'")
        self.estimator = estimator
        self.cfg_rate = cfg_rate
        self.schedule = schedule
        self.channels = channels
        self.register_buffer("noise", fixed_noise(channels), persistent=False)

    def times(self, steps: int, device: torch.device, dtype: torch.dtype) -> torch.Tensor:
        if self.schedule == "cosine":
            return cosine_schedule(steps, device, dtype)
        return torch.linspace(0, 1, steps + 1, device=device, dtype=dtype)

    @torch.inference_mode()
    def forward(self, mu: torch.Tensor, mask: torch.Tensor, spks: torch.Tensor, cond: torch.Tensor,
                steps: int = 10, temperature: float = 1.0, streaming: bool = False) -> torch.Tensor:
        """mu, cond (1, C, T); mask (1, 1, T); spks (1, C) -> mel (1, C, T) float32."""
        if mu.size(2) > self.noise.size(2):
            raise ValueError(f"the flow model takes at most {self.noise.size(2)} mel frames "
                             f"({self.noise.size(2) // 50} s) per call; got {mu.size(2)}")
        x = self.noise[:, :, :mu.size(2)].to(mu.device, mu.dtype) * temperature
        times = self.times(steps, mu.device, mu.dtype)
        return self.solve(x, times, mu, mask, spks, cond, streaming)

    def solve(self, x: torch.Tensor, times: torch.Tensor, mu: torch.Tensor, mask: torch.Tensor,
              spks: torch.Tensor, cond: torch.Tensor, streaming: bool) -> torch.Tensor:
        """Euler steps; row 0 of each batch of two is conditional, row 1 unconditional."""
        length, dtype = x.size(2), spks.dtype
        x_in = torch.zeros([2, self.channels, length], device=x.device, dtype=dtype)
        mask_in = torch.zeros([2, 1, length], device=x.device, dtype=dtype)
        mu_in = torch.zeros([2, self.channels, length], device=x.device, dtype=dtype)
        t_in = torch.zeros([2], device=x.device, dtype=dtype)
        spks_in = torch.zeros([2, self.channels], device=x.device, dtype=dtype)
        cond_in = torch.zeros([2, self.channels, length], device=x.device, dtype=dtype)
        mask_in[:], mu_in[0], spks_in[0], cond_in[0] = mask, mu, spks, cond
        t, dt = times[0].unsqueeze(0), times[1] - times[0]
        for step in range(1, len(times)):
            x_in[:] = x
            t_in[:] = t.unsqueeze(0)
            velocity = self.estimator(x_in, mask_in, mu_in, t_in, spks_in, cond_in,
                                      streaming=streaming)
            conditional, unconditional = torch.split(velocity, [1, 1], dim=0)
            velocity = (1.0 + self.cfg_rate) * conditional - self.cfg_rate * unconditional
            x = x + dt * velocity
            t = t + dt
            if step < len(times) - 1:
                dt = times[step + 1] - t
        return x.float()


"""Repetition-aware sampling (RAS) of speech tokens, as CosyVoice2/3 decode.

One step: nucleus sampling over the probabilities sorted high to low — keep tokens while the
running sum (float32, added one at a time) is below ``top_p`` and fewer than ``top_k`` are kept,
then draw one of them in proportion to its probability. If the drawn token already occurs
``win_size * tau_r`` times or more among the last ``win_size`` decoded tokens, it is banned for
this step and a token is drawn from the whole distribution instead. Draws use
``torch.multinomial`` on the default generator (or ``generator``), one draw per call, in that
order, so a seeded run draws the same random numbers as the reference implementation.
"""

from __future__ import annotations

import torch

from cosyvoice.runtime.hparams import SamplingConfig


def nucleus_candidates(probs: torch.Tensor, top_p: float, top_k: int
                       ) -> tuple[torch.Tensor, torch.Tensor]:
    """(probabilities, token ids) of the nucleus, most probable first. ``probs``: (V,)."""
    head = min(top_k, probs.numel())
    values, ids = probs.sort(descending=True, stable=True)
    values, ids = values[:head], ids[:head]
    total = torch.zeros((), dtype=values.dtype)
    kept = 0
    for value in values:
        if total >= top_p:
            break
        total = total + value
        kept += 1
    return values[:kept], ids[:kept]


class RasSampler:
    """``sampler(logp, decoded) -> token id``; ``logp``: (V,) log-probabilities of one step."""

    def __init__(self, config: SamplingConfig, generator: torch.Generator | None = None):
        self.config = config
        self.generator = generator

    def draw(self, weights: torch.Tensor) -> int:
        return int(torch.multinomial(weights, 1, replacement=True, generator=self.generator))

    def __call__(self, logp: torch.Tensor, decoded: list[int]) -> int:
        cfg = self.config
        probs, ids = nucleus_candidates(logp.softmax(dim=0), cfg.top_p, cfg.top_k)
        token = int(ids[self.draw(probs)])
        recent = decoded[-cfg.win_size:]
        if sum(1 for t in recent if t == token) >= cfg.win_size * cfg.tau_r:
            banned = logp.clone()
            banned[token] = -float("inf")
            token = self.draw(banned.softmax(dim=0))
        return token

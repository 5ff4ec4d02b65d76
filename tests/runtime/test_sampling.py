"""Repetition-aware sampling: nucleus bounds, the repetition fallback, the RNG draws it makes."""

from __future__ import annotations

import pytest
import torch

from cosyvoice.runtime.hparams import SamplingConfig
from cosyvoice.runtime.sampling import RasSampler, nucleus_candidates


def test_nucleus_stops_at_top_p_or_top_k() -> None:
    probs = torch.tensor([0.05, 0.5, 0.3, 0.1, 0.05])
    values, ids = nucleus_candidates(probs, top_p=0.8, top_k=25)
    assert ids.tolist() == [1, 2]  # 0.5 < 0.8, then 0.8 reached
    assert nucleus_candidates(probs, top_p=0.81, top_k=25)[1].tolist() == [1, 2, 3]
    assert nucleus_candidates(probs, top_p=0.99, top_k=2)[1].tolist() == [1, 2]
    # Ties keep index order (stable sort), as the reference's.
    assert nucleus_candidates(torch.full((4,), 0.25), 0.6, 25)[1].tolist() == [0, 1, 2]


def test_repeated_token_falls_back_to_the_whole_distribution() -> None:
    logp = torch.log(torch.tensor([0.97, 0.01, 0.01, 0.01]))
    sampler = RasSampler(SamplingConfig(top_p=0.8, top_k=25, win_size=10, tau_r=0.1))
    torch.manual_seed(0)
    assert sampler(logp, decoded=[1, 2, 3]) == 0  # token 0 is the whole nucleus
    # Token 0 occurred once in the last 10 (>= 10 * 0.1): banned, drawn again from the rest.
    assert sampler(logp, decoded=[0, 1, 2]) in (1, 2, 3)
    assert sampler(logp, decoded=[0] + [1] * 10) == 0  # outside the window: kept


def test_draws_follow_the_seed_and_consume_one_draw_per_pick() -> None:
    logp = torch.randn(100, generator=torch.Generator().manual_seed(3)).log_softmax(0)
    sampler = RasSampler(SamplingConfig(top_p=0.99, top_k=25))
    torch.manual_seed(7)
    first = [sampler(logp, []) for _ in range(5)]
    torch.manual_seed(7)
    again = [sampler(logp, []) for _ in range(5)]
    assert first == again
    # Without repetitions each pick is one torch.multinomial draw on the nucleus probabilities.
    torch.manual_seed(7)
    probs, ids = nucleus_candidates(logp.softmax(0), 0.99, 25)
    manual = [int(ids[torch.multinomial(probs, 1, replacement=True)]) for _ in range(5)]
    assert first == manual


def _peaky_steps(steps: int, vocab: int, seed: int) -> torch.Tensor:
    """(steps, V) log-probabilities whose top token holds 0.9 (> top_p, so the nucleus is that
    token alone) and changes only every 7 steps: the drawn token repeats within the window
    most of the time, so the repetition ban fires often."""
    g = torch.Generator().manual_seed(seed)
    rest = torch.rand(steps, vocab, generator=g) + 0.05
    probs = 0.1 * rest / rest.sum(dim=1, keepdim=True)
    top = torch.randint(vocab, (steps // 7 + 1,), generator=g).repeat_interleave(7)[:steps]
    probs[torch.arange(steps), top] += 0.9
    return probs.log()


@pytest.mark.oracle
def test_the_repetition_ban_draws_what_the_reference_draws(oracle) -> None:
    """Decoding 300 steps where repetitions are the rule: the same tokens as the reference's
    ``ras_sampling`` under one seed, the ban branch taken many times (a token other than the
    nucleus' only one)."""
    cfg = SamplingConfig(top_p=0.8, top_k=25, win_size=10, tau_r=0.1)
    logps = _peaky_steps(300, 64, seed=5)
    ref = oracle("ras_sampling.py", logps=logps, seed=11, top_p=cfg.top_p, top_k=cfg.top_k,
                 win_size=cfg.win_size, tau_r=cfg.tau_r)["tokens"].tolist()
    sampler, decoded = RasSampler(cfg), []
    torch.manual_seed(11)
    for step in logps:
        decoded.append(sampler(step, decoded))
    assert decoded == ref
    banned = sum(1 for step, token in zip(logps, decoded, strict=True)
                 if token != int(step.argmax()))
    assert banned >= 100, banned

"""CMA-ES, the optimiser of voice fitting: ``ask`` a population, ``tell`` it its scores.

The (μ/μ_w, λ)-CMA-ES with rank-one and rank-μ covariance updates and cumulative step-size
adaptation, with the default constants of Hansen's tutorial ("The CMA Evolution Strategy:
A Tutorial", 2016). Derivative-free and invariant to the scale of the score, which suits a
score that is a synthesized voice read by a speaker encoder. *Maximises*.

Deterministic under its seed: the population of a generation is drawn from a
``numpy.random.Generator`` (PCG64) whose state travels in :meth:`CmaEs.state_dict`, so a
search stopped after any generation and resumed from its state draws exactly what the
uninterrupted search would have drawn.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class CmaConstants:
    """The strategy's constants for dimension ``n`` and population ``lam`` (the tutorial's
    defaults; ``lam`` defaults to ``4 + floor(3 ln n)``)."""

    n: int
    lam: int
    mu: int
    weights: np.ndarray  # (mu,) positive recombination weights, sum 1
    mueff: float
    cc: float
    cs: float
    c1: float
    cmu: float
    damps: float
    chi_n: float  # E||N(0, I)||

    @classmethod
    def for_dim(cls, n: int, lam: int | None = None) -> CmaConstants:
        lam = int(lam or 4 + int(3 * np.log(n)))
        mu = lam // 2
        w = np.log((lam + 1) / 2) - np.log(np.arange(1, mu + 1))
        w = w / w.sum()
        mueff = float(1.0 / np.sum(w**2))
        cc = (4 + mueff / n) / (n + 4 + 2 * mueff / n)
        cs = (mueff + 2) / (n + mueff + 5)
        c1 = 2 / ((n + 1.3) ** 2 + mueff)
        cmu = min(1 - c1, 2 * (mueff - 2 + 1 / mueff) / ((n + 2) ** 2 + mueff))
        damps = 1 + 2 * max(0.0, np.sqrt((mueff - 1) / (n + 1)) - 1) + cs
        chi_n = np.sqrt(n) * (1 - 1 / (4 * n) + 1 / (21 * n**2))
        return cls(n, lam, mu, w, mueff, cc, cs, c1, cmu, damps, float(chi_n))


class CmaEs:
    """One search: ``xs = es.ask()`` → score each row → ``es.tell(xs, scores)``."""

    def __init__(self, mean: np.ndarray, sigma: float, seed: int = 0,
                 lam: int | None = None) -> None:
        self.mean = np.asarray(mean, np.float64).copy()
        self.sigma = float(sigma)
        self.k = CmaConstants.for_dim(len(self.mean), lam)
        n = self.k.n
        self.cov = np.eye(n)
        self.pc = np.zeros(n)
        self.ps = np.zeros(n)
        self.generation = 0
        self.rng = np.random.default_rng(seed)

    def _eig(self) -> tuple[np.ndarray, np.ndarray]:
        """``B, D`` with ``cov = B diag(D²) Bᵀ``."""
        vals, vecs = np.linalg.eigh((self.cov + self.cov.T) / 2)
        return vecs, np.sqrt(np.maximum(vals, 1e-20))

    def ask(self) -> np.ndarray:
        """``(lam, n)`` candidates of this generation."""
        b, d = self._eig()
        z = self.rng.standard_normal((self.k.lam, self.k.n))
        return self.mean + self.sigma * (z * d) @ b.T

    def tell(self, xs: np.ndarray, scores: np.ndarray) -> None:
        """Update from the candidates of :meth:`ask` and their scores (higher is better)."""
        k = self.k
        order = np.argsort(-np.asarray(scores, np.float64), kind="stable")[: k.mu]
        y = (np.asarray(xs, np.float64)[order] - self.mean) / self.sigma  # (mu, n)
        yw = k.weights @ y
        self.mean = self.mean + self.sigma * yw
        b, d = self._eig()
        inv_sqrt = (b / d) @ b.T
        self.ps = (1 - k.cs) * self.ps + np.sqrt(k.cs * (2 - k.cs) * k.mueff) * inv_sqrt @ yw
        norm_ps = float(np.linalg.norm(self.ps))
        self.generation += 1
        hsig = norm_ps / np.sqrt(1 - (1 - k.cs) ** (2 * self.generation)) / k.chi_n \
            < 1.4 + 2 / (k.n + 1)
        self.pc = (1 - k.cc) * self.pc + hsig * np.sqrt(k.cc * (2 - k.cc) * k.mueff) * yw
        rank_mu = (y * k.weights[:, None]).T @ y
        self.cov = ((1 - k.c1 - k.cmu) * self.cov
                    + k.c1 * (np.outer(self.pc, self.pc)
                              + (1 - hsig) * k.cc * (2 - k.cc) * self.cov)
                    + k.cmu * rank_mu)
        self.sigma *= float(np.exp((k.cs / k.damps) * (norm_ps / k.chi_n - 1)))

    def state_dict(self) -> dict:
        """Everything needed to go on exactly where this search is (JSON-serializable)."""
        return {"mean": self.mean.tolist(), "sigma": self.sigma, "cov": self.cov.tolist(),
                "pc": self.pc.tolist(), "ps": self.ps.tolist(), "generation": self.generation,
                "lam": self.k.lam, "rng": self.rng.bit_generator.state}

    @classmethod
    def from_state(cls, state: dict) -> CmaEs:
        es = cls(np.asarray(state["mean"]), float(state["sigma"]), lam=int(state["lam"]))
        es.cov = np.asarray(state["cov"], np.float64)
        es.pc = np.asarray(state["pc"], np.float64)
        es.ps = np.asarray(state["ps"], np.float64)
        es.generation = int(state["generation"])
        es.rng.bit_generator.state = state["rng"]
        return es

"""The fitter's optimiser and parametrisation on numbers: CMA-ES finds a shifted optimum,
is deterministic under its seed, resumes exactly from its state (through JSON), and the
style basis moves whole packs, one half at a time."""

from __future__ import annotations

import json

import numpy as np
import pytest

from cosyvoice.voice.fit_basis import StyleBasis, spread_directions
from cosyvoice.voice.fit_cma import CmaEs

OPTIMUM = np.array([0.7, -1.2, 0.3, 2.0, -0.5])


def _score(xs: np.ndarray) -> np.ndarray:
    """A maximised, ill-scaled quadratic with its top at OPTIMUM."""
    scale = np.array([1.0, 4.0, 0.5, 2.0, 9.0])
    return -np.sum(scale * (xs - OPTIMUM) ** 2, axis=1)


def _search(es: CmaEs, generations: int) -> CmaEs:
    for _ in range(generations):
        xs = es.ask()
        es.tell(xs, _score(xs))
    return es


def test_finds_the_optimum_of_an_ill_scaled_quadratic():
    es = _search(CmaEs(np.zeros(5), 0.5, seed=3), 120)
    assert np.allclose(es.mean, OPTIMUM, atol=1e-3), es.mean
    assert es.sigma < 0.01


def test_same_seed_same_search_other_seed_other_search():
    a = _search(CmaEs(np.zeros(5), 0.5, seed=1), 5)
    b = _search(CmaEs(np.zeros(5), 0.5, seed=1), 5)
    c = _search(CmaEs(np.zeros(5), 0.5, seed=2), 5)
    assert np.array_equal(a.mean, b.mean) and a.sigma == b.sigma
    assert not np.allclose(a.mean, c.mean)


def test_resumed_from_its_state_it_goes_on_exactly():
    whole = _search(CmaEs(np.zeros(5), 0.5, seed=7), 8)
    first = _search(CmaEs(np.zeros(5), 0.5, seed=7), 3)
    state = json.loads(json.dumps(first.state_dict()))  # as a saved job would keep it
    resumed = _search(CmaEs.from_state(state), 5)
    assert resumed.generation == whole.generation == 8
    assert np.array_equal(resumed.mean, whole.mean)
    assert np.array_equal(resumed.ask(), whole.ask())


def test_population_size_follows_the_dimension_unless_given():
    assert CmaEs(np.zeros(14), 0.3).ask().shape == (11, 14)  # 4 + floor(3 ln 14)
    assert CmaEs(np.zeros(14), 0.3, lam=6).ask().shape == (6, 14)


def _packs(n: int = 6, rows: int = 4, dim: int = 8) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    return {f"v{i}": rng.normal(size=(rows, dim)).astype(np.float32) for i in range(n)}


def test_toward_directions_move_one_half_to_a_voice():
    packs = _packs(dim=256)
    origin = (packs["v0"] + packs["v1"]) / 2
    basis = StyleBasis.around(origin, packs, ["v2", "v3"], n_spread=0)
    assert basis.labels == ["timbre→v2", "timbre→v3", "prosody→v2", "prosody→v3"]
    assert np.array_equal(basis.pack(np.zeros(4)), origin.astype(np.float32))
    moved = basis.pack(np.array([1.0, 0.0, 0.0, 0.0]))
    assert np.allclose(moved[:, :128], packs["v2"][:, :128], atol=1e-6)  # timbre of v2
    assert np.array_equal(moved[:, 128:], origin[:, 128:])  # prosody untouched
    theta = np.array([0.2, -0.1, 0.4, 0.3])
    assert np.allclose(basis.rows(theta, [1, 3]), basis.pack(theta)[[1, 3]], atol=1e-6)
    assert basis.pack(theta).dtype == np.float32


def test_spread_directions_are_the_packs_principal_axes_at_their_scale():
    packs = _packs(n=40, rows=3, dim=5)
    stack = np.stack(list(packs.values())).astype(np.float64)
    comps = spread_directions(stack, 2)
    flat = stack.reshape(40, -1)
    for comp in comps:
        unit = comp.reshape(-1) / np.linalg.norm(comp)
        proj = (flat - flat.mean(axis=0)) @ unit
        assert np.linalg.norm(comp) == pytest.approx(proj.std(ddof=1), rel=1e-6)
    assert abs(comps[0].reshape(-1) @ comps[1].reshape(-1)) < 1e-6  # orthogonal

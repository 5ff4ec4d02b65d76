"""Our HiFT vocoder (v2, and v3's causal variant) against the reference's on the same random
weights, mel and noise: the waveform and the excitation source of whole and streamed calls."""

from __future__ import annotations

import copy

import pytest
import torch

from tests.runtime.parity_cases import (  # noqa: F401 (fixture)
    one_thread,
    our_hift,
    run_hift_case,
    yaml_text,
)

pytestmark = [pytest.mark.oracle, pytest.mark.usefixtures("one_thread")]

VERSIONS = (2, 3)
# random weights predict F0 near 0 Hz, all unvoiced (noise only); +150 Hz makes it voiced
F0_HZ = (0.0, 150.0)
JOBS = [(v, hz) for v in VERSIONS for hz in F0_HZ]
FRAMES = 40
# v2 streams by overlapping mel and reusing the previous call's source (cache_source);
# v3 by finalize=False (the last frames are look-ahead context)
CASES = {
    2: [{"start": 0, "end": FRAMES, "seed": 7, "cache": 0, "finalize": True},
        {"start": 24, "end": FRAMES, "seed": 8, "cache": 480 * 4, "finalize": True}],
    3: [{"start": 0, "end": FRAMES, "seed": 7, "cache": 0, "finalize": True},
        {"start": 0, "end": 30, "seed": 7, "cache": 0, "finalize": False}],
}


def mel(version: int) -> torch.Tensor:
    """A mel-like input: log-magnitudes around -4 with a voiced-looking structure."""
    gen = torch.Generator().manual_seed(200 + version)
    return torch.randn(1, 80, FRAMES, generator=gen) - 4.0


@pytest.fixture(scope="module")
def reference(oracle, request) -> dict[tuple[int, float], dict]:
    """The oracle's weights, waveforms, sources and noise for every job, from one process."""
    request.getfixturevalue("one_thread")  # before the oracle starts: it inherits the count
    jobs = [{"yaml_text": yaml_text(v), "seed": v, "mel": mel(v), "cases": CASES[v],
             "f0_hz": hz} for v, hz in JOBS]
    return dict(zip(JOBS, oracle("hift_parity.py", jobs=jobs)["results"], strict=True))


@pytest.mark.parametrize(("version", "f0_hz"), JOBS)
def test_hift_waveform_matches_the_reference(reference, version: int, f0_hz: float) -> None:
    ref = reference[(version, f0_hz)]
    hift = our_hift(yaml_text(version))
    hift.load_state_dict(ref["state"], strict=True)
    hift.eval()
    voiced = copy.deepcopy(hift.f0_predictor).double()(mel(version).double()) > 10
    assert bool(voiced.all()) if f0_hz else not bool(voiced.any()), "voicing is not as planned"
    if version == 3:  # our replay of the reference's construction-time draws
        phase, noise = hift.m_source.fixed_noise(ref["sine_noise"].size(1))
        assert torch.equal(phase, ref["phase_init"])
        assert torch.equal(noise[:, :ref["sine_noise"].size(1)], ref["sine_noise"])
    sources: list[torch.Tensor] = []
    for case, wave_ref, source_ref in zip(CASES[version], ref["waves"], ref["sources"],
                                          strict=True):
        wave, source = run_hift_case(hift, mel(version), case, sources)
        sources.append(source)
        assert source.shape == source_ref.shape, case
        assert (source - source_ref).abs().max().item() <= 1e-4, case
        assert wave.shape == wave_ref.shape, case
        assert (wave - wave_ref).abs().max().item() <= 1e-4, case
        assert wave_ref.abs().max().item() > 1e-3, "a silent waveform would match by accident"

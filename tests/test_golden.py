"""Reorganizing the code must not change a sample: fixed seeded requests (English, Mandarin,
mixed, clone, instruct with emotion and with dialect, inline tags) against the record in
tests/fixtures/golden.json, made before the Engine refactor (see tests/golden.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.golden import CASES, GOLDEN_FILE, cpu_key, portable_mismatches, render_all


def build_synthesize(tmp: Path):
    """``fields -> float32 samples`` through the app's synthesizer, fp32 vocoder; clone
    mode pinned to joe + adapter (``clone_space=False``), the path the record was made on
    (cloning v2 speaks through Kokoro when its voice space is measured)."""
    from cosyvoice.pipeline import SynthesisRequest
    from tests.conftest import local_services

    synth = local_services(tmp, vocoder_precision="fp32", clone_space=False).synth
    return lambda fields: synth.synthesize(SynthesisRequest(**fields)).wav


@pytest.fixture(scope="module")
def rendered(tmp_path_factory) -> dict[str, dict]:
    return render_all(build_synthesize(tmp_path_factory.mktemp("golden")))


@pytest.mark.slow
def test_every_case_keeps_its_length_and_envelope(rendered):
    golden = json.loads(GOLDEN_FILE.read_text())
    assert set(rendered) == set(CASES) == set(golden["samples"])
    problems = {name: portable_mismatches(fp, golden["samples"][name], golden["envelope"][name])
                for name, fp in rendered.items()}
    assert {k: v for k, v in problems.items() if v} == {}


@pytest.mark.parametrize("gain", [1.02, 0.98])
def test_the_portable_check_catches_a_two_percent_gain_change(gain):
    """The check used where no exact record exists fails a 2 % gain change on any case, and
    passes the record itself."""
    golden = json.loads(GOLDEN_FILE.read_text())
    for name in CASES:
        env, n = golden["envelope"][name], golden["samples"][name]
        assert portable_mismatches({"samples": n, "envelope": env}, n, env) == []
        scaled = {"samples": n, "envelope": [gain * e for e in env]}
        assert any("total RMS" in p for p in portable_mismatches(scaled, n, env)), name


@pytest.mark.slow
def test_samples_are_bit_identical_on_the_recording_cpu(rendered):
    record = json.loads(GOLDEN_FILE.read_text())["sha256"].get(cpu_key())
    if record is None:
        pytest.skip(f"no exact record for CPU key {cpu_key()} (length and envelope are "
                    "checked on every CPU)")
    assert {k: v["sha256"] for k, v in rendered.items()} == record

"""The offline engine's one-time work happens at load, and a restart reads it back: the
source profiles of its backends are measured once, kept in models/optimized keyed by what
the audio depends on, and a new engine (a restarted process) loads them without running a
model."""

from __future__ import annotations

import json

import pytest

from cosyvoice.state_files import DAMAGED
from tests.conftest import local_services


@pytest.mark.slow
def test_source_profiles_are_measured_once_and_read_back_after_a_restart(tmp_path):
    models = tmp_path / "models"
    first = local_services(tmp_path / "a", models_dir=models)
    first.engine.warm()
    files = sorted((models / "optimized").glob("source-profile-*.json"))
    assert [f.name.split("-")[2] for f in files] == ["acoustic_en", "acoustic_zh"]
    measured = {n: p.to_dict() for n, p in first.engine._source_profiles.items()}

    again = local_services(tmp_path / "b", models_dir=models)
    again.engine.warm()
    assert {m["name"]: m["state"] for m in again.manager.states()} == {
        m["name"]: "UNLOADED" for m in again.manager.states()}  # no model ran
    assert {n: p.to_dict() for n, p in again.engine._source_profiles.items()} == measured

    damage = ["{not json", json.dumps({**measured["acoustic_zh"], "formants_hz": "wide"})]
    for f, text in zip(files, damage, strict=True):  # measured again, not trusted
        f.write_text(text)
    third = local_services(tmp_path / "c", models_dir=models)
    third.engine.warm()
    assert json.loads(files[0].read_text()) == measured["acoustic_en"]
    assert json.loads(files[1].read_text()) == measured["acoustic_zh"]
    for f, text in zip(files, damage, strict=True):  # the damaged copies are kept aside
        [aside] = f.parent.glob(f.name + DAMAGED + "*")
        assert aside.read_text() == text

"""The bad-state catalogue: the real app started on folders whose state files are damaged in
every way we could think of, and damaged again while it runs.

Before the start: nine job folders (``job.json`` empty, ``{}``, wrong types, missing
fields, truncated, binary, 5,000 deep, a folder, a named pipe, an item file name that climbs
out), eight saved-voice folders (the same, plus no prompt, a bad blend), the lexicon with
wrong types, binary garbage in restarts.log and a folder where the pidfile goes. While it
runs: the lexicon, restarts.log and the admin token are damaged again in several ways, and
each is read by the route that reads it.

Each time the app is live and ready, every damaged file is set aside (renamed beside itself
with its bytes, listed in /health/ready, /metrics and the Models tab), and nothing else is
lost: the good job and its audio, the good voice, the lexicon's later entries, outputs/. A
second start on the same folders finds nothing new to set aside.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil

import httpx
import numpy as np
import pytest
import soundfile as sf

from cosyvoice.state_files import DAMAGED
from cosyvoice.voice.blend import Blend
from cosyvoice.voice.store import VoiceStore
from tests.conftest import RunningApp, get_json, start_app, stop_app

pytestmark = pytest.mark.slow

GOOD_JOB = "20260101-000000-aaaaaa"
DEEP = b"[" * 5000 + b"]" * 5000


def job_json(job_id: str, **changes) -> dict:
    job = {"id": job_id, "source": "a.txt", "state": "done", "created": 1.5e9,
           "updated": 1.5e9, "error": "", "options": {"gap_s": 0.5, "group_gap_s": 1.5},
           "runs": [], "resumed": 0, "sample_rate": 24000,
           "items": [{"text": "Hello.", "voice": "joe", "instruction": "", "where": "line 1",
                      "group": "joe", "filename": "0001.wav", "state": "done",
                      "seconds": 0.5, "error": "", "attempts": 1, "elapsed_s": 0.1}]}
    job.update(changes)
    return job


def _missing_state() -> dict:
    job = job_json("j-missing")
    del job["state"]
    return job


JOBS = {  # folder → what its job.json holds (bytes, or "dir" / "fifo")
    "j-empty": b"",
    "j-object": b"{}",
    "j-types": json.dumps(job_json("j-types", items="none", created="now")).encode(),
    "j-missing": json.dumps(_missing_state()).encode(),
    "j-truncated": json.dumps(job_json("j-truncated")).encode()[:70],
    "j-binary": bytes(range(256)),
    "j-deep": DEEP,
    "j-traversal": json.dumps(job_json("j-traversal", items=[{
        "text": "x", "filename": "../../../escaped.wav", "state": "pending"}])).encode(),
    "j-dir": "dir",
    "j-fifo": "fifo",
}
PROFILE_OK = {"name": "Broken", "created": 1.5e9, "transcript": "",
              "prompt": {"file": "prompt.wav", "sample_rate": 16000, "seconds": 3.0}}
VOICES = {  # folder → (profile.json contents or "dir" / None for absent, with prompt.wav)
    "v-empty": (b"", True),
    "v-object": (b"{}", True),
    "v-types": (json.dumps({"name": 3, "created": "yesterday"}).encode(), True),
    "v-binary": (bytes(range(256)), True),
    "v-deep": (DEEP, True),
    "v-dir": ("dir", True),
    "v-no-profile": (None, True),
    "v-no-prompt": (json.dumps({**PROFILE_OK, "profile": {}}).encode(), False),
    "v-profile-types": (json.dumps({**PROFILE_OK, "profile": {"f0_median_hz": "high"}})
                        .encode(), True),
    "v-bad-blend": (json.dumps({"name": "B", "created": 1.0,
                                "blend": {"weights": {"af_heart": "lots"}}}).encode(), False),
}
LEXICON_DAMAGE = {
    "empty": b"",
    "truncated": b'{"en": {"tomato": "T AH0 M',
    "binary": b"\x89PNG\r\n\x1a\n" + bytes(200),
    "wrong-types": b'{"zh": ["not", "a", "map"]}',
    "bad-entry": json.dumps({"en": {"tomato": "not arpabet!"}}).encode(),
    "deep": DEEP,
    "utf16": '{"en": {}}'.encode("utf-16"),
}


def place(path, content) -> None:
    """Put ``content`` at ``path``: bytes, a folder ("dir") or a named pipe ("fifo")."""
    if os.path.lexists(path):
        shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()
    if content == "dir":
        path.mkdir()
        (path / "inside.txt").write_text("kept")
    elif content == "fifo":
        os.mkfifo(path)
    else:
        path.write_bytes(content)


def copies_of(path) -> list:
    return sorted(path.parent.glob(path.name + DAMAGED + "*"))


def digest(folder) -> dict[str, str]:
    """Every regular file under ``folder`` (set-aside copies and pipes left out) → sha256."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*"))
            if p.is_file() and DAMAGED not in str(p.relative_to(folder))}


def ready_body(app: RunningApp) -> dict:
    assert app.proc.poll() is None, "the app exited"
    status, body = get_json(app.url + "/health/ready")
    assert status == 200 and body["ready"] is True, body
    return body


def listed(app: RunningApp) -> set[str]:
    return {i["path"] for i in ready_body(app)["set_aside"]}


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    work = tmp_path_factory.mktemp("bad-state")
    good = work / "jobs" / GOOD_JOB
    (good / "items").mkdir(parents=True)
    sf.write(good / "items" / "0001.wav", np.zeros(12000, np.float32), 24000)
    (good / "job.json").write_text(json.dumps(job_json(GOOD_JOB)))
    for name, content in JOBS.items():
        (work / "jobs" / name).mkdir()
        place(work / "jobs" / name / "job.json", content)
    store = VoiceStore(work / "voices")
    store.save_blend("Warm mix", Blend.from_weights({"af_heart": 2.0, "af_sky": 1.0}))
    for name, (profile, prompt) in VOICES.items():
        folder = work / "voices" / name
        folder.mkdir()
        if prompt:
            sf.write(folder / "prompt.wav", np.zeros(48000, np.float32), 16000)
        if profile is not None:
            place(folder / "profile.json", profile)
    (work / "lexicon.json").write_text('{"en": {"tomato": 3}}')
    (work / "run").mkdir()
    (work / "run" / "restarts.log").write_bytes(b"\xff\xfe1700000000 cron -\n\x00\x00")
    (work / "run" / "app.pid").mkdir()
    (work / "outputs").mkdir()
    sf.write(work / "outputs" / "earlier.wav", np.zeros(2400, np.float32), 24000)
    return work


@pytest.fixture(scope="module")
def app(workdir):
    started = start_app(workdir)
    yield started
    stop_app(started)


def test_the_app_starts_ready_with_every_damaged_file_set_aside(app, workdir):
    jobs, voices = workdir / "jobs", workdir / "voices"
    httpx.get(app.url + "/api/v1/voices", timeout=30).raise_for_status()
    expected = {str(jobs / name / "job.json") for name in JOBS}
    expected |= {str(voices / name) for name in VOICES}
    expected |= {str(workdir / "run" / "restarts.log"), str(workdir / "run" / "app.pid")}
    assert expected <= listed(app)
    for name, content in JOBS.items():
        [copy] = copies_of(jobs / name / "job.json")
        if isinstance(content, bytes):
            assert copy.read_bytes() == content  # kept whole
    for name in VOICES:
        [copy] = copies_of(voices / name)
        assert copy.is_dir()
    assert (copies_of(jobs / "j-dir" / "job.json")[0] / "inside.txt").read_text() == "kept"
    assert not (workdir / "escaped.wav").exists()


def test_the_good_job_voice_and_outputs_are_intact(app, workdir):
    jobs = httpx.get(app.url + "/api/v1/jobs", timeout=30)
    assert jobs.status_code == 200
    assert [j["id"] for j in jobs.json()["jobs"]] == [GOOD_JOB]
    job = httpx.get(f"{app.url}/api/v1/jobs/{GOOD_JOB}", timeout=30).json()
    assert (job["state"], job["done"], job["total"]) == ("done", 1, 1)
    assert httpx.get(f"{app.url}/api/v1/jobs/{GOOD_JOB}/result", timeout=30).status_code == 200
    voices = httpx.get(app.url + "/api/v1/voices", timeout=30).json()["voices"]
    saved = [v["name"] for v in voices if v.get("kind") in ("saved", "blend")]
    assert saved == ["Warm mix"]
    assert (workdir / "outputs" / "earlier.wav").is_file()
    metrics = httpx.get(app.url + "/metrics", timeout=30).text
    count = next(float(line.split()[-1]) for line in metrics.splitlines()
                 if line.startswith("cosyvoice_files_set_aside "))
    assert count >= len(JOBS) + len(VOICES) + 2


def test_the_models_tab_lists_what_was_set_aside(app):
    config = httpx.get(app.url + "/config", timeout=30).json()
    texts = [c.get("props", {}).get("value") for c in config["components"]
             if c.get("props", {}).get("elem_id") == "system-readings"]
    assert texts and "Damaged files set aside" in texts[0] and "restarts.log" in texts[0]


def test_a_damaged_lexicon_is_set_aside_and_writes_never_overwrite_it(app, workdir):
    path = workdir / "lexicon.json"
    url = app.url + "/api/v1/lexicon"
    for kind, data in [("at-start", None), *LEXICON_DAMAGE.items(), ("dir", "dir"),
                       ("fifo", "fifo")]:
        before = {p.name for p in copies_of(path)} if data is not None else set()
        if data is not None:
            place(path, data)
        r = httpx.get(url, timeout=30)
        assert r.status_code == 200 and r.json()["entries"] == [], kind
        [new] = [p for p in copies_of(path) if p.name not in before]
        assert str(path) in listed(app)
        kept = new.read_bytes() if new.is_file() and isinstance(data, bytes) else None
        if kept is not None:
            assert kept == data
        r = httpx.post(url, json={"word": "tomato", "reading": "T AH0 M AA1 T OW2"},
                       timeout=30)
        assert r.status_code == 201, (kind, r.text)
        assert httpx.delete(url + "/nothere", timeout=30).status_code == 404
        r = httpx.put(url, json={"en": {"tomato": "T AH0 M EY1 T OW2", "Nguyen": "W IH1 N"}},
                      timeout=30)
        assert r.status_code == 200, (kind, r.text)
        assert {e["word"] for e in httpx.get(url, timeout=30).json()["entries"]} == {
            "tomato", "Nguyen"}
        if kept is not None:
            assert new.read_bytes() == kept  # the writes made a fresh file beside it
    ready_body(app)


def test_a_damaged_restart_log_and_admin_token_are_set_aside(app, workdir):
    log, token = workdir / "run" / "restarts.log", workdir / "run" / "admin_token"
    for data in (bytes(range(256)), "dir", "fifo"):
        place(log, data)
        assert httpx.get(app.url + "/metrics", timeout=30).status_code == 200
        assert not os.path.lexists(log) and str(log) in listed(app)
    place(token, "dir")  # read on the first proxied admin request (then kept in memory)
    r = httpx.post(app.url + "/admin/reload", json={}, timeout=30,
                   headers={"X-Forwarded-For": "203.0.113.9", "X-Admin-Token": "wrong"})
    assert r.status_code == 403, r.text
    assert token.is_file() and len(token.read_text().strip()) >= 20  # a new token
    assert str(token) in listed(app) and (copies_of(token)[0] / "inside.txt").is_file()
    ready_body(app)


@pytest.mark.parametrize("data", [b"", b"\x00\xff\xfe", b"two words\n", b"x" * 300, "dir",
                                  "fifo"])
def test_a_damaged_admin_token_file_is_set_aside_and_replaced(tmp_path, data):
    from cosyvoice.server.admin_auth import resolve_admin_token
    from cosyvoice.settings import Settings

    settings = Settings(pidfile=tmp_path / "app.pid")
    place(tmp_path / "admin_token", data)
    token = resolve_admin_token(settings)
    assert len(token) >= 20 and (tmp_path / "admin_token").read_text().strip() == token
    [copy] = copies_of(tmp_path / "admin_token")
    if isinstance(data, bytes):
        assert copy.read_bytes() == data
    assert resolve_admin_token(settings) == token  # the new file is read back as is


def test_damaged_voices_at_run_time_and_a_second_start(app, workdir):
    voices = workdir / "voices"
    for name, (profile, prompt) in list(VOICES.items())[:4]:
        folder = voices / f"{name}-later"
        folder.mkdir()
        if prompt:
            (folder / "prompt.wav").write_bytes(b"RIFF")
        place(folder / "profile.json", profile)
        r = httpx.get(app.url + "/api/v1/voices", timeout=30)
        assert r.status_code == 200 and str(folder) in listed(app)
    state = {k: digest(workdir / k) for k in ("jobs", "voices", "outputs")}
    lexicon = (workdir / "lexicon.json").read_bytes()
    stop_app(app)
    again = start_app(workdir)
    try:
        assert ready_body(again)["set_aside"] == []  # the copies are not read again
        assert [j["id"] for j in httpx.get(again.url + "/api/v1/jobs", timeout=30)
                .json()["jobs"]] == [GOOD_JOB]
        assert {e["word"] for e in httpx.get(again.url + "/api/v1/lexicon", timeout=30)
                .json()["entries"]} == {"tomato", "Nguyen"}
    finally:
        stop_app(again)
    assert {k: digest(workdir / k) for k in state} == state  # nothing lost or rewritten
    assert (workdir / "lexicon.json").read_bytes() == lexicon
    leftovers = [p for p in workdir.rglob("*") if p.name.startswith((".partial-", ".tmp-"))]
    assert leftovers == []

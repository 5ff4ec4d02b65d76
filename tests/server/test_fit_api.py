"""Fitted voices over real HTTP on the real app (a tiny search: 2 candidates a generation,
a 5 s budget, so one generation): POST /api/v1/voices/fit → 202 and a job whose progress the
jobs routes show; the voice (kind ``fitted``) then speaks through the REST and OpenAI
routes, a dialogue script and a batch job, and travels through export and import. The
catalogue of bad fit and import requests: each a 4xx in the one error shape, the app ready
after them."""

from __future__ import annotations

import io
import json
import time
import zipfile

import httpx
import numpy as np
import pytest
import soundfile as sf

from tests.conftest import start_app, stop_app

pytestmark = pytest.mark.slow
NAME = "cate-fit"


@pytest.fixture(scope="module")
def fit_app(tmp_path_factory):
    app = start_app(tmp_path_factory.mktemp("fit-app"), "--fit-popsize", "2",
                    "--fit-budget-s", "5")
    yield app
    stop_app(app)


def fit(url: str, name: str, prompt, **fields) -> httpx.Response:
    with open(prompt, "rb") as f:
        return httpx.post(url + "/api/v1/voices/fit", data={"name": name, **fields},
                          files={"prompt": ("prompt.mp3", f, "audio/mpeg")}, timeout=120)


def wait_job(url: str, job_id: str, until=lambda j: j["state"] not in ("queued", "running"),
             timeout: float = 600) -> dict:
    deadline = time.time() + timeout
    while time.time() < deadline:
        job = httpx.get(f"{url}/api/v1/jobs/{job_id}", timeout=30).json()
        if until(job):
            return job
        time.sleep(0.5)
    raise AssertionError(f"job {job_id} did not get there in {timeout} s: {job}")


def speech(data: bytes) -> tuple[np.ndarray, int]:
    wav, sr = sf.read(io.BytesIO(data), dtype="float32")
    assert len(wav) > 0.5 * sr and float(np.abs(wav).max()) > 0.05
    return wav, sr


@pytest.fixture(scope="module")
def fitted(fit_app, real_female_prompt) -> dict:
    r = fit(fit_app.url, NAME, real_female_prompt)
    assert r.status_code == 202, r.text
    job = r.json()
    assert (job["kind"], job["state"], job["fit"]["name"]) == ("fit", "queued", NAME)
    assert job["fit"]["budget_s"] == 5 and job["eta_s"] == 5
    progress = []
    done = wait_job(fit_app.url, job["id"], until=lambda j: progress.append(j) or j["state"]
                    not in ("queued", "running"))
    assert done["state"] == "done", done
    assert any(0 < j["progress"] < 1 for j in progress if j["state"] == "running")
    return done


def test_a_fit_job_reports_and_ends_as_a_voice(fit_app, fitted):
    assert fitted["progress"] == 1.0 and fitted["eta_s"] == 0 and fitted["runs"] == 1
    assert fitted["fit"]["voice"] == NAME
    scores = fitted["fit"]["result"]["scores"]
    assert set(scores) == {"before", "after"} and scores["after"]["sim"] >= 0.3
    voices = httpx.get(fit_app.url + "/api/v1/voices", timeout=30).json()["voices"]
    mine = next(v for v in voices if v["name"] == NAME)
    assert mine["kind"] == "fitted" and mine["fit"]["generations"] >= 1
    assert len(mine["fit"]["prompt_sha256"]) == 64 and mine["fit"]["budget_s"] == 5
    assert set(mine["fit"]["encoders"]) == {"kokoro", "ge2e", "space"}
    r = httpx.get(f"{fit_app.url}/api/v1/jobs/{fitted['id']}/result", timeout=60)
    names = set(zipfile.ZipFile(io.BytesIO(r.content)).namelist())
    assert {"before.wav", "after.wav", "fit.json", "job.json"} <= names
    engine = httpx.get(fit_app.url + "/api/v1/engine", timeout=30).json()
    assert engine["voice_fitting"] is True and NAME in engine["voices_saved"]


def test_the_fitted_voice_speaks_on_every_surface(fit_app, fitted):
    url = fit_app.url
    r = httpx.post(url + "/api/v1/tts", json={"text": "A fitted voice, over REST.",
                                              "voice": NAME, "format": "wav"}, timeout=120)
    assert r.status_code == 200, r.text
    rest, sr = speech(r.content)
    r = httpx.post(url + "/v1/audio/speech", json={"input": "A fitted voice, over REST.",
                                                   "voice": NAME, "response_format": "wav"},
                   timeout=120)
    assert r.status_code == 200, r.text
    openai, _ = speech(r.content)
    assert np.allclose(openai, rest, atol=1e-3)  # one voice, one rendering
    start = fitted["fit"]["result"]["start_blend"]
    r = httpx.post(url + "/api/v1/tts", json={"text": "A fitted voice, over REST.",
                                              "voice": start, "format": "wav"}, timeout=120)
    blend, _ = speech(r.content)
    # the fitted pack speaks, not the blend it started from
    assert len(blend) != len(rest) or not np.allclose(blend, rest, atol=1e-3)
    r = httpx.post(url + "/api/v1/dialogue", json={
        "script": f"[joe] Who is there?\n[{NAME}] The fitted voice.", "response": "json"},
        timeout=180)
    assert r.status_code == 200, r.text
    assert [line["voice"] for line in r.json()["lines"]] == ["joe", NAME]
    r = httpx.post(url + "/api/v1/jobs", json={
        "source_name": "lines.csv", "voice": NAME,
        "content": "text\nThe first line of a batch.\nThe second line.\n"}, timeout=60)
    assert r.status_code == 202, r.text
    job = wait_job(url, r.json()["id"])
    assert (job["state"], job["done"]) == ("done", 2), job
    assert {it["voice"] for it in job["items"]} == {NAME}


def test_export_and_import_carry_the_voice(fit_app, fitted):
    url = fit_app.url
    r = httpx.get(f"{url}/api/v1/voices/{NAME}/export", timeout=60)
    assert r.status_code == 200 and r.headers["content-type"] == "application/zip"
    assert r.headers["content-disposition"].endswith('.cvvoice"')
    data = r.content
    r = httpx.post(url + "/api/v1/voices/import", data={"name": "cate-copy"},
                   files={"file": ("v.cvvoice", data, "application/zip")}, timeout=60)
    assert r.status_code == 201, r.text
    assert r.json()["kind"] == "fitted" and r.json()["fit"] == next(
        v for v in httpx.get(url + "/api/v1/voices", timeout=30).json()["voices"]
        if v["name"] == NAME)["fit"]
    a = httpx.post(url + "/api/v1/tts", json={"text": "Same voice.", "voice": NAME}, timeout=120)
    b = httpx.post(url + "/api/v1/tts", json={"text": "Same voice.", "voice": "cate-copy"},
                   timeout=120)
    assert a.content[44:] == b.content[44:]  # the same pack speaks (headers aside)
    r = httpx.post(url + "/api/v1/voices/import",
                   files={"file": ("v.cvvoice", data, "application/zip")}, timeout=60)
    assert r.status_code == 409 and "already saved" in r.json()["error"]["message"]


def _two_voices(tmp_path, female, male):
    import soxr

    f, sr = sf.read(female, dtype="float32")
    m, msr = sf.read(male, dtype="float32")
    path = tmp_path / "two.wav"
    sf.write(path, np.concatenate([f[:int(3.5 * sr)], np.zeros(int(0.3 * sr), np.float32),
                                   soxr.resample(m, msr, sr)]), sr)
    return path


def test_bad_fit_and_import_requests_are_4xx_in_one_shape(fit_app, fitted, tmp_path,
                                                          real_female_prompt, real_male_prompt):
    url = fit_app.url
    short = tmp_path / "short.wav"
    wav, sr = sf.read(real_female_prompt, dtype="float32")
    sf.write(short, wav[:sr], sr)
    two = _two_voices(tmp_path, real_female_prompt, real_male_prompt)
    cases = [
        (fit(url, "", real_female_prompt), 422, "give the voice a name"),
        (fit(url, "../x", real_female_prompt), 422, "not allowed"),
        (fit(url, "joe", real_female_prompt), 422, "built-in"),
        (fit(url, NAME, real_female_prompt), 409, "already saved"),
        (fit(url, "b1", real_female_prompt, budget="soon"), 422, "budget must be a number"),
        (fit(url, "b2", real_female_prompt, budget="1"), 422, "from 5 to 1800"),
        (fit(url, "b3", real_female_prompt, budget="1e9"), 422, "from 5 to 1800"),
        (fit(url, "b4", real_female_prompt, budget="nan"), 422, "from 5 to 1800"),
        (fit(url, "l1", real_female_prompt, lang="fr"), 422, "lang must be one of en, zh"),
        (fit(url, "s1", short), 422, "3–30 s"),
        (fit(url, "t1", two), 422, "more than one voice"),
        (httpx.post(url + "/api/v1/voices/fit", files={"name": (None, "np")}, timeout=30), 422,
         "attach the prompt recording"),
        (httpx.post(url + "/api/v1/voices/fit", json={"name": "x"}, timeout=30), 415,
         "multipart"),
        (httpx.post(url + "/api/v1/voices/import", files={
            "file": ("v.cvvoice", b"not a zip", "application/zip")}, timeout=30), 422,
         "not a voice file"),
        (httpx.post(url + "/api/v1/voices/import", files={"name": (None, "x")}, timeout=30),
         422,
         "attach the voice file"),
        (httpx.post(url + "/api/v1/voices/import", files={
            "file": ("v.cvvoice", b"\0" * (17 * 2**20), "application/zip")}, timeout=60),
         413, "16 MB"),
        (httpx.get(url + "/api/v1/voices/nobody/export", timeout=30), 404, "no saved voice"),
        (httpx.get(url + "/api/v1/voices/joe/export", timeout=30), 422, "built-in"),
    ]
    for r, status, phrase in cases:
        body = r.json()
        assert set(body) == {"error"} and set(body["error"]) == {"message", "type", "code"}
        assert (r.status_code, body["error"]["code"]) == (status, status), (phrase, r.text)
        assert phrase in body["error"]["message"], (phrase, body)
    jobs = httpx.get(url + "/api/v1/jobs", timeout=30).json()["jobs"]
    assert [j["fit"]["name"] for j in jobs if j["kind"] == "fit"] == [NAME]  # none queued
    assert httpx.get(url + "/health/ready", timeout=30).json()["ready"] is True


def test_a_fit_survives_a_restart_and_fits_queue_one_at_a_time(fit_app, real_female_prompt):
    """Two fits at once: the second waits for the first (one runner). A restart (SIGTERM:
    drain) stops the running fit within a text, dropping its generation in flight; the next
    start resumes it from its saved state (generation 1 is not done again); cancel ends it,
    no voice. The module's app is the first process (this test stops it: it comes last)."""
    app, workdir = fit_app, fit_app.workdir
    try:
        first = fit(app.url, "long-one", real_female_prompt, budget="900").json()
        second = fit(app.url, "long-two", real_female_prompt, budget="900").json()
        at_one = wait_job(app.url, first["id"], lambda j: j["fit"]["progress"].get(
            "generation", 0) >= 1)
        assert httpx.get(f"{app.url}/api/v1/jobs/{second['id']}",
                         timeout=30).json()["state"] == "queued"
        state_file = workdir / "jobs" / first["id"] / "fit_state.json"
        t0 = time.monotonic()
        stop_app(app)
        assert time.monotonic() - t0 < 15  # the drain waits for a text, not the whole fit
        saved = json.loads(state_file.read_text())
        assert saved["cma"]["generation"] >= at_one["fit"]["progress"]["generation"]
    finally:
        stop_app(app)
    app = start_app(workdir, "--fit-popsize", "2")
    try:
        gen = saved["cma"]["generation"]
        job = wait_job(app.url, first["id"], lambda j: j["fit"]["progress"].get(
            "generation", 0) > gen)
        assert (job["runs"], job["resumed"]) == (2, 1)
        now = json.loads(state_file.read_text())
        assert now["history"][:gen + 1] == saved["history"]  # kept, not redone
        assert httpx.get(f"{app.url}/api/v1/jobs/{second['id']}",
                         timeout=30).json()["state"] == "queued"
        assert httpx.delete(f"{app.url}/api/v1/jobs/{first['id']}",
                            timeout=30).json()["state"] == "cancelled"
        wait_job(app.url, second["id"], lambda j: j["state"] == "running")
        httpx.delete(f"{app.url}/api/v1/jobs/{second['id']}", timeout=30)
        wait_job(app.url, second["id"], lambda j: j["state"] == "cancelled")
        names = [v["name"] for v in httpx.get(app.url + "/api/v1/voices",
                                                timeout=30).json()["voices"]]
        assert "long-one" not in names and "long-two" not in names
        assert httpx.get(app.url + "/health/ready", timeout=30).json()["ready"] is True
    finally:
        stop_app(app)

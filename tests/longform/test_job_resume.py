"""A batch job survives a SIGKILL: a real app process renders a job, is killed mid-job,
starts again on the same folders, and finishes the job without redoing the items that were
finished before the kill (same file mtimes, one attempt each). Then the result zip: every
item, joined.wav (items + gaps), one subtitle cue per item."""

from __future__ import annotations

import io
import json
import time
import zipfile

import pytest
import soundfile as sf

from cosyvoice.cli.jobs import multipart, request
from tests.conftest import start_app, stop_app

pytestmark = pytest.mark.slow

ITEMS = 10


def job_state(url: str, job_id: str) -> dict:
    return json.loads(request(url, "GET", f"/api/v1/jobs/{job_id}")[0])


def wait_for(url: str, job_id: str, done: int | None = None, timeout: float = 400) -> dict:
    deadline = time.time() + timeout
    while time.time() < deadline:
        job = job_state(url, job_id)
        if (done is not None and job["done"] >= done) or job["state"] not in ("queued",
                                                                              "running"):
            return job
        time.sleep(0.3)
    raise AssertionError(f"job {job_id} did not get there in {timeout} s: {job}")


def test_job_resumes_after_sigkill_without_redoing_finished_items(tmp_path):
    rows = "\n".join(f'"Item {i} of the batch, read aloud slowly and clearly.",joe,item{i:02d}'
                     for i in range(ITEMS))
    body, ctype = multipart({"gap_s": "0.3", "group_gap_s": "1.0"}, "lines.csv",
                            f"text,voice,filename\n{rows}\n".encode())
    app = start_app(tmp_path)
    try:
        job = json.loads(request(app.url, "POST", "/api/v1/jobs", body,
                                 {"Content-Type": ctype})[0])
        job_id = job["id"]
        assert (job["state"], job["total"]) == ("queued", ITEMS)
        wait_for(app.url, job_id, done=3)
        app.proc.kill()  # SIGKILL: no drain, no clean-up
        app.proc.wait(30)
    finally:
        stop_app(app)
    folder = tmp_path / "jobs" / job_id
    before = json.loads((folder / "job.json").read_text())
    finished = {it["filename"]: (folder / "items" / it["filename"]).stat().st_mtime_ns
                for it in before["items"] if it["state"] == "done"}
    assert 3 <= len(finished) < ITEMS, "the kill should land mid-job"

    app = start_app(tmp_path)
    try:
        job = wait_for(app.url, job_id)
        assert (job["state"], job["done"], job["failed"]) == ("done", ITEMS, 0)
        assert (job["runs"], job["resumed"]) == (2, 1)
        items = {it["filename"]: it for it in job_state(app.url, job_id)["items"]}
        for name, mtime in finished.items():  # not redone
            assert (folder / "items" / name).stat().st_mtime_ns == mtime
            assert items[name]["attempts"] == 1
        redone = sum(it["attempts"] for it in items.values()) - ITEMS
        assert redone <= 1  # at most the item in flight at the kill
        data, _ = request(app.url, "GET", f"/api/v1/jobs/{job_id}/result")
    finally:
        stop_app(app)
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        names = set(z.namelist())
        assert {f"items/item{i:02d}.wav" for i in range(ITEMS)} <= names
        assert {"joined.wav", "subtitles.srt", "subtitles.vtt", "job.json"} <= names
        joined, sr = sf.read(io.BytesIO(z.read("joined.wav")))
        lengths = [sf.info(io.BytesIO(z.read(f"items/item{i:02d}.wav"))).frames
                   for i in range(ITEMS)]
        srt = z.read("subtitles.srt").decode()
    assert len(joined) == sum(lengths) + (ITEMS - 1) * round(0.3 * sr)
    assert srt.count(" --> ") == ITEMS and "Item 9 of the batch" in srt

"""One text-cleaning path for every surface's subtitles: a line with raw control characters
(ESC, NUL, BEL, DEL …), markup and an inline pause gets the same cue text from a single
request (``timestamps``), a dialogue (its SRT and per-line table) and a batch job (the
result's SRT and VTT) — the text as spoken, with none of those characters left."""

from __future__ import annotations

import io
import json
import re
import time
import zipfile

import httpx
import pytest

from cosyvoice.frontend.plan import spoken_text
from cosyvoice.longform.items import cues_for

RAW = "Hello\x1b there\x07 my\x00 <b>good</b>\x7f friend\x08."
CLEAN = "Hello there my good friend."
CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def cue_texts(srt: str) -> list[str]:
    """The text lines of an SRT (or VTT) document, timing and numbering lines left out."""
    return [ln for ln in srt.splitlines()
            if ln.strip() and "-->" not in ln and not ln.isdigit() and ln != "WEBVTT"]


def test_spoken_text_is_what_a_single_request_speaks():
    assert spoken_text(RAW) == CLEAN
    assert spoken_text("Wait [pause:300ms] for it.\x1b") == "Wait for it."
    [cue] = cues_for(["One\x00\nTwo\x07."], [100], [], 100, labels=["joe"])
    assert cue.text == "joe: One Two."


@pytest.mark.slow
def test_every_surface_writes_the_same_clean_cue(running_app):
    url = running_app.url
    single = httpx.post(url + "/api/v1/tts", json={"text": RAW, "voice": "joe",
                                                   "timestamps": True}, timeout=120)
    assert single.status_code == 200, single.text
    assert cue_texts(single.json()["srt"]) == [CLEAN]

    dialogue = httpx.post(url + "/api/v1/dialogue", json={
        "script": f"[joe] {RAW}\n[joe] Second\x1b line.", "response": "json"}, timeout=120)
    assert dialogue.status_code == 200, dialogue.text
    body = dialogue.json()
    assert cue_texts(body["srt"]) == [f"joe: {CLEAN}", "joe: Second line."]
    assert [r["text"] for r in body["lines"]] == [CLEAN, "Second line."]
    assert not CONTROL.search(body["vtt"])

    csv = "text,voice\n" + "\n".join(f'"{t}",joe' for t in (RAW, "Second\x1b line."))
    job = httpx.post(url + "/api/v1/jobs", json={"source_name": "lines.csv", "content": csv},
                     timeout=60)
    assert job.status_code == 202, job.text
    job_id = job.json()["id"]
    deadline = time.time() + 300
    while (state := httpx.get(f"{url}/api/v1/jobs/{job_id}", timeout=30).json())["state"] \
            in ("queued", "running") and time.time() < deadline:
        time.sleep(0.5)
    assert state["state"] == "done", state
    data = httpx.get(f"{url}/api/v1/jobs/{job_id}/result", timeout=60).content
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        srt, vtt = z.read("subtitles.srt").decode(), z.read("subtitles.vtt").decode()
        assert json.loads(z.read("job.json"))["items"][0]["text"] == RAW  # the input is kept
    assert cue_texts(srt) == [CLEAN, "Second line."] == cue_texts(vtt)
    assert not CONTROL.search(srt + vtt)

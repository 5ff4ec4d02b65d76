"""The long-form routes on the real app: POST /api/v1/dialogue (audio and JSON answers,
422s naming the line) and the job routes' refusals (a bad row named, unknown job, cancel)."""

from __future__ import annotations

import base64
import io
import json

import pytest
import soundfile as sf

from cosyvoice.cli.jobs import ServerError, multipart, request

pytestmark = pytest.mark.slow


def post_json(url: str, path: str, body: dict) -> tuple[bytes, dict]:
    return request(url, "POST", path, json.dumps(body).encode(),
                   {"Content-Type": "application/json"})


def error_of(call) -> tuple[int, str]:
    with pytest.raises(ServerError) as e:
        call()
    return e.value.status, str(e.value)


def test_dialogue_audio_and_json(running_app):
    script = "[joe] Hello there.\n[af_heart|happy] Hi!\n[zf_xiaoxiao] 你好。"
    data, headers = post_json(running_app.url, "/api/v1/dialogue",
                              {"script": script, "gap_s": 0.1, "speaker_gap_s": 0.5})
    wav, sr = sf.read(io.BytesIO(data))
    lines = [p.split(":") for p in headers["X-Dialogue-Lines"].split(",")]
    assert [int(n) for n, _ in lines] == [1, 2, 3]
    assert len(wav) / sr == pytest.approx(sum(float(s) for _, s in lines) + 1.0, abs=0.01)
    data, _ = post_json(running_app.url, "/api/v1/dialogue",
                        {"script": script, "response": "json", "format": "flac"})
    body = json.loads(data)
    assert [r["voice"] for r in body["lines"]] == ["joe", "af_heart", "zf_xiaoxiao"]
    assert body["srt"].count(" --> ") == 3 and body["vtt"].startswith("WEBVTT")
    flac, _ = sf.read(io.BytesIO(base64.b64decode(body["audio_base64"])))
    assert len(flac) / body["sample_rate"] == pytest.approx(body["duration_s"], abs=0.01)


@pytest.mark.parametrize("script, message", [
    ("[joe] Hi.\n[ghost] Boo.", "line 2: unknown voice 'ghost'"),
    ("[joe] Hi.\n\n[joe|] ok\n[joe Hi.", "line 4: the speaker tag is not closed"),
    ("Hi.", "line 1: no speaker yet"),
    ("[joe] Hi.\n[joe] [pause:abc] there", "line 2: cannot read the pause"),
])
def test_dialogue_422_names_the_line(running_app, script, message):
    status, text = error_of(lambda: post_json(running_app.url, "/api/v1/dialogue",
                                              {"script": script}))
    assert status == 422 and text.startswith(message)


def test_job_refusals(running_app):
    body, ctype = multipart({}, "lines.csv", b"text,voice\nGood.,joe\nBad.,ghost\n")
    status, text = error_of(lambda: request(running_app.url, "POST", "/api/v1/jobs", body,
                                            {"Content-Type": ctype}))
    assert status == 422 and text.startswith("row 3: unknown voice 'ghost'")
    status, text = error_of(lambda: post_json(running_app.url, "/api/v1/jobs",
                                              {"source_name": "a.pdf", "content": "x"}))
    assert status == 422 and "a job is a .txt or .md" in text
    status, _ = error_of(lambda: request(running_app.url, "GET", "/api/v1/jobs/nope"))
    assert status == 404


def test_job_cancel_keeps_it_cancelled(running_app):
    text = "\n".join(f"Line {i} of a job to cancel." for i in range(30))
    data, _ = post_json(running_app.url, "/api/v1/jobs",
                        {"source_name": "cancel.txt", "content": text, "voice": "joe"})
    job_id = json.loads(data)["id"]
    cancelled = json.loads(request(running_app.url, "DELETE", f"/api/v1/jobs/{job_id}")[0])
    assert cancelled["state"] == "cancelled"
    status, _ = error_of(lambda: request(running_app.url, "DELETE", f"/api/v1/jobs/{job_id}"))
    assert status == 409
    listed = json.loads(request(running_app.url, "GET", "/api/v1/jobs")[0])["jobs"]
    assert any(j["id"] == job_id and j["state"] == "cancelled" for j in listed)

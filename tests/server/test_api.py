"""REST and OpenAI-compatible endpoints over real HTTP against the running app."""

from __future__ import annotations

import io
import time

import httpx
import numpy as np
import pytest
import soundfile as sf

pytestmark = pytest.mark.slow

TEXT = "Streaming speech arrives sentence by sentence. The second sentence follows. " \
       "And here is a third one, to make the stream long enough to measure."


def _wav(data: bytes) -> tuple[np.ndarray, int]:
    wav, sr = sf.read(io.BytesIO(data), dtype="float32")
    return wav, sr


def test_tts_json_wav(running_app):
    r = httpx.post(running_app.url + "/api/v1/tts", json={"text": "Hello from the API."},
                   timeout=120)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"] == "audio/wav"
    wav, sr = _wav(r.content)
    assert sr == 22050 and 0.8 < len(wav) / sr < 4.0
    assert float(r.headers["X-Audio-Duration"]) == pytest.approx(len(wav) / sr, abs=0.01)


@pytest.mark.parametrize("fmt, magic", [("flac", b"fLaC"), ("mp3", None), ("opus", b"OggS")])
def test_tts_formats(running_app, fmt, magic):
    r = httpx.post(running_app.url + "/api/v1/tts", json={"text": "Format check.",
                                                          "format": fmt}, timeout=120)
    assert r.status_code == 200, r.text
    if magic:
        assert r.content.startswith(magic)
    wav, sr = _wav(r.content)
    assert len(wav) / sr > 0.4


def test_tts_multipart_clone(running_app, real_female_prompt):
    with open(real_female_prompt, "rb") as f:
        r = httpx.post(running_app.url + "/api/v1/tts",
                       data={"text": "Cloned through multipart.", "mode": "clone"},
                       files={"prompt": ("prompt.mp3", f, "audio/mpeg")}, timeout=120)
    assert r.status_code == 200, r.text
    wav, sr = _wav(r.content)
    assert np.sqrt(np.mean(wav**2)) > 0.02
    assert not list((running_app.workdir / "cache" / "uploads").glob("prompt-*"))


def test_streaming_chunks_arrive_before_the_end(running_app):
    t0 = time.perf_counter()
    arrivals, data = [], b""
    with httpx.stream("POST", running_app.url + "/api/v1/tts",
                      json={"text": TEXT, "stream": True, "format": "wav"}, timeout=120) as r:
        assert r.status_code == 200
        for chunk in r.iter_bytes():
            arrivals.append(time.perf_counter() - t0)
            data += chunk
    total = time.perf_counter() - t0
    assert data[:4] == b"RIFF"
    pcm = np.frombuffer(data[44:], dtype="<i2")
    assert len(pcm) / 22050 > 3.0
    # The header and first sentence come well before the last sentence is synthesized.
    assert arrivals[0] < 0.8 * total


def test_openai_client_speech(running_app, tmp_path):
    from openai import OpenAI

    client = OpenAI(base_url=running_app.url + "/v1", api_key="not-needed")
    out = tmp_path / "speech.wav"
    with client.audio.speech.with_streaming_response.create(
            model="tts-1", voice="alloy", input="The official client works unchanged.",
            response_format="wav") as resp:
        resp.stream_to_file(out)
    wav, sr = sf.read(out, dtype="float32")
    assert len(wav) / sr > 1.0
    assert any(m.id == "tts-1" for m in client.models.list().data)


@pytest.mark.parametrize("body, status, phrase", [
    ({"text": ""}, 422, "type some text"),
    ({"text": "x" * 5000}, 422, "limit"),
    ({"text": "hi", "speed": 9}, 422, "speed"),
    ({"text": "hi", "seed": -1}, 422, "seed"),
    ({"text": "hi", "format": "aac"}, 422, "format"),
    ({"text": "hi", "mode": "clone"}, 422, "needs a prompt"),
    ({"nope": 1}, 422, "text"),
])
def test_errors_are_json_with_a_message(running_app, body, status, phrase):
    r = httpx.post(running_app.url + "/api/v1/tts", json=body, timeout=60)
    assert r.status_code == status, r.text
    assert phrase in r.json()["error"]["message"].lower()
    assert running_app.ready()


def test_oversized_upload_is_413(running_app):
    blob = b"\0" * (21 * 2**20)
    r = httpx.post(running_app.url + "/api/v1/tts", data={"text": "hi", "mode": "clone"},
                   files={"prompt": ("big.wav", blob, "audio/wav")}, timeout=60)
    assert r.status_code == 413
    assert "limit" in r.json()["error"]["message"]


def test_openapi_schema_lists_endpoints(running_app):
    paths = httpx.get(running_app.url + "/openapi.json", timeout=30).json()["paths"]
    for p in ("/api/v1/tts", "/v1/audio/speech", "/v1/models", "/health/ready"):
        assert p in paths

"""Saved voices and model/admin routes over real HTTP against the running app."""

from __future__ import annotations

import io
import threading
import time

import httpx
import pytest
import soundfile as sf

from cosyvoice.voice.profile import VoiceProfile
from tests.server.conftest import ADMIN_TOKEN

pytestmark = pytest.mark.slow

SPOKEN = "This sentence is spoken by a voice that was saved from a recording."


def _f0(data: bytes) -> float:
    wav, sr = sf.read(io.BytesIO(data), dtype="float32")
    return VoiceProfile.from_audio(wav, sr).f0_median_hz


def _add(url: str, name: str, prompt, **fields) -> httpx.Response:
    with open(prompt, "rb") as f:
        return httpx.post(url + "/api/v1/voices", data={"name": name, **fields},
                          files={"prompt": ("prompt.mp3", f, "audio/mpeg")}, timeout=120)


def test_saved_voice_lifecycle(running_app, real_female_prompt, tmp_path):
    url = running_app.url
    voices_dir = running_app.workdir / "voices"
    before = {p.name for p in voices_dir.iterdir()} if voices_dir.is_dir() else set()
    r = _add(url, "Cate API", real_female_prompt, transcript="a real prompt")
    assert r.status_code == 201, r.text
    made = r.json()
    assert made["name"] == "Cate API" and made["kind"] == "saved" and made["prompt_seconds"] > 3
    assert not list((running_app.workdir / "cache" / "uploads").glob("prompt-*"))
    names = [v["name"] for v in httpx.get(url + "/api/v1/voices", timeout=30).json()["voices"]]
    assert "joe" in names and "Cate API" in names
    assert httpx.get(url + "/api/v1/voices/cate%20api", timeout=30).json()["transcript"] == \
        "a real prompt"

    # Preset mode with the saved name clones from the stored profile, no upload.
    joe = httpx.post(url + "/api/v1/tts", json={"text": SPOKEN, "voice": "joe", "seed": 3},
                     timeout=120)
    saved = httpx.post(url + "/api/v1/tts", json={"text": SPOKEN, "voice": "cate api",
                                                  "seed": 3}, timeout=120)
    assert joe.status_code == saved.status_code == 200, saved.text
    f0_joe, f0_saved = _f0(joe.content), _f0(saved.content)
    # Joe is a male voice; the saved prompt is a female voice (median F0 ~190 Hz).
    assert f0_saved > 1.3 * f0_joe, (f0_joe, f0_saved)

    from openai import OpenAI

    client = OpenAI(base_url=url + "/v1", api_key="unused")
    out = tmp_path / "saved.wav"
    with client.audio.speech.with_streaming_response.create(
            model="tts-1", voice="Cate API", input=SPOKEN, response_format="wav") as resp:
        resp.stream_to_file(out)
    assert _f0(out.read_bytes()) > 1.3 * f0_joe

    r = httpx.patch(url + "/api/v1/voices/Cate%20API", json={"name": "Cate 2"}, timeout=30)
    assert r.status_code == 200 and r.json()["name"] == "Cate 2"
    assert httpx.get(url + "/api/v1/voices/Cate%20API", timeout=30).status_code == 404
    r = httpx.delete(url + "/api/v1/voices/cate%202", timeout=30)
    assert r.status_code == 200 and r.json() == {"deleted": "Cate 2"}
    r = httpx.post(url + "/api/v1/tts", json={"text": "Gone.", "voice": "Cate 2"}, timeout=60)
    assert r.status_code == 422 and "unknown voice" in r.json()["error"]["message"]
    # Only this test's voice folder went away; other tests' saved voices are theirs (the
    # store's own .lock file appears with its first change, whichever test makes it).
    assert {p.name for p in voices_dir.iterdir()} - before - {".lock"} == set()
    assert not [p for p in voices_dir.iterdir() if p.name.startswith("cate")]


@pytest.mark.parametrize("name, status, phrase", [
    ("../escape", 422, "not allowed"), ("", 422, "name"), ("x" * 41, 422, "at most 40"),
    ("JOE", 422, "built-in"),
])
def test_bad_names_are_422_with_a_reason(running_app, real_male_prompt, name, status, phrase):
    r = _add(running_app.url, name, real_male_prompt)
    assert r.status_code == status, r.text
    assert phrase in r.json()["error"]["message"]


def test_voice_request_errors(running_app, tmp_path):
    url = running_app.url
    r = httpx.post(url + "/api/v1/voices", json={"name": "x"}, timeout=30)
    assert r.status_code == 422 and "multipart" in r.json()["error"]["message"]
    r = httpx.post(url + "/api/v1/voices", data={"name": "x"}, files={"other": b"1"},
                   timeout=30)
    assert r.status_code == 422 and "'prompt'" in r.json()["error"]["message"]
    junk = tmp_path / "notes.wav"
    junk.write_text("this is not audio at all " * 50)
    r = _add(url, "junk", junk)
    assert r.status_code == 422 and "audio" in r.json()["error"]["message"].lower()
    r = httpx.post(url + "/api/v1/voices", data={"name": "big"},
                   files={"prompt": ("big.wav", b"\0" * (21 * 2**20), "audio/wav")}, timeout=60)
    assert r.status_code == 413 and "limit" in r.json()["error"]["message"]
    for method in ("get", "delete"):
        r = httpx.request(method, url + "/api/v1/voices/nobody", timeout=30)
        assert r.status_code == 404 and "no saved voice" in r.json()["error"]["message"]
    r = httpx.patch(url + "/api/v1/voices/nobody", json={"name": "x"}, timeout=30)
    assert r.status_code == 404
    r = httpx.patch(url + "/api/v1/voices/nobody", json={}, timeout=30)
    assert r.status_code == 422 and "name" in r.json()["error"]["message"]
    r = httpx.delete(url + "/api/v1/voices/joe", timeout=30)
    assert r.status_code == 422 and "built-in" in r.json()["error"]["message"]
    r = httpx.post(url + "/v1/audio/speech", json={"input": "Hi.", "voice": "nobody"},
                   timeout=30)
    assert r.status_code == 422 and "unknown voice" in r.json()["error"]["message"]
    assert running_app.ready()


def test_models_states_and_actions_on_loopback(running_app):
    url = running_app.url
    body = httpx.get(url + "/api/v1/models", timeout=30).json()
    states = {m["name"]: m["state"] for m in body["models"]}
    assert states["vocoder"] == "READY" and body["token_required"] is False
    r = httpx.post(url + "/api/v1/models/speaker_encoder/unload", timeout=120)
    assert r.status_code == 200 and r.json()["model"]["state"] == "UNLOADED"
    r = httpx.post(url + "/api/v1/models/speaker_encoder/load", timeout=120)
    assert r.status_code == 200 and r.json()["model"]["state"] == "READY"
    r = httpx.post(url + "/api/v1/models/vad/reload", timeout=120)
    assert r.status_code == 200 and r.json()["model"]["state"] == "READY"
    for action in ("load", "unload", "reload"):
        r = httpx.post(url + f"/api/v1/models/nope/{action}", timeout=30)
        assert r.status_code == 404 and "no model" in r.json()["error"]["message"]
    assert httpx.post(url + "/api/v1/models/vad/explode", timeout=30).status_code == 404
    assert running_app.ready()


def test_admin_routes_need_the_token(guarded_app):
    url = guarded_app.url
    assert httpx.get(url + "/api/v1/models", timeout=30).json()["token_required"] is True
    calls = [("/api/v1/models/vad/load", {}), ("/api/v1/models/vad/unload", {}),
             ("/api/v1/models/vad/reload", {}), ("/api/v1/restart", {"keep_outputs": True})]
    for path, body in calls:
        for headers in ({}, {"X-Admin-Token": "wrong"}, {"Authorization": "Bearer wrong"}):
            r = httpx.post(url + path, json=body, headers=headers, timeout=30)
            assert r.status_code == 403, (path, r.text)
            assert "admin token" in r.json()["error"]["message"]
    # The token is checked before the name: an unknown model without it is still 403.
    assert httpx.post(url + "/api/v1/models/nope/load", timeout=30).status_code == 403
    r = httpx.post(url + "/api/v1/models/speaker_encoder/unload",
                   headers={"X-Admin-Token": ADMIN_TOKEN}, timeout=120)
    assert r.status_code == 200 and r.json()["model"]["state"] == "UNLOADED"
    r = httpx.post(url + "/api/v1/models/speaker_encoder/load",
                   headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}, timeout=120)
    assert r.status_code == 200 and r.json()["model"]["state"] == "READY"
    assert guarded_app.ready()


def test_store_bound_is_409(guarded_app, real_female_prompt, real_male_prompt):
    first = _add(guarded_app.url, "only one", real_female_prompt)
    assert first.status_code == 201, first.text
    try:
        r = _add(guarded_app.url, "second", real_male_prompt)
        assert r.status_code == 409 and "delete one first" in r.json()["error"]["message"]
    finally:
        httpx.delete(guarded_app.url + "/api/v1/voices/only%20one", timeout=30)


def _post_into(out: list, url: str, body: dict) -> None:
    out.append(httpx.post(url, json=body, timeout=120))


def test_busy_is_429_with_retry_after(guarded_app, real_male_prompt):
    """One slot, no queue: a voice upload while a synthesis runs is refused, not queued."""
    text = "A long enough sentence keeps the only synthesis slot busy for a while."
    for _ in range(3):
        done: list[httpx.Response] = []
        worker = threading.Thread(target=_post_into, args=(
            done, guarded_app.url + "/api/v1/tts", {"text": text, "speed": 0.5}))
        worker.start()
        time.sleep(0.3)
        r = _add(guarded_app.url, "busy", real_male_prompt)
        still_running = worker.is_alive()
        worker.join()
        assert done[0].status_code == 200
        if still_running:
            break
        if r.status_code == 201:
            httpx.delete(guarded_app.url + "/api/v1/voices/busy", timeout=30)
    assert r.status_code == 429, r.text
    assert int(r.headers["Retry-After"]) > 0 and "busy" in r.json()["error"]["message"]
    assert guarded_app.ready()


def test_openapi_documents_the_routes(running_app):
    schema = httpx.get(running_app.url + "/openapi.json", timeout=30).json()
    paths = schema["paths"]
    assert set(paths["/api/v1/voices"]) == {"get", "post"}
    assert set(paths["/api/v1/voices/{name}"]) == {"get", "patch", "delete"}
    for action in ("load", "unload", "reload"):
        op = paths[f"/api/v1/models/{{name}}/{action}"]["post"]
        assert "403" in op["responses"] and "404" in op["responses"]
        assert any(p["name"] == "x-admin-token" for p in op["parameters"])
    post = paths["/api/v1/voices"]["post"]
    form = post["requestBody"]["content"]["multipart/form-data"]["schema"]
    assert form["required"] == ["name", "prompt"] and "201" in post["responses"]
    assert "413" in post["responses"] and "429" in post["responses"]
    assert "202" in paths["/api/v1/restart"]["post"]["responses"]

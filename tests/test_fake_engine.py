"""A second engine with other capabilities (tests/fake_engine.py) registered as a plugin:
the UI, the REST API, the OpenAI endpoint and the CLI offer exactly its modes and voices,
with no change to their code. Real app, real HTTP, real CLI subprocess."""

from __future__ import annotations

import io
import json
import urllib.request
from itertools import pairwise

import pytest
import soundfile as sf

from tests.conftest import get_json, start_app, stop_app
from tests.test_cli import cli

PLUGIN = "fake=tests.fake_engine:FACTORY"
MODES = ["preset", "clone"]


@pytest.fixture(scope="module")
def fake_app(tmp_path_factory):
    app = start_app(tmp_path_factory.mktemp("fake-engine"), "--engine", "fake",
                    "--engine-plugins", PLUGIN)
    yield app
    stop_app(app)


def post(url: str, body: dict) -> tuple[int, bytes, dict]:
    req = urllib.request.Request(url, json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, r.read(), dict(r.headers)
    except urllib.error.HTTPError as e:
        return e.code, e.read(), dict(e.headers)


def ui_component(app, elem_id: str) -> dict:
    status, config = get_json(app.url + "/config")
    assert status == 200
    found = [c["props"] for c in config["components"] if c.get("props", {}).get("elem_id")
             == elem_id]
    assert len(found) == 1, elem_id
    return found[0]


@pytest.mark.slow
def test_the_ui_offers_exactly_the_engine_modes_and_voices(fake_app):
    mode = ui_component(fake_app, "mode")
    assert [value for _, value in mode["choices"]] == MODES and mode["value"] == "preset"
    voice = ui_component(fake_app, "voice")
    assert [value for _, value in voice["choices"]] == ["beep"] and voice["value"] == "beep"
    assert ui_component(fake_app, "stream")["visible"] is False  # the engine cannot stream
    assert ui_component(fake_app, "instruction")["visible"] is False


@pytest.mark.slow
def test_the_rest_api_follows_the_capabilities(fake_app):
    status, caps = get_json(fake_app.url + "/api/v1/engine")
    assert status == 200 and caps["name"] == "fake" and caps["modes"] == MODES
    _, schema = get_json(fake_app.url + "/openapi.json")
    body = schema["paths"]["/api/v1/tts"]["post"]["requestBody"]["content"]
    assert body["application/json"]["schema"]["properties"]["mode"]["enum"] == MODES
    status, data, _ = post(fake_app.url + "/api/v1/tts", {"text": "Hello there. Bye now."})
    wav, sr = sf.read(io.BytesIO(data))
    assert status == 200 and sr == 16000 and len(wav) > 0.05 * sr
    for body, words in [({"text": "Hi.", "mode": "instruct", "instruction": "happily"},
                         "the fake engine does not offer mode 'instruct'"),
                        ({"text": "Hi.", "mode": "cross_lingual"}, "does not offer mode"),
                        ({"text": "Hi.", "stream": True}, "does not stream"),
                        ({"text": "Hi.", "voice": "joe"}, "unknown voice 'joe'")]:
        status, data, _ = post(fake_app.url + "/api/v1/tts", body)
        error = json.loads(data)["error"]
        assert status == 422 and words in error["message"], (body, error)
        if "mode" in words:  # the message lists what the engine offers instead
            assert "preset (" in error["message"] and "clone (" in error["message"]


@pytest.mark.slow
def test_the_openai_surface_lists_and_speaks_the_engine(fake_app):
    _, models = get_json(fake_app.url + "/v1/models")
    assert "cosyvoice-fake" in [m["id"] for m in models["data"]]
    status, data, _ = post(fake_app.url + "/v1/audio/speech",
                           {"input": "Hello.", "voice": "alloy", "response_format": "wav"})
    assert status == 200 and sf.read(io.BytesIO(data))[1] == 16000
    status, data, _ = post(fake_app.url + "/v1/audio/speech",
                           {"input": "Hello.", "instructions": "speak happily"})
    assert status == 422 and "does not take instructions" in json.loads(data)["error"]["message"]
    assert fake_app.ready()


@pytest.mark.slow
def test_the_cli_offers_exactly_the_engine_modes(tmp_path):
    env = {"COSYVOICE_ENGINE_PLUGINS": PLUGIN}
    usage = cli("synthesize", "--engine", "fake", "--help", cwd=tmp_path, env=env)
    assert usage.returncode == 0 and "{preset,clone}" in usage.stdout, usage.stdout
    refused = cli("synthesize", "--engine", "fake", "--mode", "instruct", "--text", "Hi.",
                  "-o", "x.wav", cwd=tmp_path, env=env)
    assert refused.returncode == 2 and "invalid choice: 'instruct'" in refused.stderr
    done = cli("synthesize", "--engine", "fake", "--text", "Hello there.", "-o", "out.wav",
               cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    assert sf.info(str(tmp_path / "out.wav")).samplerate == 16000
    unknown = cli("synthesize", "--engine", "nope", "--text", "Hi.", "-o", "x.wav",
                  cwd=tmp_path, env=env)
    assert unknown.returncode == 2 and "unknown engine 'nope'" in unknown.stderr


@pytest.mark.slow
def test_timestamps_come_with_the_audio_for_any_engine(fake_app):
    import base64

    text = "Hello there, my friend. This is the second one. And a third."
    status, data, _ = post(fake_app.url + "/api/v1/tts", {"text": text, "timestamps": True})
    assert status == 200, data
    body = json.loads(data)
    wav, sr = sf.read(io.BytesIO(base64.b64decode(body["audio"])))
    assert sr == 16000 and body["duration_s"] == pytest.approx(len(wav) / sr, abs=1e-3)
    cues = body["cues"]
    assert [c["text"] for c in cues] == ["Hello there, my friend.", "This is the second one.",
                                         "And a third."]
    assert all(a["end"] <= b["start"] < b["end"] for a, b in pairwise(cues))
    assert cues[-1]["end"] <= body["duration_s"]
    assert body["srt"].startswith("1\n00:00:00,") and body["vtt"].startswith("WEBVTT")
    assert body["words"] == []  # the fake engine knows no word durations
    status, data, _ = post(fake_app.url + "/api/v1/tts",
                           {"text": "Hi.", "timestamps": True, "format": "flac"})
    assert status == 200 and json.loads(data)["format"] == "flac"


@pytest.mark.slow
def test_the_cli_writes_subtitles(tmp_path):
    env = {"COSYVOICE_ENGINE_PLUGINS": PLUGIN}
    done = cli("synthesize", "--engine", "fake", "--text", "One two three. Four five.",
               "-o", "out.wav", "--srt", "out.srt", "--vtt", "out.vtt", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    srt = (tmp_path / "out.srt").read_text("utf-8")
    assert "1\n00:00:00," in srt and "One two three." in srt and "2\n" in srt
    assert (tmp_path / "out.vtt").read_text("utf-8").startswith("WEBVTT\n")

"""Transcription through the real surfaces: ``POST /api/v1/transcribe`` on the running app
and ``python -m cosyvoice transcribe`` as a subprocess (errors in the one shape / exit 2)."""

from __future__ import annotations

import json

import httpx
import pytest

from bench._metrics import wer
from tests.asr.known_prompts import EN_TEXT
from tests.test_cli import cli

pytestmark = pytest.mark.slow


def _post(app, path, **fields) -> httpx.Response:
    with open(path, "rb") as f:
        return httpx.post(app.url + "/api/v1/transcribe", data=fields, timeout=300,
                          files={"audio": (path.name, f.read())})


def test_the_api_transcribes_a_prompt(running_app, en_prompt):
    r = _post(running_app, en_prompt)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["language"] == "en" and wer(EN_TEXT, body["text"]) <= 15.0, body
    assert body["seconds"] > 0 and body["recognizer"] in ("whisper-base", "whisper-tiny.en")
    assert not list((running_app.workdir / "cache" / "uploads").glob("prompt-*"))


def test_the_api_refuses_in_the_one_error_shape(running_app, en_prompt, zh_prompt):
    r = _post(running_app, zh_prompt, language="xx")
    assert r.status_code == 422
    assert r.json()["error"]["type"] == "TranscriptionError"
    assert "no recognizer for xx" in r.json()["error"]["message"]
    no_file = httpx.post(running_app.url + "/api/v1/transcribe", data={"language": "en"},
                         files={"other": ("x.wav", b"RIFF")}, timeout=60)
    assert no_file.status_code == 422 and "'audio'" in no_file.json()["error"]["message"]
    as_json = httpx.post(running_app.url + "/api/v1/transcribe", json={"audio": "x"},
                         timeout=60)
    assert as_json.status_code == 415 and as_json.json()["error"]["code"] == 415  # a form
    assert "multipart" in as_json.json()["error"]["message"]


def test_the_model_shows_in_the_models_list(running_app, en_prompt):
    _post(running_app, en_prompt)
    models = httpx.get(running_app.url + "/api/v1/models", timeout=30).json()
    asr = next(m for m in models["models"] if m["name"] == "asr")
    assert asr["state"] == "READY" and asr["required"] is False and asr["lazy"] is True


def test_the_cli_transcribes_and_refuses_with_exit_2(tmp_path, en_prompt, zh_prompt):
    done = cli("transcribe", str(en_prompt), "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["language"] == "en" and wer(EN_TEXT, out["text"]) <= 15.0
    english_only = {"COSYVOICE_ASR_MODEL": "whisper-tiny.en"}
    refused = cli("transcribe", str(zh_prompt), cwd=tmp_path, env=english_only)
    assert refused.returncode == 2 and not refused.stdout
    assert "no recognizer for Mandarin" in refused.stderr and "普通话" in refused.stderr
    missing = cli("transcribe", "nope.wav", cwd=tmp_path)
    assert missing.returncode == 2 and "nope.wav: no such file" in missing.stderr


def test_the_gradio_event_transcribes(running_app, en_prompt):
    from gradio_client import Client, handle_file

    client = Client(running_app.url + "/", verbose=False)
    text, note = client.predict(handle_file(str(en_prompt)), "zh", api_name="/transcribe")
    assert wer(EN_TEXT, text) <= 15.0 and "自动识别" in note and "语言：en" in note

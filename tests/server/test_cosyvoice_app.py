"""The app serving two engines through its real HTTP surface: the offline engine and a CosyVoice3
engine on a tiny folder of our own making (tests/cosyvoice_folder.py, no oracle). A good folder
loads READY and speaks every mode at 24 kHz; a bad folder goes FAILED with the named reason while
the app stays ready and the offline engine answers; a request naming the failed engine gets a 503
with the reason; a saved voice of the CosyVoice engine is not offered by the offline engine."""

from __future__ import annotations

import io
import shutil
from urllib.parse import unquote

import httpx
import numpy as np
import pytest
import soundfile as sf

from tests.conftest import get_json, start_cosyvoice_app, stop_app

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cv_app(tmp_path_factory, cv_folder_v3):
    app = start_cosyvoice_app(tmp_path_factory.mktemp("cv-app"), cv_folder_v3)
    yield app
    stop_app(app)


def _engine(app, name: str) -> dict:
    _, body = get_json(app.url + "/api/v1/engines")
    return next(e for e in body["engines"] if e["name"] == name)


def _wav(response: httpx.Response) -> tuple[np.ndarray, int]:
    assert response.status_code == 200, response.text
    wav, sr = sf.read(io.BytesIO(response.content), dtype="float32")
    return wav, sr


def _tts(app, prompt=None, **fields) -> httpx.Response:
    if prompt is None:
        return httpx.post(app.url + "/api/v1/tts", json=fields, timeout=300)
    with open(prompt, "rb") as f:
        return httpx.post(app.url + "/api/v1/tts", data=fields, timeout=300,
                          files={"prompt": (prompt.name, f.read())})


def _admin(app, action: str, body: dict | None = None) -> httpx.Response:
    return httpx.post(f"{app.url}/api/v1/models/cosyvoice3/{action}", json=body, timeout=300)


def test_a_good_folder_loads_ready_and_every_surface_lists_it(cv_app, cv_folder_v3):
    engine = _engine(cv_app, "cosyvoice3")
    assert engine["state"] == "READY" and engine["default"] is True, engine
    status, ready = get_json(cv_app.url + "/health/ready")
    assert status == 200 and {e["name"]: e["state"] for e in ready["engines"]} == {
        "cosyvoice3": "READY", "offline": "READY"}
    model = next(m for m in ready["models"] if m["name"] == "cosyvoice3")
    assert model["required"] is False and model["location"] == str(cv_folder_v3)
    _, models = get_json(cv_app.url + "/v1/models")
    assert [m["id"] for m in models["data"]] == ["cosyvoice3", "cosyvoice-offline", "tts-1"]
    _, caps = get_json(cv_app.url + "/api/v1/engine?name=cosyvoice3")
    assert caps["sample_rate"] == 24000 and caps["modes"] == [
        "preset", "clone", "cross_lingual", "instruct"]
    assert list(caps["voices"]) == ["tiny-female", "tiny-male"]


@pytest.mark.parametrize("mode, fields", [
    ("preset", {"voice": "tiny-male"}),
    ("clone", {"prompt_text": "a line read for the prompt"}),
    ("cross_lingual", {}),
    ("instruct", {"instruction": "speak happily"}),
])
def test_the_cosyvoice_engine_speaks_each_mode(cv_app, real_female_prompt, mode, fields):
    prompt = None if mode == "preset" else real_female_prompt
    wav, sr = _wav(_tts(cv_app, prompt, text="你好。Hello there.", mode=mode, seed=7,
                        engine="cosyvoice3", **fields))
    assert sr == 24000 and len(wav) > 0.04 * sr and float(np.abs(wav).max()) > 0.01


def test_clone_needs_the_transcript(cv_app, real_female_prompt):
    r = _tts(cv_app, real_female_prompt, text="Hello.", mode="clone")
    assert r.status_code == 422 and "transcript" in r.json()["error"]["message"]


def test_clone_with_prompt_text_auto_transcribes_the_prompt(cv_app, real_female_prompt):
    from urllib.parse import unquote

    r = _tts(cv_app, real_female_prompt, text="Hello.", mode="clone", prompt_text="auto",
             engine="cosyvoice3")
    assert r.status_code == 200, r.text
    heard = unquote(r.headers["X-Prompt-Transcript"])
    assert len(heard.split()) >= 5, heard  # the clip holds a couple of English sentences


def test_the_openai_route_and_the_offline_engine(cv_app):
    r = httpx.post(cv_app.url + "/v1/audio/speech", timeout=300, json={
        "model": "cosyvoice3", "input": "Hello.", "voice": "tiny-female",
        "response_format": "wav"})
    assert _wav(r)[1] == 24000
    wav, sr = _wav(_tts(cv_app, text="Hello there.", engine="offline"))
    assert sr == 22050 and len(wav) > 0.3 * sr


def test_a_saved_voice_is_offered_by_its_engine_only(cv_app, real_female_prompt):
    with open(real_female_prompt, "rb") as f:
        r = httpx.post(cv_app.url + "/api/v1/voices", timeout=300,
                       data={"name": "cate-cv3", "transcript": "a line", "engine": "cosyvoice3"},
                       files={"prompt": (real_female_prompt.name, f.read())})
    assert r.status_code == 201, r.text
    _, cv3 = get_json(cv_app.url + "/api/v1/engine?name=cosyvoice3")
    _, offline = get_json(cv_app.url + "/api/v1/engine?name=offline")
    assert "cate-cv3" in cv3["voices_saved"] and "cate-cv3" not in offline["voices_saved"]
    assert _wav(_tts(cv_app, text="Hi.", voice="cate-cv3", engine="cosyvoice3", seed=1))[1] \
        == 24000
    r = _tts(cv_app, text="Hi.", voice="cate-cv3", engine="offline")
    assert r.status_code == 422 and "unknown voice 'cate-cv3'" in r.json()["error"]["message"]


@pytest.mark.parametrize("fmt", ["wav", "pcm16"])
def test_rest_streaming_sends_the_cosyvoice_engines_chunks(cv_app, fmt):
    """stream=true with the CosyVoice engine: chunked 24 kHz audio, more than one chunk
    (the runtime's token hops), equal in length to what the whole request gives."""
    fields = {"text": "你好，今天天气很好。Hello there, how are you today?", "seed": 11,
              "engine": "cosyvoice3", "voice": "tiny-female", "format": fmt}
    pieces = []
    with httpx.stream("POST", cv_app.url + "/api/v1/tts", json={**fields, "stream": True},
                      timeout=300) as r:
        assert r.status_code == 200, r.read()
        assert r.headers.get("transfer-encoding") == "chunked"
        if fmt == "pcm16":
            assert r.headers["content-type"].startswith("audio/L16;rate=24000")
        pieces = list(r.iter_raw())
    data = b"".join(pieces)
    if fmt == "wav":
        assert data[:4] == b"RIFF" and int.from_bytes(data[24:28], "little") == 24000
        data = data[44:]
    pcm = np.frombuffer(data, dtype="<i2").astype(np.float32) / 32767.0
    assert len(pieces) > 1 and float(np.abs(pcm).max()) > 0.01
    whole, sr = _wav(_tts(cv_app, **{**fields, "format": "wav"}))
    assert sr == 24000 and abs(len(pcm) - len(whole)) <= 1


def test_the_openai_client_with_the_cosyvoice_model(cv_app, tmp_path):
    """The official client: model cosyvoice3 listed, speech read as a streamed response."""
    from openai import OpenAI

    client = OpenAI(base_url=cv_app.url + "/v1", api_key="not-needed")
    assert "cosyvoice3" in [m.id for m in client.models.list().data]
    out = tmp_path / "speech.wav"
    with client.audio.speech.with_streaming_response.create(
            model="cosyvoice3", voice="tiny-male", input="The official client works.",
            response_format="wav") as resp:
        assert resp.headers["content-type"] == "audio/wav"
        resp.stream_to_file(out)
    wav, sr = sf.read(out, dtype="float32")
    assert sr == 24000 and len(wav) > 0.04 * sr and float(np.abs(wav).max()) > 0.01
    with client.audio.speech.with_streaming_response.create(
            model="cosyvoice3", voice="alloy", input="Speak up.", response_format="pcm",
            instructions="speak happily") as resp:
        pcm = np.frombuffer(b"".join(resp.iter_bytes()), dtype="<i2")
    assert len(pcm) > 0.04 * 24000 and int(np.abs(pcm).max()) > 300


def _metrics(app) -> dict[tuple[str, tuple], float]:
    from prometheus_client.parser import text_string_to_metric_families

    text = httpx.get(app.url + "/metrics", timeout=30).text
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for fam in text_string_to_metric_families(text) for s in fam.samples}


def test_metrics_per_engine_after_a_cosyvoice_request(cv_app):
    """/metrics: latency and first-chunk histograms labelled by engine; the CosyVoice LLM's
    tokens, decode seconds and tokens/s (the offline engine has no token LLM)."""
    before = _metrics(cv_app)
    cv3 = (("engine", "cosyvoice3"),)
    count = ("cosyvoice_engine_request_duration_seconds_count", cv3)
    assert _wav(_tts(cv_app, text="Hello there.", voice="tiny-male", seed=2,
                     engine="cosyvoice3"))[1] == 24000
    assert _wav(_tts(cv_app, text="Hello there.", engine="offline"))[1] == 22050
    after = _metrics(cv_app)
    assert after[count] == before.get(count, 0) + 1
    assert after[("cosyvoice_engine_request_duration_seconds_count",
                  (("engine", "offline"),))] >= 1
    first = after[("cosyvoice_engine_first_chunk_seconds_sum", cv3)]
    assert 0 < first <= after[("cosyvoice_engine_request_duration_seconds_sum", cv3)]
    tokens = ("cosyvoice_llm_tokens_total", cv3)
    assert after[tokens] > before.get(tokens, 0)
    assert after[("cosyvoice_llm_decode_seconds_total", cv3)] > 0
    assert after[("cosyvoice_llm_tokens_per_second", cv3)] > 0
    assert ("cosyvoice_llm_tokens_total", (("engine", "offline"),)) not in after


def test_a_bad_folder_fails_and_the_offline_engine_keeps_serving(cv_app, cv_folder_v3,
                                                                 tmp_path):
    bad = tmp_path / "bad"
    shutil.copytree(cv_folder_v3, bad)
    (bad / "flow.pt").unlink()
    assert _admin(cv_app, "unload").status_code == 200
    r = _admin(cv_app, "load", {"model_dir": str(bad)})
    assert r.status_code == 503 and "missing flow.pt" in r.json()["error"]["message"]
    engine = _engine(cv_app, "cosyvoice3")
    assert engine["state"] == "FAILED" and "missing flow.pt" in engine["reason"]
    status, ready = get_json(cv_app.url + "/health/ready")
    assert status == 200 and ready["ready"] is True  # no restart loop over a bad folder
    r = _tts(cv_app, text="Hello there.")  # named no engine: the offline engine answers
    wav, sr = _wav(r)
    assert sr == 22050 and len(wav) > 0.3 * sr
    assert "missing flow.pt" in unquote(r.headers["X-CosyVoice-Notes"])
    r = _tts(cv_app, text="Hello there.", engine="cosyvoice3")
    message = r.json()["error"]["message"]
    assert r.status_code == 503 and "missing flow.pt" in message and "load" in message
    # the good folder again: READY, and the default engine speaks again
    r = _admin(cv_app, "load", {"model_dir": str(cv_folder_v3)})
    assert r.status_code == 200 and r.json()["model"]["state"] == "READY"
    assert _wav(_tts(cv_app, text="Hello.", voice="tiny-male", seed=3))[1] == 24000

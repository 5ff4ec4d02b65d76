"""The Kokoro voices through the real app's HTTP surface: listed by the engine's
capabilities, spoken by REST and the OpenAI route, styled in instruct mode."""

from __future__ import annotations

import io
import json
import urllib.request

import pytest
import soundfile as sf

from tests.conftest import get_json, require_kokoro

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def app(running_app):
    require_kokoro()
    return running_app


def post(url: str, body: dict) -> tuple[int, bytes]:
    req = urllib.request.Request(url, json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=180) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def test_engine_lists_the_kokoro_voices(app):
    status, caps = get_json(app.url + "/api/v1/engine", timeout=30)
    assert status == 200
    voices = caps["voices"]
    kokoro = {k: v for k, v in voices.items() if "Kokoro" in v}
    assert len(kokoro) == 54
    assert voices["af_heart"] == "English (US) · female · Kokoro af_heart"
    assert voices["zm_yunjian"] == "Mandarin · male · Kokoro zm_yunjian"
    assert voices["ef_dora"] == "Spanish · female · Kokoro ef_dora"
    assert caps["voice_languages"]["ff_siwis"] == "fr" and "ja" in caps["languages"]
    assert caps["default_voice"] == "af_heart" and "joe" in voices and "baker" in voices
    assert caps["language_voices"] == {"en": "af_heart", "zh": "zm_yunxi"}
    status, listed = get_json(app.url + "/api/v1/voices", timeout=30)
    assert status == 200 and "bm_lewis" in {v["name"] for v in listed["voices"]}


@pytest.mark.parametrize("voice, text, lo, hi", [
    ("af_heart", "The museum opened a new exhibition about ancient sailing ships.", 2.0, 6.0),
    # mixed: the Mandarin voice reads the English run too (one speaker)
    ("zf_xiaoxiao", "我今天用 Python 写了三个程序。", 1.5, 6.0),
    # mixed: the Mandarin run of an English voice goes to a Mandarin Kokoro voice
    ("am_michael", "In Beijing people greet you with 你好，欢迎光临.", 1.5, 7.0),
    # the French voice reads Latin text as French, with espeak's French numbers
    ("ff_siwis", "Il y a 42 personnes dans la salle.", 1.5, 6.0),
])
def test_rest_speaks_a_kokoro_voice(app, voice, text, lo, hi):
    status, body = post(app.url + "/api/v1/tts", {"text": text, "voice": voice,
                                                  "format": "wav", "seed": 1})
    assert status == 200, body[:300]
    wav, sr = sf.read(io.BytesIO(body))
    assert sr == 22050 and lo < len(wav) / sr < hi
    assert abs(wav).max() > 0.1


def test_openai_route_and_instruct_mode(app):
    text = "Please remember to switch off the lights when you leave."
    status, plain = post(app.url + "/v1/audio/speech", {"model": "cosyvoice-offline",
                         "input": text, "voice": "bm_george", "response_format": "wav"})
    assert status == 200, plain[:300]
    status, styled = post(app.url + "/api/v1/tts", {
        "text": text, "voice": "bm_george", "mode": "instruct", "format": "wav",
        "instruction": "speak much faster and with a higher pitch"})
    assert status == 200, styled[:300]
    a, sr = sf.read(io.BytesIO(plain))
    b, _ = sf.read(io.BytesIO(styled))
    assert len(b) < 0.9 * len(a)  # the instruction's rate reached Kokoro's speed input


def test_a_blend_speaks_is_saved_and_is_refused_when_wrong(app):
    text = "A gentle breeze carried the smell of bread across the square."
    status, body = post(app.url + "/api/v1/tts", {"text": text, "voice": "af_bella:2+am_adam:1",
                                                  "format": "wav"})
    assert status == 200, body[:300]
    blended, sr = sf.read(io.BytesIO(body))
    assert 1.5 < len(blended) / sr < 7 and abs(blended).max() > 0.1
    status, body = post(app.url + "/api/v1/tts", {"text": text, "voice": "af_bella:2+nobody",
                                                  "format": "wav"})
    err = json.loads(body)
    assert status == 422 and "'nobody' in the blend" in err["error"]["message"], err
    status, body = post(app.url + "/api/v1/voices", {"name": "Breezy mix",
                                                     "blend": "AF_BELLA:2 + am_adam:1"})
    assert status == 201, body[:300]
    assert json.loads(body) | {"created": 0} == {
        "name": "Breezy mix", "kind": "blend", "created": 0,
        "blend": "af_bella:0.667+am_adam:0.333"}
    try:
        status, body = post(app.url + "/v1/audio/speech", {
            "model": "cosyvoice-offline", "input": text, "voice": "Breezy mix",
            "response_format": "wav"})
        assert status == 200, body[:300]
        saved, _ = sf.read(io.BytesIO(body))
        assert saved.shape == blended.shape and abs(saved - blended).max() < 1e-3
        status, body = post(app.url + "/api/v1/voices", {"name": "Bad", "blend": "joe:1"})
        assert status == 422 and "'joe' in the blend" in json.loads(body)["error"]["message"]
    finally:
        req = urllib.request.Request(app.url + "/api/v1/voices/Breezy%20mix", method="DELETE")
        urllib.request.urlopen(req, timeout=30).read()


def test_text_the_voice_cannot_read_is_a_422(app):
    status, body = post(app.url + "/api/v1/tts", {"text": "こんにちは", "voice": "if_sara",
                                                  "format": "wav"})
    assert status == 422
    message = json.dumps(json.loads(body), ensure_ascii=False)
    assert "if_sara speaks Italian" in message and "意大利语" in message

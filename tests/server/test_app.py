"""The app started for real (subprocess, free port, temporary dirs), driven over HTTP."""

from __future__ import annotations

import numpy as np
import pytest
import soundfile as sf
from gradio_client import Client, handle_file

from tests.conftest import get_json, start_app, stop_app

pytestmark = pytest.mark.slow

SENTENCE = "The quick brown fox jumps over the lazy dog near the quiet river bank."


@pytest.fixture(scope="module")
def client(running_app):
    return Client(running_app.url, verbose=False)


def _generate(client, **kw):
    args = dict(mode="preset", text=SENTENCE, voice="joe", prompt_audio=None, prompt_text="",
                speed=1.0, seed=None, strength=1.0)
    args.update(kw)
    return client.predict(*args.values(), api_name="/generate")


def _audio(path) -> tuple[np.ndarray, int]:
    wav, sr = sf.read(path, dtype="float32")
    return wav, sr


def test_health_endpoints(running_app):
    status, live = get_json(running_app.url + "/health/live")
    assert status == 200 and live["pid"] == running_app.proc.pid
    status, ready = get_json(running_app.url + "/health/ready")
    assert status == 200 and ready["ready"] is True
    states = {m["name"]: m["state"] for m in ready["models"]}
    assert states["vocoder"] == "READY" and states["acoustic_en"] == "READY"


def test_preset_voice_speaks(client, running_app):
    path, status = _generate(client)
    wav, sr = _audio(path)
    duration = len(wav) / sr
    # 14 words at a normal rate (2–4 words/s) → 3.5–7 s; allow pauses.
    assert 3.0 < duration < 9.0, duration
    assert np.sqrt(np.mean(wav**2)) > 0.02
    assert "Saved as" in status
    assert list(running_app.outputs.glob("*_preset_*.wav"))


def test_clone_with_real_prompt(client, real_female_prompt):
    prompt = handle_file(str(real_female_prompt))
    path, status = _generate(client, mode="clone", prompt_audio=prompt)
    wav, sr = _audio(path)
    assert 3.0 < len(wav) / sr < 9.0
    assert np.isfinite(wav).all() and np.sqrt(np.mean(wav**2)) > 0.02


def test_seed_reproducible(client):
    a, _ = _audio(_generate(client, text="Same seed, same samples.", seed=42)[0])
    b, _ = _audio(_generate(client, text="Same seed, same samples.", seed=42)[0])
    assert np.array_equal(a, b)


@pytest.mark.parametrize("kwargs, message", [
    ({"text": "   "}, "type some text"),
    ({"text": "🙂🙂🙂 !!!"}, "no speakable"),
    ({"mode": "clone", "prompt_audio": None}, "needs a prompt"),
    ({"speed": 7.0}, "maximum value 2.0"),
])
def test_bad_input_gets_clear_error(client, running_app, kwargs, message):
    with pytest.raises(Exception) as info:
        _generate(client, **kwargs)
    assert message.lower() in str(info.value).lower()
    assert running_app.ready()


def test_short_prompt_rejected_and_app_stays_ready(client, running_app, tmp_path,
                                                   real_male_prompt):
    wav, sr = sf.read(real_male_prompt, dtype="float32")
    short = tmp_path / "short.wav"
    sf.write(short, wav[: int(1.0 * sr)], sr)
    before = set(running_app.outputs.glob("*"))
    with pytest.raises(Exception) as info:
        _generate(client, mode="clone", prompt_audio=handle_file(str(short)))
    assert "need 3" in str(info.value)
    assert set(running_app.outputs.glob("*")) == before
    assert running_app.ready()


def test_second_instance_refuses_same_pidfile(running_app):
    import subprocess
    import sys

    from tests.conftest import ROOT

    proc = subprocess.run([sys.executable, str(ROOT / "app.py"), "--port", "0",
                           "--pidfile", str(running_app.pidfile),
                           "--log-dir", str(running_app.workdir / "logs2")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    assert "another instance" in proc.stderr


def test_sigterm_exits_cleanly(tmp_path):
    app = start_app(tmp_path, "--no-preload")
    assert stop_app(app) == 0
    assert not app.pidfile.exists()

"""The UI's events through gradio_client on the real app: the four modes, saved voices in the
voice list, streaming, seeds and the session history; the streaming handler in-process
(its chunks are the saved file, sample for sample)."""

from __future__ import annotations

import io
import shutil

import httpx
import numpy as np
import pytest
import soundfile as sf
from gradio_client import Client, handle_file

from cosyvoice.server.plots import result_picture
from cosyvoice.server.ui import make_generate_stream
from tests.conftest import local_services, require_kokoro

pytestmark = pytest.mark.slow

TWO_SENTENCES = "The first sentence is short. The second one follows it."
needs_ffmpeg = pytest.mark.skipif(
    shutil.which("ffmpeg") is None or shutil.which("ffprobe") is None,
    reason="gradio's streaming audio output needs ffmpeg and ffprobe (apt-get install ffmpeg)")


@pytest.fixture(scope="module")
def client(running_app):
    return Client(running_app.url, verbose=False)


def _generate(client, mode="preset", text="Hello.", voice="joe", prompt=None, seed=None,
              instruction=""):
    return client.predict(mode, text, voice, prompt, "", 1.0, seed, 1.0, instruction,
                          api_name="/generate")


def _samples(path) -> np.ndarray:
    wav, _ = sf.read(path, dtype="int16")
    return wav


def _check_speech(path, low_s: float, high_s: float) -> None:
    wav, sr = sf.read(path, dtype="float32")
    assert low_s < len(wav) / sr < high_s, len(wav) / sr
    assert np.isfinite(wav).all() and np.sqrt(np.mean(wav**2)) > 0.02


def test_preset_baker_and_the_old_eight_parameter_call(client):
    # A script written before the instruction parameter existed still works unchanged.
    path, status = client.predict("preset", "今天天气很好。", "baker", None, "", 1.0, None, 1.0,
                                  api_name="/generate")
    _check_speech(path, 0.6, 4.0)
    assert "_preset_" in status and "1 sentence(s)" in status


def test_clone_mode(client, real_female_prompt):
    path, status = _generate(client, "clone", "A short cloned sentence.",
                             prompt=handle_file(str(real_female_prompt)))
    _check_speech(path, 0.8, 5.0)
    assert "_clone_" in status


def test_cross_lingual_mode_is_bit_identical_for_one_seed(client, real_female_prompt):
    """An English prompt speaking Chinese; the same seed gives the same samples."""
    prompt = handle_file(str(real_female_prompt))
    a, status = _generate(client, "cross_lingual", "你好，世界。", prompt=prompt, seed=11)
    b, _ = _generate(client, "cross_lingual", "你好，世界。", prompt=prompt, seed=11)
    _check_speech(a, 0.5, 4.0)
    assert "_cross_lingual_" in status
    assert np.array_equal(_samples(a), _samples(b))


def test_instruct_mode_reports_what_it_understood(client):
    path, status = _generate(client, "instruct", "Hello there, friend.",
                             instruction="speak happily")
    _check_speech(path, 0.5, 4.0)
    assert "understood" in status and "happy" in status
    with pytest.raises(Exception, match="instruct"):
        _generate(client, "instruct", "Hello.", instruction="")


def test_saved_voice_appears_in_the_voice_list(client, running_app, real_female_prompt):
    status, voices = client.predict("ui voice", handle_file(str(real_female_prompt)), "",
                                    "joe", "clone", "en", api_name="/save_voice")
    assert "ui voice" in status
    assert "ui voice" in [value for _, value in voices["choices"]]
    assert voices["value"] == "ui voice"
    with pytest.raises(Exception, match="already saved"):
        client.predict("ui voice", handle_file(str(real_female_prompt)), "", "joe", "clone",
                       "en", api_name="/save_voice")
    with pytest.raises(Exception, match="参考音频"):
        client.predict("no prompt", None, "", "joe", "preset", "zh", api_name="/save_voice")
    path, _ = _generate(client, "preset", "Spoken by the saved voice.", voice="ui voice")
    _check_speech(path, 0.8, 5.0)
    # Leave the shared app as found: other tests count its saved voices.
    r = httpx.delete(running_app.url + "/api/v1/voices/ui%20voice", timeout=30)
    assert r.status_code == 200, r.text


@needs_ffmpeg
def test_streaming_yields_chunks_and_the_history_grows(running_app):
    fresh = Client(running_app.url, verbose=False)  # its own session, so its own history
    job = fresh.submit("instruct", TWO_SENTENCES, "joe", None, "", 1.0, 3, 1.0,
                       "speak happily", api_name="/generate_stream")
    job.result()
    statuses = [status for _, status in job.outputs()]
    chunks = [s for s in statuses if s.startswith("Streaming: sentence")]
    assert len(chunks) >= 2, statuses
    assert "Saved as" in statuses[-1] and "2 sentence(s)" in statuses[-1]
    assert "understood" in statuses[-1] and "happy" in statuses[-1]  # the request's notes
    _generate(fresh, "preset", "One more for the history.")
    table = fresh.predict(api_name="/history")
    rows = table["data"]
    assert len(rows) == 2 and [r[0] for r in rows] == [2, 1]  # newest first
    assert rows[1][2] == "instruct" and rows[1][3] == TWO_SENTENCES
    assert rows[1][5].endswith(".wav")


@needs_ffmpeg
def test_streamed_chunks_are_the_saved_samples(tmp_path):
    """The UI's streaming handler in-process, real models: its WAV chunks, concatenated,
    are the file it saves (the pipeline yields the cross-faded pieces)."""
    synth = local_services(tmp_path).synth
    stream = make_generate_stream(synth)
    outs = list(stream("preset", TWO_SENTENCES, "joe", None, "", 1.0, 5, 1.0, "", [],
                       progress=lambda *a, **k: None))
    chunks = [sf.read(io.BytesIO(audio), dtype="int16")[0] for audio, _, _ in outs[:-1]]
    assert len(chunks) >= 2
    history = outs[-1][2]
    saved = _samples(history[-1]["path"])
    assert np.array_equal(np.concatenate(chunks), saved)


def test_result_picture_shows_the_signal():
    sr = 22050
    tone = (0.5 * np.sin(2 * np.pi * 440 * np.arange(sr) / sr)).astype(np.float32)
    a, b = result_picture(tone, sr), result_picture(np.zeros(sr, np.float32), sr)
    assert a.ndim == 3 and a.shape[2] == 3 and a.dtype == np.uint8
    assert a.shape == b.shape and np.abs(a.astype(int) - b.astype(int)).mean() > 1.0


def test_saving_a_voice_shows_what_the_prompt_check_noticed(client, running_app, tmp_path):
    """One person from two recordings is saved, with the one-voice check's note in the
    status (it used to say nothing)."""
    import soundfile as sf

    from tests.fixtures.make_prompts import load_real

    joined = tmp_path / "two_recordings.wav"
    sf.write(joined, np.concatenate([load_real("cate_blanch.mp3"), np.zeros(4800, np.float32),
                                     load_real("cate_blanch_2.mp3")]), 16000)
    status, _ = client.predict("ui two takes", handle_file(str(joined)), "", "joe", "clone",
                               "en", api_name="/save_voice")
    try:
        assert "ui two takes" in status and "sound like different voices" in status, status
    finally:
        httpx.delete(running_app.url + "/api/v1/voices/ui%20two%20takes", timeout=30)


def test_a_typed_blend_is_spoken_and_saved(client, running_app):
    require_kokoro()
    path, _ = _generate(client, "preset", "Spoken by a blend.", voice="af_bella:2+am_adam:1")
    _check_speech(path, 0.5, 4.0)
    status, voices = client.predict("ui blend", None, "", "af_bella:2+am_adam:1", "preset",
                                    "en", api_name="/save_voice")
    assert "ui blend" in status and voices["value"] == "ui blend"
    with pytest.raises(Exception, match="'nobody' in the blend"):
        client.predict("bad blend", None, "", "af_bella+nobody", "preset", "en",
                       api_name="/save_voice")
    r = httpx.delete(running_app.url + "/api/v1/voices/ui%20blend", timeout=30)
    assert r.status_code == 200, r.text

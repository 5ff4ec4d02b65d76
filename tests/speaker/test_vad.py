"""Silero VAD wrapper on real speech, silence and noise; the segment logic on known inputs."""

from __future__ import annotations

import numpy as np
import pytest

from cosyvoice.speaker.vad import VadConfig, segments_from_probs, speech_seconds

SR = 16000


def test_speech_prob_shape_and_range(vad, recordings):
    wav = recordings["cate"]
    probs = vad.speech_prob(wav)
    assert probs.shape == (-(-len(wav) // 512),)
    assert probs.dtype == np.float32
    assert 0.0 <= probs.min() and probs.max() <= 1.0
    assert vad.speech_prob(np.zeros(0, dtype=np.float32)).shape == (0,)


def test_segments_in_real_recording(vad, recordings):
    wav = recordings["cate"]                      # 7.9 s, speech from ~0.45 s to ~7.2 s
    segments = vad.speech_segments(wav)
    assert 1 <= len(segments) <= 5
    assert all(0 <= s < e <= len(wav) for s, e in segments)
    assert all(a[1] < b[0] for a, b in zip(segments, segments[1:], strict=False)), "disjoint"
    assert 0.2 * SR < segments[0][0] < 0.8 * SR
    assert 6.5 * SR < segments[-1][1] <= len(wav)
    assert 4.5 < speech_seconds(segments, SR) < 6.5


def test_male_recording_is_mostly_speech(vad, recordings):
    segments = vad.speech_segments(recordings["heath"])
    assert speech_seconds(segments, SR) > 1.8


def test_no_speech_in_silence(vad):
    silence = np.zeros(5 * SR, dtype=np.float32)
    assert vad.speech_segments(silence) == []
    assert float(vad.speech_prob(silence).max()) < 0.1


def test_little_speech_in_white_noise(vad):
    noise = (0.1 * np.random.default_rng(0).standard_normal(10 * SR)).astype(np.float32)
    segments = vad.speech_segments(noise)
    assert speech_seconds(segments, SR) < 0.5
    assert float(np.mean(vad.speech_prob(noise))) < 0.1


def test_speech_found_after_noise_is_added(vad, recordings):
    wav = recordings["cate"]
    rms = float(np.sqrt(np.mean(wav ** 2)))
    noisy = wav + rms * np.random.default_rng(1).standard_normal(len(wav)).astype(np.float32)
    assert speech_seconds(vad.speech_segments(noisy), SR) > 4.0      # 0 dB SNR


def _probs(pattern: str) -> np.ndarray:
    """'s' = speech (0.9), '.' = silence (0.05), '~' = in between (0.4), one per window."""
    values = {"s": 0.9, ".": 0.05, "~": 0.4}
    return np.array([values[c] for c in pattern], dtype=np.float32)


@pytest.mark.parametrize("pattern,expected", [
    # 10 windows of speech starting at window 5, no padding, no minimum.
    ("....." + "s" * 10 + ".....", [(5 * 512, 15 * 512)]),
    # a 2-window (64 ms) pause is shorter than min_silence (100 ms): one segment.
    ("s" * 10 + ".." + "s" * 10 + "....", [(0, 22 * 512)]),
    # a 5-window (160 ms) pause splits it.
    ("s" * 10 + "....." + "s" * 10 + "....", [(0, 10 * 512), (15 * 512, 25 * 512)]),
    # 'in between' values keep speech going (hysteresis: off below 0.35).
    ("s" * 5 + "~" * 10 + "s" * 5 + "....", [(0, 20 * 512)]),
    # speech running to the end closes at the end of the audio.
    ("....." + "s" * 10, [(5 * 512, 15 * 512 - 100)]),
])
def test_segments_from_probs(pattern, expected):
    probs = _probs(pattern)
    n = len(probs) * 512 - (100 if pattern.endswith("s") else 0)
    got = segments_from_probs(probs, n, VadConfig(), min_speech_ms=0, pad_ms=0)
    assert got == expected


def test_short_blips_dropped_and_padding_merges():
    probs = _probs("....." + "sss" + "....." + "s" * 20 + "....." + "s" * 20 + "....")
    got = segments_from_probs(probs, len(probs) * 512, VadConfig(), min_speech_ms=250,
                              min_silence_ms=100, pad_ms=100)
    # the 96 ms blip is dropped; 1600 samples of padding close the 2560-sample gap.
    assert got == [(13 * 512 - 1600, 58 * 512 + 1600)]

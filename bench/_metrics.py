"""Measurements shared by the benchmarks and the tests: DNSMOS P.835 (``speechmos``), word
error rate and edit distance, an F0 track (Praat, ``parselmouth``), the longest silence
inside a clip.

DNSMOS is a learned estimate, not a listening test: good for comparisons on one test set.
Nothing is loaded at import time. The harness's text normalisation and recognizers are in
:mod:`bench.eval.metrics`.
"""

from __future__ import annotations

import logging
import re

import numpy as np

from cosyvoice.audio.io import resample

logger = logging.getLogger(__name__)

METRIC_SR = 16000  # DNSMOS's rate


def to_16k(wav: np.ndarray, sr: int) -> np.ndarray:
    """Mono float waveform at any rate → float32 16 kHz, clipped to [-1, 1]."""
    return np.clip(resample(np.asarray(wav, dtype=np.float32), sr, METRIC_SR), -1.0, 1.0)


def dnsmos(wav: np.ndarray, sr: int) -> dict[str, float]:
    """DNSMOS P.835 scores ``{"ovrl", "sig", "bak", "p808"}`` of a mono waveform.

    speechmos loops short clips up to its 9.01 s window and averages 9 s windows hopped
    by 1 s over long ones.
    """
    from speechmos import dnsmos as _dnsmos

    out = _dnsmos.run(to_16k(wav, sr), sr=METRIC_SR)
    return {
        "ovrl": float(out["ovrl_mos"]),
        "sig": float(out["sig_mos"]),
        "bak": float(out["bak_mos"]),
        "p808": float(out["p808_mos"]),
    }


def normalize_text(text: str) -> str:
    """Lower case, letters/digits/apostrophes only, single spaces."""
    text = re.sub(r"[^a-z0-9' ]+", " ", text.lower())
    return " ".join(w.strip("'") for w in text.split() if w.strip("'"))


def edit_distance(ref: list[str], hyp: list[str]) -> int:
    """Levenshtein distance between two token lists (substitution = insertion = 1)."""
    prev = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, start=1):
        cur = [i] + [0] * len(hyp)
        for j, h in enumerate(hyp, start=1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (r != h))
        prev = cur
    return prev[-1]


def wer(reference: str, hypothesis: str) -> float:
    """Word error rate in percent of the reference's words."""
    ref = normalize_text(reference).split()
    hyp = normalize_text(hypothesis).split()
    if not ref:
        return 0.0 if not hyp else 100.0
    return 100.0 * edit_distance(ref, hyp) / len(ref)


def f0_semitones(wav: np.ndarray, sr: int, floor: float, ceiling: float) -> np.ndarray:
    """F0 of the voiced 10 ms frames in semitones re 1 Hz (Praat's autocorrelation tracker
    between ``floor`` and ``ceiling`` Hz)."""
    import parselmouth

    snd = parselmouth.Sound(np.asarray(wav, np.float64), sampling_frequency=sr)
    f0 = snd.to_pitch_ac(time_step=0.01, pitch_floor=floor, pitch_ceiling=ceiling)
    f0 = f0.selected_array["frequency"]
    return 12 * np.log2(f0[f0 > 0])


def longest_inner_silence(wav: np.ndarray, sr: int, floor_db: float = -40.0) -> float:
    """Seconds of the longest run of 10 ms frames quieter than ``floor_db`` under the
    loudest frame, between the first and the last loud frame."""
    hop = int(0.01 * sr)
    n = len(wav) // hop
    rms = np.sqrt(np.mean(wav[: n * hop].reshape(n, hop) ** 2, axis=1) + 1e-12)
    quiet = 20 * np.log10(rms / rms.max()) < floor_db
    loud = np.flatnonzero(~quiet)
    longest = run = 0
    for q in quiet[loud[0]: loud[-1] + 1]:
        run = run + 1 if q else 0
        longest = max(longest, run)
    return longest * hop / sr

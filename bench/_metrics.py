"""Benchmark metrics: DNSMOS P.835 (``speechmos``) and English WER (``pocketsphinx``).

Both run offline on bundled models. They are for *relative* comparisons inside one
benchmark run (adapted vs unadapted): pocketsphinx's small en-us model has a high
absolute WER even on clean speech, and DNSMOS is a learned estimate, not a listening test.

Nothing is loaded at import time; the models load on first use and are cached here,
which is fine for a benchmark script (library code keeps no module-level state).
"""

from __future__ import annotations

import logging
import re
from functools import lru_cache
from typing import Any

import numpy as np

from cosyvoice.audio.io import resample

logger = logging.getLogger(__name__)

METRIC_SR = 16000  # both DNSMOS and the pocketsphinx en-us model take 16 kHz


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


@lru_cache(maxsize=1)
def _decoder() -> Any:
    from pocketsphinx import Decoder

    return Decoder(samprate=METRIC_SR, loglevel="FATAL")


def transcribe(wav: np.ndarray, sr: int) -> str:
    """Recognize English speech with pocketsphinx's bundled en-us model (lower case)."""
    pcm = (to_16k(wav, sr) * 32767.0).astype("<i2").tobytes()
    dec = _decoder()
    dec.start_utt()
    dec.process_raw(pcm, no_search=False, full_utt=True)
    dec.end_utt()
    hyp = dec.hyp()
    return normalize_text(hyp.hypstr if hyp is not None else "")


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

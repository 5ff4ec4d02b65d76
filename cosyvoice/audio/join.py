"""Joining audio: sentence chunks with equal-power cross-fades (streamed and saved audio
are the same samples), language runs inside a sentence with a short phrase break, and the
soft breath noise an inline ``[breath]`` asks for.
"""

from __future__ import annotations

import numpy as np

RUN_PAUSE_S = 0.1  # between language runs inside a sentence
RUN_EDGE_S = 0.03  # silence kept at a run's joined edges
# Sentence joining: each sentence keeps SENTENCE_EDGE_S of its own silence at the sides
# that meet another sentence (OUTPUT_EDGE_S at the output's outer edges), and neighbours
# overlap by CROSSFADE_S with an equal-power (cos/sin) cross-fade, so no hard cut clicks.
CROSSFADE_S = 0.03
SENTENCE_EDGE_S = 0.08
OUTPUT_EDGE_S = 0.01


def join_chunks(pieces: list[np.ndarray], sr: int, pause_s: float = 0.12) -> np.ndarray:
    """Concatenate sentences with a short silence between them."""
    if not pieces:
        return np.zeros(0, np.float32)
    gap = np.zeros(int(pause_s * sr), np.float32)
    out: list[np.ndarray] = []
    for i, p in enumerate(pieces):
        if i:
            out.append(gap)
        out.append(p.astype(np.float32, copy=False))
    return np.concatenate(out)


class ChunkJoiner:
    """Joins sentence chunks as they arrive, so streamed and saved audio are identical.

    Each pushed chunk ``(T,)`` has its silent edges trimmed (``edge_s`` kept where it meets
    a neighbour, ``outer_s`` at the output's start and end). Its last ``fade_s`` is held
    back and mixed with the next chunk's first samples by an equal-power cross-fade
    (``cos``/``sin`` gains, whose squares sum to 1); :meth:`push` returns what is final.
    ``spans``: per pushed chunk, where its trimmed audio (before any inline pause) lies in
    the joined output, as ``(start, end)`` sample indices of its first and last loud frame
    (:func:`speech_bounds`) — the one place sentence timings come from (subtitles).
    """

    def __init__(self, sr: int, fade_s: float = CROSSFADE_S, edge_s: float = SENTENCE_EDGE_S,
                 outer_s: float = OUTPUT_EDGE_S) -> None:
        self.sr, self.fade = sr, max(1, int(round(fade_s * sr)))
        self.edge_s, self.outer_s = edge_s, outer_s
        self._tail: np.ndarray | None = None  # held back from the previous chunk
        self.emitted = 0  # samples returned so far
        self.spans: list[tuple[int, int]] = []
        self.origins: list[int] = []  # per chunk: where its sample 0 would be in the output

    def push(self, wav: np.ndarray, last: bool = False, pause_s: float = 0.0,
             breath: bool = False) -> np.ndarray:
        """``pause_s``: an inline pause after this chunk (the silence between it and the
        next then lasts about ``pause_s``); ``breath``: with a soft breath noise in it."""
        first = self._tail is None
        wav = np.asarray(wav, np.float32)
        lo, hi = trim_bounds(wav, self.sr, self.outer_s if first else self.edge_s,
                             keep_end_s=self.outer_s if last else self.edge_s)
        body = wav[lo:hi]
        held = 0 if self._tail is None else len(self._tail)
        start = self.emitted + held - min(held, len(body))  # after the cross-fade overlap
        on, off = speech_bounds(body, self.sr)
        self.spans.append((start + on, start + off))
        self.origins.append(start - lo)
        if pause_s > 0 and not last:
            gap = int(round(max(0.0, pause_s - 2 * self.edge_s) * self.sr))
            body = np.concatenate([body, breath_noise(gap, self.sr) if breath
                                   else np.zeros(gap, np.float32)])
        out: list[np.ndarray] = []
        if self._tail is not None:
            tail = self._tail
            n = min(len(tail), len(body))
            out.append(tail[: len(tail) - n])
            if n:
                theta = (np.arange(n, dtype=np.float64) + 0.5) * (np.pi / 2 / n)
                mixed = tail[len(tail) - n:] * np.cos(theta) + body[:n] * np.sin(theta)
                out.append(mixed.astype(np.float32))
            body = body[n:]
        hold = 0 if last else min(self.fade, len(body))
        out.append(body[: len(body) - hold])
        self._tail = body[len(body) - hold:] if not last else None
        joined = np.concatenate(out) if out else np.zeros(0, np.float32)
        self.emitted += len(joined)
        return joined


def join_runs(pieces: list[np.ndarray], sr: int, pause_s: float = RUN_PAUSE_S,
              edge_s: float = RUN_EDGE_S, origins: list | None = None) -> np.ndarray:
    """Join the language runs of one sentence: each run's silent edges are cut to
    ``edge_s`` and a ``pause_s`` silence goes between runs (a short phrase break).
    ``origins``: filled with, per piece, the sample of the joined audio where the piece's
    sample 0 would lie (its timings' offset)."""
    bounds = [trim_bounds(p, sr, edge_s) for p in pieces]
    kept, pos, gap = [], 0, int(pause_s * sr)
    for p, (lo, hi) in zip(pieces, bounds, strict=True):
        if origins is not None:
            origins.append(pos - lo)
        if hi > lo:
            kept.append(p[lo:hi])
            pos += hi - lo + gap
    return join_chunks(kept, sr, pause_s)


def trim_edges(wav: np.ndarray, sr: int, keep_s: float, floor_db: float = -40.0,
                keep_end_s: float | None = None) -> np.ndarray:
    """Cut leading/trailing audio quieter than ``floor_db`` below the peak (10 ms frames),
    keeping ``keep_s`` before the first loud frame and ``keep_end_s`` (default the same)
    after the last."""
    lo, hi = trim_bounds(wav, sr, keep_s, floor_db, keep_end_s)
    return wav[lo:hi]


def trim_bounds(wav: np.ndarray, sr: int, keep_s: float, floor_db: float = -40.0,
                keep_end_s: float | None = None) -> tuple[int, int]:
    """The ``(start, end)`` samples :func:`trim_edges` keeps."""
    loud = _loud_frames(wav, sr, floor_db)
    if not len(loud):
        return 0, len(wav)
    hop = max(1, int(0.01 * sr))
    keep = int(keep_s * sr)
    keep_end = keep if keep_end_s is None else int(keep_end_s * sr)
    return (max(0, int(loud[0]) * hop - keep),
            min(len(wav), (int(loud[-1]) + 1) * hop + keep_end))


def speech_bounds(wav: np.ndarray, sr: int, floor_db: float = -40.0) -> tuple[int, int]:
    """``(start, end)`` samples of the first and last 10 ms frame louder than ``floor_db``
    below the peak (:func:`trim_edges`' rule); the whole clip when none is."""
    loud = _loud_frames(wav, sr, floor_db)
    if not len(loud):
        return 0, len(wav)
    hop = max(1, int(0.01 * sr))
    return int(loud[0] * hop), min(len(wav), int((loud[-1] + 1) * hop))


def _loud_frames(wav: np.ndarray, sr: int, floor_db: float) -> np.ndarray:
    hop = max(1, int(0.01 * sr))
    n = len(wav) // hop
    if n == 0:
        return np.zeros(0, np.int64)
    rms = np.sqrt(np.mean(wav[: n * hop].reshape(n, hop) ** 2, axis=1) + 1e-12)
    return np.flatnonzero(20 * np.log10(rms / max(float(rms.max()), 1e-9)) > floor_db)


def breath_noise(n: int, sr: int) -> np.ndarray:
    """``n`` samples of a soft inhalation: band-limited noise (≈ 0.4–2.5 kHz, where breath
    noise has its energy) under a raised-cosine swell, peaking near −38 dBFS, between short
    silences. Seeded, so the same text gives the same audio."""
    out = np.zeros(n, np.float32)
    body = int(0.6 * n)
    if body < int(0.05 * sr):
        return out
    rng = np.random.default_rng(1234)
    spec = np.fft.rfft(rng.standard_normal(body))
    freqs = np.fft.rfftfreq(body, 1.0 / sr)
    spec[(freqs < 400) | (freqs > 2500)] = 0
    noise = np.fft.irfft(spec, body)
    noise *= np.hanning(body) / max(float(np.abs(noise).max()), 1e-9)
    start = (n - body) // 2
    out[start:start + body] = (noise * 10 ** (-38 / 20)).astype(np.float32)
    return out

"""Joining audio: sentences, whole or in streamed pieces, with equal-power cross-fades
(streamed and saved audio are the same samples), language runs inside a sentence with a short
phrase break, and the soft breath noise an inline ``[breath]`` asks for.
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
TRIM_FLOOR_DB = -40.0  # a 10 ms frame this far below a sentence's loudest is silence to trim
SILENCE_DBFS = -50.0  # a streamed sentence's start waits for a frame above this (absolute)


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
    """Joins sentences as they arrive, whole or in pieces, so streamed and saved audio are
    the same samples.

    A sentence ``(T,)`` has its silent edges trimmed (``edge_s`` kept where it meets a
    neighbour, ``outer_s`` at the output's start and end; see :func:`trim_edges`). Its last
    ``fade_s`` is held back and mixed with the next sentence's first samples by an
    equal-power cross-fade (``cos``/``sin`` gains, whose squares sum to 1). :meth:`push`
    returns what is final.

    A sentence may come in pieces (a streaming engine's token hops): ``start`` marks its
    first piece, ``end`` its last; a whole sentence is the one piece with both. A piece goes
    out as it arrives, less what a later piece may still change:

    - the sentence's beginning, until it holds a 10 ms frame above :data:`SILENCE_DBFS` (a
      first piece that is all silence waits for the next): the leading trim is then decided
      on what has arrived, against its loudest frame;
    - then, until the previous sentence's held tail can be mixed in whole (pieces shorter
      than the cross-fade wait for more);
    - the trailing run of frames quiet against the loudest so far (it may be the sentence's
      end, which is trimmed) and ``fade_s`` before it (the next hold-back).

    The rule this gives (tests/audio/test_join.py): **when the sentence's loudest frame is
    in the first piece with a frame above the silence floor, or before it, its pieces give
    exactly the samples of the sentence pushed whole.** Otherwise the leading trim and the
    pieces let out early were judged against a quieter peak than the whole sentence's, and
    a little more of a quiet start or end stays.

    Timings (the one place subtitles come from): ``emitted`` counts the samples returned so
    far; per finished sentence, ``spans`` holds where its speech (first to last loud frame,
    before any inline pause) lies in the joined output and ``origins`` where its sample 0
    would lie, as sample indices.
    """

    def __init__(self, sr: int, fade_s: float = CROSSFADE_S, edge_s: float = SENTENCE_EDGE_S,
                 outer_s: float = OUTPUT_EDGE_S) -> None:
        self.sr, self.fade = sr, max(1, int(round(fade_s * sr)))
        self.hop = trim_hop(sr)
        self.edge_s, self.outer_s = edge_s, outer_s
        self._tail: np.ndarray | None = None  # held back from the previous sentence
        self._sentence = np.zeros(0, np.float32)  # the current sentence's samples so far
        self._begin: int | None = None  # its leading trim (None: not decided yet)
        self._done = 0  # how far its samples have gone out
        self._origin: int | None = None  # where its sample 0 lies in the output
        self.emitted = 0  # samples returned so far
        self.spans: list[tuple[int, int]] = []
        self.origins: list[int] = []

    def push(self, wav: np.ndarray, last: bool = False, pause_s: float = 0.0,
             breath: bool = False, start: bool = True, end: bool = True) -> np.ndarray:
        """Add a sentence, or a piece of one; return the samples now final.

        ``last``: this sentence ends the output. ``pause_s``: an inline pause after it (the
        silence to the next then lasts about ``pause_s``); ``breath``: with a soft breath
        noise in it. ``start`` / ``end``: this piece begins / ends its sentence (``last``,
        ``pause_s`` and ``breath`` are read on the piece that ends it).
        """
        wav = np.asarray(wav, np.float32)
        if start:
            self._sentence, self._begin, self._done, self._origin = wav, None, 0, None
        else:
            self._sentence = np.concatenate([self._sentence, wav])
        rms = frame_rms(self._sentence, self.hop)
        if self._begin is None:
            if not end and not (len(rms) and rms.max() > 10 ** (SILENCE_DBFS / 20)):
                return np.zeros(0, np.float32)  # silence so far: the trim waits
            keep = self.outer_s if self._tail is None else self.edge_s
            loud = loud_frames(rms)
            self._begin = self._done = (max(0, loud[0] * self.hop - int(keep * self.sr))
                                        if len(loud) else 0)
        if not end:
            loud = loud_frames(rms)
            return self._release((loud[-1] + 1) * self.hop - self.fade if len(loud) else 0)
        return self._finish(rms, last, pause_s, breath)

    def _release(self, until: int) -> np.ndarray:
        """The sentence's samples up to ``until``, after the previous sentence's tail (mixed
        into their start); nothing while they would be fewer than the tail."""
        need = max(1, len(self._tail)) if self._tail is not None else 1
        if until - self._done < need:
            return np.zeros(0, np.float32)
        head, body = self._mix(self._sentence[self._done:until])
        self._done = until
        return self._out([*head, body])

    def _finish(self, rms: np.ndarray, last: bool, pause_s: float,
                breath: bool) -> np.ndarray:
        """The sentence's end: trailing trim, the pause after it, the hold-back."""
        loud = loud_frames(rms)
        keep_end = int((self.outer_s if last else self.edge_s) * self.sr)
        stop = (min(len(self._sentence), (loud[-1] + 1) * self.hop + keep_end)
                if len(loud) else len(self._sentence))
        body = self._sentence[self._done:max(self._done, stop)]
        on, off = ((loud[0] * self.hop, min(len(self._sentence), (loud[-1] + 1) * self.hop))
                   if len(loud) else (self._begin or 0, len(self._sentence)))
        if pause_s > 0 and not last:
            gap = int(round(max(0.0, pause_s - 2 * self.edge_s) * self.sr))
            body = np.concatenate([body, breath_noise(gap, self.sr) if breath
                                   else np.zeros(gap, np.float32)])
        head, body = self._mix(body)
        origin = self._origin if self._origin is not None else 0
        self.spans.append((origin + on, origin + off))
        self.origins.append(origin)
        hold = 0 if last else min(self.fade, len(body))
        self._tail = body[len(body) - hold:] if not last else None
        self._sentence, self._done = np.zeros(0, np.float32), 0
        return self._out([*head, body[: len(body) - hold]])

    def _out(self, parts: list[np.ndarray]) -> np.ndarray:
        joined = np.concatenate(parts) if parts else np.zeros(0, np.float32)
        self.emitted += len(joined)
        return joined

    def _mix(self, body: np.ndarray) -> tuple[list[np.ndarray], np.ndarray]:
        """``(what goes before, the rest of body)``: the held tail cross-faded into body's
        first samples, if a tail is waiting. The sentence's first call places it in the
        output (``_origin``): body starts at sample ``_done`` of the sentence."""
        tail, self._tail = self._tail, None
        n = min(len(tail), len(body)) if tail is not None else 0
        if self._origin is None:
            held = len(tail) if tail is not None else 0
            self._origin = self.emitted + held - n - self._done
        if tail is None:
            return [], body
        head = [tail[: len(tail) - n]]
        if n:
            theta = (np.arange(n, dtype=np.float64) + 0.5) * (np.pi / 2 / n)
            mixed = tail[len(tail) - n:] * np.cos(theta) + body[:n] * np.sin(theta)
            head.append(mixed.astype(np.float32))
        return head, body[n:]


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


def trim_hop(sr: int) -> int:
    """The trim's frame: 10 ms."""
    return max(1, int(0.01 * sr))


def frame_rms(wav: np.ndarray, hop: int) -> np.ndarray:
    """RMS of each whole ``hop``-sample frame from the start (a partial last frame is left
    out)."""
    n = len(wav) // hop
    if n == 0:
        return np.zeros(0, np.float32)
    return np.sqrt(np.mean(wav[: n * hop].reshape(n, hop) ** 2, axis=1) + 1e-12)


def loud_frames(rms: np.ndarray, floor_db: float = TRIM_FLOOR_DB) -> np.ndarray:
    """Indices of the frames louder than ``floor_db`` below the loudest."""
    if not len(rms):
        return np.zeros(0, np.int64)
    return np.flatnonzero(20 * np.log10(rms / max(float(rms.max()), 1e-9)) > floor_db)


def trim_edges(wav: np.ndarray, sr: int, keep_s: float, floor_db: float = TRIM_FLOOR_DB,
                keep_end_s: float | None = None) -> np.ndarray:
    """Cut leading/trailing audio quieter than ``floor_db`` below the peak (10 ms frames),
    keeping ``keep_s`` before the first loud frame and ``keep_end_s`` (default the same)
    after the last."""
    lo, hi = trim_bounds(wav, sr, keep_s, floor_db, keep_end_s)
    return wav[lo:hi]


def trim_bounds(wav: np.ndarray, sr: int, keep_s: float, floor_db: float = TRIM_FLOOR_DB,
                keep_end_s: float | None = None) -> tuple[int, int]:
    """The ``(start, end)`` samples :func:`trim_edges` keeps."""
    hop = trim_hop(sr)
    loud = loud_frames(frame_rms(wav, hop), floor_db)
    if not len(loud):
        return 0, len(wav)
    keep = int(keep_s * sr)
    keep_end = keep if keep_end_s is None else int(keep_end_s * sr)
    return (max(0, int(loud[0]) * hop - keep),
            min(len(wav), (int(loud[-1]) + 1) * hop + keep_end))


def speech_bounds(wav: np.ndarray, sr: int, floor_db: float = TRIM_FLOOR_DB
                  ) -> tuple[int, int]:
    """``(start, end)`` samples of the first and last 10 ms frame louder than ``floor_db``
    below the peak (:func:`trim_edges`' rule); the whole clip when none is."""
    hop = trim_hop(sr)
    loud = loud_frames(frame_rms(wav, hop), floor_db)
    if not len(loud):
        return 0, len(wav)
    return int(loud[0]) * hop, min(len(wav), (int(loud[-1]) + 1) * hop)


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

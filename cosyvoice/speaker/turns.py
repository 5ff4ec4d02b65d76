"""Is a prompt one voice? Speaker embeddings over windows, split in two, compared.

The trimmed prompt is cut into 1.6 s windows (the encoder's partial utterance) every
0.2 s; a window counts when at least 60 % of it is speech (VAD), and only its speech frames
are embedded, so pauses and the silence between two recordings neither blur the picture
nor leave a speaker who pauses often without windows. The window embeddings are split
into two groups (two-means on the unit sphere, seeded with the least similar pair) and
the groups' mean embeddings compared by cosine similarity. Each window speaks for the
0.2 s at its centre, so the time ranges of the two groups never overlap.

Measured with the GE2E encoder (:mod:`cosyvoice.speaker.encoder`; ``bench/turns.py`` prints
the table): one person 0.73 and up (the real recordings shipped with gradio — Cate
Blanchett's clips alone 0.77–0.82, both joined 0.73, Heath Ledger 0.88–0.90 — and 12
Kokoro voices reading five sentences with pauses and changes of pace, 0.89–0.95); two
people 0.46–0.55 female + male (real, joined 50/50, 70/30 or taking turns), 0.44–0.65 a
real voice joined with a Kokoro voice of the same sex, 0.57–0.88 two Kokoro voices of the
same sex. Below :data:`ONE_VOICE_MIN` the prompt is refused; up to :data:`SAME_VOICE_NOTE`
it is accepted with a note. Two very similar voices (pairs of Kokoro's American women)
score like one real person and pass: GE2E alone cannot tell them apart.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from cosyvoice.audio.io import resample
from cosyvoice.errors import PromptError
from cosyvoice.speaker.encoder import SpeakerEncoder, normalize_volume
from cosyvoice.speaker.vad import SileroVad

ONE_VOICE_MIN = 0.70
SAME_VOICE_NOTE = 0.76
HOP_S = 0.2
MIN_SPEECH_SHARE = 0.6
MIN_GROUP = 5  # windows (1 s of centres): less (a laugh, a question) says nothing of a voice


@dataclass
class VoiceSplit:
    """The two groups of windows: similarity of their means, and their time ranges (s),
    which never overlap."""

    similarity: float
    main: list[tuple[float, float]]
    other: list[tuple[float, float]]


def windows(wav16: np.ndarray, vad: SileroVad, encoder: SpeakerEncoder
            ) -> tuple[np.ndarray, list[float]]:
    """Embeddings ``(W, E)`` of the windows that are mostly speech (their speech frames
    only), and their start times (s)."""
    cfg = encoder.config
    speech = np.zeros(len(wav16), dtype=bool)
    for s, e in vad.speech_segments(wav16):
        speech[s:e] = True
    mel = encoder.mel(torch.from_numpy(np.ascontiguousarray(
        normalize_volume(wav16, cfg.norm_target_dbfs))).to(encoder.device))
    n = mel.shape[0]  # frame f is centred on sample f * hop
    padded = np.pad(speech, (cfg.hop // 2, n * cfg.hop))[:n * cfg.hop]
    voiced = padded.reshape(n, cfg.hop).mean(axis=1) >= 0.5  # (n,) speech frames
    frames, step = cfg.partial_frames, max(1, round(HOP_S * cfg.sample_rate / cfg.hop))
    starts = [f for f in range(0, max(1, n - frames + 1), step)
              if voiced[f:f + frames].mean() >= MIN_SPEECH_SHARE]
    if len(starts) < 2:
        return np.zeros((0, cfg.embedding_size), np.float32), []
    device_mask = torch.from_numpy(voiced).to(encoder.device)
    stretches = [mel[f:f + frames][device_mask[f:f + frames]] for f in starts]
    with torch.inference_mode():
        emb = encoder.embed_each(stretches).cpu().numpy()
    return emb, [f * cfg.hop / cfg.sample_rate for f in starts]


def two_groups(emb: np.ndarray, iterations: int = 10) -> tuple[float, np.ndarray]:
    """Two-means of unit vectors ``(W, E)``: ``(cosine of the group means, labels (W,))``."""
    sim = emb @ emb.T
    i, j = np.unravel_index(int(np.argmin(sim)), sim.shape)
    centres = np.stack([emb[i], emb[j]])
    labels = np.zeros(len(emb), dtype=int)
    for _ in range(iterations):
        labels = np.argmax(emb @ centres.T, axis=1)
        if labels.min() == labels.max():
            return 1.0, labels
        centres = np.stack([emb[labels == k].mean(axis=0) for k in (0, 1)])
        centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    return float(centres[0] @ centres[1]), labels


def _ranges(centres: list[float], step: float, bridge: float = 0.0
            ) -> list[tuple[float, float]]:
    """Merge the slices ``[c - step / 2, c + step / 2)`` (sorted centres) into ranges,
    bridging gaps up to ``bridge`` s."""
    out: list[tuple[float, float]] = []
    for c in centres:
        a, b = max(c - step / 2, 0.0), c + step / 2
        if out and a <= out[-1][1] + bridge + 1e-9:
            out[-1] = (out[-1][0], b)
        else:
            out.append((a, b))
    return out


def split_voices(mono: np.ndarray, sr: int, vad: SileroVad, encoder: SpeakerEncoder
                 ) -> VoiceSplit | None:
    """The prompt's two most different groups of windows, or None if too short to say."""
    wav16 = resample(mono, sr, encoder.config.sample_rate)
    emb, starts = windows(wav16, vad, encoder)
    if len(starts) < 2:
        return None
    similarity, labels = two_groups(emb)
    if min(np.count_nonzero(labels == 0), np.count_nonzero(labels == 1)) < MIN_GROUP:
        similarity = 1.0  # one group is a stray window or two: nothing to compare
    cfg = encoder.config
    half = cfg.partial_frames * cfg.hop / cfg.sample_rate / 2
    centres = [s + half for s in starts]
    main = int(np.count_nonzero(labels == 1) > np.count_nonzero(labels == 0))
    mine = [c for c, k in zip(centres, labels, strict=True) if k == main]
    theirs = [c for c, k in zip(centres, labels, strict=True) if k != main]
    # Short gaps (a window with too little speech) are bridged in the main voice's ranges
    # only, and never across the other voice's time: the two never overlap.
    other = _ranges(theirs, HOP_S)
    return VoiceSplit(similarity, _without(_ranges(mine, HOP_S, 2 * HOP_S), other), other)


def _without(ranges: list[tuple[float, float]], cut: list[tuple[float, float]]
             ) -> list[tuple[float, float]]:
    """``ranges`` minus every range of ``cut``."""
    out = list(ranges)
    for c0, c1 in cut:
        pieces = []
        for a, b in out:
            if b <= c0 or a >= c1:
                pieces.append((a, b))
                continue
            if a < c0:
                pieces.append((a, c0))
            if b > c1:
                pieces.append((c1, b))
        out = pieces
    return out


def _clock(ranges: list[tuple[float, float]]) -> str:
    return ", ".join(f"{a:.1f}–{b:.1f} s" for a, b in ranges)


def check_one_voice(mono: np.ndarray, sr: int, vad: SileroVad, encoder: SpeakerEncoder,
                    notes: list[str]) -> None:
    """Raise PromptError when the prompt holds two voices; note a borderline one."""
    split = split_voices(mono, sr, vad, encoder)
    if split is None or split.similarity >= SAME_VOICE_NOTE:
        return
    where = (f"{_clock(split.other)} sounds like a different speaker from "
             f"{_clock(split.main)} (voice similarity {split.similarity:.2f}; one person "
             f"scores above {SAME_VOICE_NOTE:.2f})")
    if split.similarity < ONE_VOICE_MIN:
        raise PromptError(f"the prompt seems to hold more than one voice: {where} — "
                          "upload a recording of one person speaking, or cut it to one "
                          "speaker's part")
    notes.append(f"parts of the prompt sound like different voices: {where}; if two people "
                 "speak in it, cut it to one")

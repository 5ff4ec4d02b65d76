"""Is a prompt one voice? Speaker embeddings over windows, split in two, compared.

The trimmed prompt is cut into 1.6 s windows (the encoder's partial utterance) every
0.4 s; only windows that are nearly all speech (VAD) count, so pauses and the silence
between two recordings do not blur the picture. The window embeddings are split into
two groups (two-means on the unit sphere, seeded with the least similar pair) and the
groups' mean embeddings compared by cosine similarity.

Measured with the GE2E encoder (:mod:`cosyvoice.speaker.encoder`) on the real recordings
shipped with gradio and on the bundled voices: one recording of one person 0.82–0.95
(Cate Blanchett's two clips, Heath Ledger's, Joe, Baker); one person in two different
recordings joined 0.68; two people joined or taking turns 0.38–0.55 (female + male,
male + male, female + female). Below :data:`ONE_VOICE_MIN` the prompt is refused; up to
:data:`SAME_VOICE_NOTE` it is accepted with a note.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from cosyvoice.audio.io import resample
from cosyvoice.errors import PromptError
from cosyvoice.speaker.encoder import SpeakerEncoder, normalize_volume
from cosyvoice.speaker.vad import SileroVad

ONE_VOICE_MIN = 0.60
SAME_VOICE_NOTE = 0.72
HOP_S = 0.4
MIN_SPEECH_SHARE = 0.85


@dataclass
class VoiceSplit:
    """The two groups of windows: similarity of their means, and their time ranges (s)."""

    similarity: float
    main: list[tuple[float, float]]
    other: list[tuple[float, float]]


def windows(wav16: np.ndarray, vad: SileroVad, encoder: SpeakerEncoder
            ) -> tuple[np.ndarray, list[float]]:
    """Embeddings ``(W, E)`` of the mostly-speech windows, and their start times (s)."""
    cfg = encoder.config
    speech = np.zeros(len(wav16), dtype=bool)
    for s, e in vad.speech_segments(wav16):
        speech[s:e] = True
    mel = encoder.mel(torch.from_numpy(np.ascontiguousarray(
        normalize_volume(wav16, cfg.norm_target_dbfs))).to(encoder.device))
    frames, step = cfg.partial_frames, max(1, round(HOP_S * cfg.sample_rate / cfg.hop))
    starts = [f for f in range(0, max(1, mel.shape[0] - frames + 1), step)
              if speech[f * cfg.hop:(f + frames) * cfg.hop].mean() >= MIN_SPEECH_SHARE]
    if len(starts) < 2:
        return np.zeros((0, cfg.embedding_size), np.float32), []
    index = torch.as_tensor(starts, device=encoder.device)[:, None] + torch.arange(
        frames, device=encoder.device)
    with torch.inference_mode():
        emb = encoder(mel[index]).cpu().numpy()
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


def _ranges(starts: list[float], span: float) -> list[tuple[float, float]]:
    """Merge windows ``[start, start + span)`` into ranges."""
    out: list[tuple[float, float]] = []
    for s in starts:
        if out and s <= out[-1][1]:
            out[-1] = (out[-1][0], s + span)
        else:
            out.append((s, s + span))
    return out


def split_voices(mono: np.ndarray, sr: int, vad: SileroVad, encoder: SpeakerEncoder
                 ) -> VoiceSplit | None:
    """The prompt's two most different groups of windows, or None if too short to say."""
    wav16 = resample(mono, sr, encoder.config.sample_rate)
    emb, starts = windows(wav16, vad, encoder)
    if len(starts) < 2:
        return None
    similarity, labels = two_groups(emb)
    span = encoder.config.partial_frames * encoder.config.hop / encoder.config.sample_rate
    main = int(np.count_nonzero(labels == 1) > np.count_nonzero(labels == 0))
    return VoiceSplit(similarity,
                      _ranges([s for s, k in zip(starts, labels, strict=True) if k == main],
                              span),
                      _ranges([s for s, k in zip(starts, labels, strict=True) if k != main],
                              span))


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

"""The objective of voice fitting: how well a candidate style pack speaks like the prompt.

A candidate speaks a few short texts (never the prompt's own words: a fitted voice must
sound like the speaker on any text). Each output is read by the app's GE2E encoder and by
Praat's pitch tracker, and the score combines (weights in :class:`ScoreWeights`):

- ``sim``   mean cosine of the outputs' GE2E embeddings to the prompt's (the fit part of
            the prompt when it is split, see :class:`PromptTarget`); an output is first
            brought to the prompt's sample rate when that is below the encoder's 16 kHz
            (a telephone prompt is compared like with like: the voice is not asked to
            copy the missing band);
- ``check`` the same against the part of the prompt the fit does not score (reported,
            used to choose when to stop, never optimised);
- ``f0``    the output's median F0 against the prompt's, in semitones: a penalty past a
            tolerance (a sex flip is 5+ semitones; encoders barely notice it);
- ``env``   distance of the outputs' long-term spectral envelope (mean log-mel over voiced
            frames, the voice profile's, each with its mean level removed) from the
            prompt's: RMS in natural-log units (measured only when its weight is not 0);
- ``self``  cosine between the outputs of two texts: a voice that stays itself;
- ``prior`` the squared size of ``theta``: stay near the stock packs.

GE2E can be optimised; the independent d-vector judge of the bench never enters here.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field

import numpy as np

from cosyvoice.audio.io import resample
from cosyvoice.errors import PromptError
from cosyvoice.voice.profile import pitch_and_envelope, voiced_f0

logger = logging.getLogger(__name__)

F0_SR = 16000  # pitch is tracked at this rate (what GE2E hears too)
MIN_VOICED = 20  # 10 ms frames: 0.2 s of voicing to call a pitch


def semitones(a_hz: float, b_hz: float) -> float:
    """``b`` above ``a`` in semitones."""
    return 12.0 * float(np.log2(b_hz / a_hz))


def median_f0(wav: np.ndarray, sr: int) -> float | None:
    """Median F0 (Hz) of the voiced speech of ``(T,)``; None with too little voicing."""
    f0 = voiced_f0(resample(np.asarray(wav, np.float32).reshape(-1), sr, F0_SR), F0_SR)
    return float(np.median(f0)) if len(f0) >= MIN_VOICED else None


def split_at_pause(wav: np.ndarray, sr: int) -> tuple[np.ndarray, np.ndarray]:
    """Cut ``(T,)`` at its quietest 50 ms frame of the middle third → two parts."""
    hop = max(1, int(0.05 * sr))
    n = len(wav) // hop
    energy = np.mean(np.asarray(wav[: n * hop], np.float64).reshape(n, hop) ** 2, axis=1)
    lo, hi = n // 3, max(n // 3 + 1, 2 * n // 3)
    cut = (lo + int(np.argmin(energy[lo:hi]))) * hop + hop // 2
    return wav[:cut], wav[cut:]


@dataclass
class PromptTarget:
    """What the fit aims at, measured once on the prompt: GE2E embeddings (``fit``: of the
    part the fit scores; ``check``: of the part it does not, or None when the prompt was
    too short to split) and the median F0."""

    fit: np.ndarray  # (E,) unit
    check: np.ndarray | None
    f0_hz: float
    whole: np.ndarray  # (E,) unit, the whole prompt
    sr: int = F0_SR  # the prompt's sample rate (its band)
    envelope: np.ndarray | None = None  # (n_mels,) mean voiced log-mel, level removed

    @classmethod
    def measure(cls, wav: np.ndarray, sr: int, encoder, split_min_s: float = 6.0
                ) -> PromptTarget:
        """Raises :class:`PromptError` for a prompt without enough voiced speech."""
        wav = np.asarray(wav, np.float32).reshape(-1)
        f0 = median_f0(wav, sr)
        if f0 is None:
            raise PromptError("the prompt has too little voiced speech to fit a voice to; "
                              "use a clear recording of one person speaking for 3–30 s")
        whole = encoder.embed(wav, sr)
        env = level_free(pitch_and_envelope(wav, sr)[1])
        if len(wav) / sr < split_min_s:
            return cls(whole, None, f0, whole, int(sr), env)
        a, b = split_at_pause(wav, sr)
        return cls(encoder.embed(a, sr), encoder.embed(b, sr), f0, whole, int(sr), env)

    def embed(self, wav: np.ndarray, sr: int, encoder) -> np.ndarray:
        """An output's embedding, heard through the prompt's band (see the module doc)."""
        if self.sr < min(sr, F0_SR):
            return encoder.embed(resample(wav, sr, self.sr), self.sr)
        return encoder.embed(wav, sr)


def level_free(envelope: np.ndarray) -> np.ndarray:
    """An envelope with its mean removed (loudness is not a voice)."""
    e = np.asarray(envelope, np.float64)
    return e - e.mean()


def envelope_distance(a: np.ndarray, b: np.ndarray, bandwidth_bins: int | None = None
                      ) -> float:
    """RMS difference of two level-free envelopes over their first ``bandwidth_bins``."""
    n = bandwidth_bins or len(a)
    return float(np.sqrt(np.mean((level_free(a[:n]) - level_free(b[:n])) ** 2)))


@dataclass
class ScoreWeights:
    """How the terms add up (see the module docstring); ``f0_tol_st``: no penalty within
    this many semitones of the prompt's median F0."""

    sim: float = 1.0
    f0: float = 0.02
    f0_tol_st: float = 1.0
    self_sim: float = 0.0
    prior: float = 0.0
    envelope: float = 0.0

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class Score:
    """One candidate's score and its terms."""

    total: float
    sim: float
    check: float | None
    f0_st: float | None  # output median F0 re the prompt's, semitones
    self_sim: float
    prior: float
    env: float | None = None
    parts: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        d = asdict(self)
        return {k: (round(v, 5) if isinstance(v, float) else v) for k, v in d.items()}


def score_outputs(wavs: list[np.ndarray], sr: int, theta: np.ndarray, target: PromptTarget,
                  encoder, weights: ScoreWeights) -> Score:
    """Score the candidate ``theta`` from its outputs ``wavs`` (one per fit text)."""
    embs = [target.embed(w, sr, encoder) for w in wavs]
    sim = float(np.mean([e @ target.fit for e in embs]))
    check = (float(np.mean([e @ target.check for e in embs]))
             if target.check is not None else None)
    env = None
    if weights.envelope and target.envelope is not None:
        voiced, envelope = pitch_and_envelope(np.concatenate(wavs), sr)
        f0 = float(np.median(voiced)) if len(voiced) >= MIN_VOICED else None
        env = envelope_distance(envelope, target.envelope, envelope_bins(target.sr))
    else:
        f0 = median_f0(np.concatenate(wavs), sr)
    f0_st = semitones(target.f0_hz, f0) if f0 is not None else None
    miss = abs(f0_st) if f0_st is not None else 12.0  # no pitch at all: a broken voice
    f0_pen = max(0.0, miss - weights.f0_tol_st) ** 2
    self_sim = float(np.mean([embs[i] @ embs[j] for i in range(len(embs))
                              for j in range(i + 1, len(embs))])) if len(embs) > 1 else 1.0
    prior = float(np.mean(np.square(theta))) if len(theta) else 0.0
    total = (weights.sim * sim - weights.f0 * f0_pen + weights.self_sim * self_sim
             - weights.prior * prior - weights.envelope * (env or 0.0))
    return Score(total, sim, check, f0_st, self_sim, prior, env)


def envelope_bins(prompt_sr: int) -> int | None:
    """Mel bins of the profile's analyzer below the prompt's Nyquist (a telephone prompt
    has no envelope above 4 kHz to match); None: all."""
    from cosyvoice.audio.mel import MelConfig

    cfg = MelConfig()
    top = cfg.fmax or cfg.sample_rate / 2
    if prompt_sr / 2 >= top:
        return None
    import librosa

    edges = librosa.mel_frequencies(cfg.n_mels + 2, fmin=cfg.fmin, fmax=top)
    return max(1, int(np.searchsorted(edges[2:], prompt_sr / 2)))

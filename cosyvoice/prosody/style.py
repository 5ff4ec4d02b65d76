"""Speaking style from an instruction: emotion → prosody numbers, and how they are applied.

An emotion is rendered by five prosodic moves, relative to the voice's neutral reading:

- ``f0_level_st``  F0 median shift, semitones;
- ``f0_range``     factor on the F0 excursions around the median;
- ``rate``         speaking-rate factor (> 1 faster);
- ``energy_db``    loudness change, dB;
- ``tilt_db_oct``  spectral tilt change above 1 kHz, dB per octave (> 0 brighter/tenser).

The default table (:data:`DEFAULT_EMOTIONS`) turns the directions and rough magnitudes of
published emotional-prosody rules into numbers:

- I. R. Murray & J. L. Arnott (1993), "Toward the simulation of emotion in synthetic
  speech: a review of the literature on human vocal emotion", JASA 93(2), Table I: anger
  slightly faster, pitch very much higher, range much wider, higher intensity; happiness
  faster, pitch much higher, range much wider, higher intensity; sadness slightly slower,
  slightly lower, narrower range, lower intensity; fear much faster, pitch very much
  higher, range much wider; disgust very much slower, very much lower pitch, lower
  intensity.
- M. Schröder (2001), "Emotional speech synthesis: a review", Eurospeech, Table 1 (rule
  sets of Cahn, Murray & Arnott, Burkhardt & Sendlmeier): surprise with high, wide F0;
  tenderness / calm low-to-mid, narrow, slow and soft; boredom lower, narrower, slower.
- R. Banse & K. R. Scherer (1996), "Acoustic profiles in vocal emotion expression",
  JPSP 70(3): hot anger, panic fear and elation raise mean F0 and energy and flatten the
  spectral slope (more high-frequency energy); sadness, contempt and boredom lower them
  and steepen it.

Our magnitudes are moderate (a few semitones, ±5 dB, ±15 % rate) so the synthetic voices
stay natural; every direction was measured on the output (bench/emotions.py, retired:
bench/README.md, 129 / 129 cells). The table is
a setting: ``emotion_rules`` (``COSYVOICE_EMOTION_RULES``) names a JSON file whose entries
override the defaults, e.g. ``{"happy": {"f0_level_st": 4.0, "rate": 1.1}}``.

Applying: Mandarin runs get the F0 level as a FastSpeech2 scalar
(:class:`~cosyvoice.acoustic.mandarin.ProsodyControls` ``pitch_shift`` in corpus-std
units), merged with a dialect's tone controls, and the F0 range by PSOLA after synthesis;
English runs (Piper) and cloned output get both by PSOLA after synthesis (Praat's
Manipulation: every pitch point moved in log-frequency around the median). Rate goes to
the backend's ``speed`` (Piper's length scale, FastSpeech2's durations) for every run.
Energy, volume and tilt are a post-process on the waveform for every run: a zero-phase
spectral shelf, a gain, and a look-ahead peak limiter so a louder result never clips.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

import numpy as np

from cosyvoice.config import dataclass_from_dict
from cosyvoice.errors import CosyVoiceError
from cosyvoice.prosody.instruct import Instruction

logger = logging.getLogger(__name__)

# FastSpeech2 (Baker) F0 is z-scored in Hz (≈ 37 Hz per std); measured here, +1 std of
# pitch_shift moved the output median by +2.9 st on the 40-syllable calibration passage and
# +1.0 std by +1.7 st on a 7-syllable sentence: 2.3 st per std lies between.
ST_PER_F0_Z = 2.3
MAX_F0_Z_SHIFT = 2.0  # beyond ±2 std the model's F0 embedding is out of range: PSOLA the rest
# Lowering Baker's pitch by ``pitch_shift`` z < 0 also narrows its 5–95 % F0 range, by
# about 13 % per std (two sentences, median-of-voiced-frames measure of bench/emotions.py, retired:
# z −0.5 → ×0.96, −1 → ×0.85, −1.5 → ×0.82, −2 → ×0.75); raising it leaves the range
# within ±10 % with no trend. The PSOLA range factor of :meth:`Style.post` divides this out,
# so that a lowered emotion (disgust: −2 st, ×1.1) still gets the range it asks for.
ZH_RANGE_PER_NEG_Z = 0.13
TILT_PIVOT_HZ = 1000.0
TILT_MAX_DB = 9.0
LIMIT_CEILING = 0.95  # peak after the limiter (linear full scale)
LIMIT_WINDOW_S = 0.005


@dataclass(frozen=True)
class EmotionStyle:
    """Prosody of one emotion relative to neutral (see the module docstring for units)."""

    f0_level_st: float = 0.0
    f0_range: float = 1.0
    rate: float = 1.0
    energy_db: float = 0.0
    tilt_db_oct: float = 0.0

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> EmotionStyle:
        return dataclass_from_dict(cls, d, convert=float, unknown_error=StyleError,
                                   what="emotion-rule")

    def to_dict(self) -> dict[str, float]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def scaled(self, intensity: float) -> EmotionStyle:
        """Deviations scaled by ``intensity`` (0.5 "a bit", 1.5 "very"); factors as powers."""
        k = float(intensity)
        return EmotionStyle(self.f0_level_st * k, self.f0_range ** k, self.rate ** k,
                            self.energy_db * k, self.tilt_db_oct * k)


class StyleError(CosyVoiceError):
    """The emotion-rule file is unreadable or malformed."""


# Directions from Murray & Arnott 1993 (Table I), Schröder 2001 (Table 1), Banse & Scherer
# 1996; magnitudes ours (moderate), checked by bench/emotions.py (retired).
DEFAULT_EMOTIONS: dict[str, EmotionStyle] = {
    "happy": EmotionStyle(f0_level_st=3.0, f0_range=1.3, rate=1.08, energy_db=2.0,
                          tilt_db_oct=1.0),
    "sad": EmotionStyle(f0_level_st=-2.0, f0_range=0.7, rate=0.85, energy_db=-4.0,
                        tilt_db_oct=-2.0),
    "angry": EmotionStyle(f0_level_st=2.0, f0_range=1.4, rate=1.1, energy_db=5.0,
                          tilt_db_oct=2.0),
    "surprised": EmotionStyle(f0_level_st=4.0, f0_range=1.5, rate=1.0, energy_db=2.0,
                              tilt_db_oct=1.0),
    "fearful": EmotionStyle(f0_level_st=3.5, f0_range=1.2, rate=1.15, energy_db=0.0,
                            tilt_db_oct=0.5),
    "disgusted": EmotionStyle(f0_level_st=-2.0, f0_range=1.1, rate=0.85, energy_db=-2.0,
                              tilt_db_oct=-1.0),
    "calm": EmotionStyle(f0_level_st=-1.0, f0_range=0.8, rate=0.92, energy_db=-2.0,
                         tilt_db_oct=-1.0),
    "gentle": EmotionStyle(f0_level_st=-1.0, f0_range=0.85, rate=0.9, energy_db=-4.0,
                           tilt_db_oct=-2.0),
    "excited": EmotionStyle(f0_level_st=4.0, f0_range=1.4, rate=1.15, energy_db=4.0,
                            tilt_db_oct=1.5),
    "serious": EmotionStyle(f0_level_st=-1.5, f0_range=0.75, rate=0.92, energy_db=0.0,
                            tilt_db_oct=0.0),
}


def load_emotion_rules(path: str | Path | None) -> dict[str, EmotionStyle]:
    """The built-in table, with the entries of the JSON file ``path`` (if any) on top."""
    table = dict(DEFAULT_EMOTIONS)
    if not path:
        return table
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise StyleError(f"cannot read the emotion rules {path}: {e}") from e
    if not isinstance(data, dict):
        raise StyleError(f"{path}: expected a JSON object of emotion → fields")
    for name, entry in data.items():
        if not isinstance(entry, dict):
            raise StyleError(f"{path}: {name!r} must be an object of numbers")
        base = table.get(name, EmotionStyle()).to_dict()
        table[name] = EmotionStyle.from_dict({**base, **entry})
    logger.info("emotion rules from %s (%d emotions)", path, len(table))
    return table


@dataclass(frozen=True)
class Style:
    """Everything one request's instruction does to the audio, in applied units.

    ``pitch_st`` and ``range_factor`` cover emotion and the instruction's pitch; ``rate``
    multiplies the request's speed; ``gain_db`` is emotion energy plus volume.
    """

    pitch_st: float = 0.0
    range_factor: float = 1.0
    rate: float = 1.0
    gain_db: float = 0.0
    tilt_db_oct: float = 0.0
    dialect: str | None = None

    @classmethod
    def from_instruction(cls, ins: Instruction, table: Mapping[str, EmotionStyle]
                         ) -> Style:
        emo = EmotionStyle()
        if ins.emotion is not None:
            emo = table.get(ins.emotion, EmotionStyle()).scaled(ins.intensity)
        return cls(pitch_st=emo.f0_level_st + ins.pitch, range_factor=emo.f0_range,
                   rate=emo.rate * ins.speed,
                   gain_db=emo.energy_db + 20 * math.log10(max(ins.volume, 1e-6)),
                   tilt_db_oct=emo.tilt_db_oct, dialect=ins.dialect)

    @property
    def changes_pitch(self) -> bool:
        return abs(self.pitch_st) > 1e-6 or abs(self.range_factor - 1.0) > 1e-6

    @property
    def changes_level(self) -> bool:
        return abs(self.gain_db) > 1e-6 or abs(self.tilt_db_oct) > 1e-6

    # ---- Mandarin: FastSpeech2 scalars --------------------------------------------------
    def mandarin_split(self) -> tuple[float, float]:
        """(pitch_shift in corpus-std units, semitones left for PSOLA)."""
        z = float(np.clip(self.pitch_st / ST_PER_F0_Z, -MAX_F0_Z_SHIFT, MAX_F0_Z_SHIFT))
        return z, self.pitch_st - z * ST_PER_F0_Z

    def acoustic_controls(self):
        """ProsodyControls carrying this style's F0 level (model units). The range goes by
        PSOLA in :meth:`post`: ``pitch_scale`` 1.3 widened the measured 5–95 % range of
        Baker's output by only ×1.02 (bench/emotions.py, retired), PSOLA by the factor asked."""
        from cosyvoice.acoustic.mandarin import ProsodyControls

        z, _ = self.mandarin_split()
        return ProsodyControls(pitch_shift=z)

    # ---- waveform post-process ----------------------------------------------------------
    def post(self, wav: np.ndarray, sr: int, pitch_done: bool = False) -> np.ndarray:
        """Apply what the backend did not: F0 (unless ``pitch_done``; Mandarin runs only get
        the part past the model's range), tilt, gain, limiter. ``wav`` (T,) → (T,)."""
        y = np.asarray(wav, dtype=np.float32)
        if pitch_done:
            z, rest = self.mandarin_split()
            factor = self.range_factor / model_range_response(z)
            if abs(rest) > 1e-3 or abs(factor - 1.0) > 1e-6:
                y = shift_pitch(y, sr, rest, factor)
        elif self.changes_pitch:
            y = shift_pitch(y, sr, self.pitch_st, self.range_factor)
        if self.changes_level:
            y = apply_tilt(y, sr, self.tilt_db_oct)
            y = limit_peaks(y * np.float32(10 ** (self.gain_db / 20)), sr)
        return y


def model_range_response(z: float) -> float:
    """How much Baker's F0 range (5–95 %) shrinks when its pitch is moved by ``z`` std:
    ``1 + ZH_RANGE_PER_NEG_Z·z`` below 0 (floored at 0.5), 1 above."""
    return max(0.5, 1.0 + ZH_RANGE_PER_NEG_Z * min(float(z), 0.0))


def merge_controls(emotion, dialect):
    """One ProsodyControls from an emotion's scalars and a dialect's tone controls.

    The dialect supplies per-phone arrays/callables (its F0 contour, tone map); the
    emotion supplies ``pitch_scale``/``pitch_shift``/``energy_scale``, combined with any
    the dialect set (scales multiply, shifts add).
    """
    if dialect is None:
        return emotion
    if emotion is None:
        return dialect
    return replace(dialect, pitch_scale=dialect.pitch_scale * emotion.pitch_scale,
                   pitch_shift=dialect.pitch_shift + emotion.pitch_shift,
                   energy_scale=dialect.energy_scale * emotion.energy_scale,
                   durations=dialect.durations if dialect.durations is not None
                   else emotion.durations,
                   energy=dialect.energy if dialect.energy is not None else emotion.energy)


def shift_pitch(wav: np.ndarray, sr: int, semitones: float, range_factor: float,
                floor_hz: float = 60.0, ceiling_hz: float = 600.0) -> np.ndarray:
    """PSOLA: every F0 point moved in log-frequency, ``f' = m·2^(st/12)·(f/m)^range`` with
    ``m`` the utterance's median, so the median rises by ``semitones`` and the excursions
    (in semitones) scale by ``range_factor``; same length. (Praat's *Change gender* scales
    the range in Hz and fails — "undefined" — once a widened low point passes 0 Hz.)"""
    import parselmouth
    from parselmouth.praat import call
    from parselmouth.praat import run as run_script

    from cosyvoice.voice.adapter import _PRAAT_RANDOM, PSOLA_SEED

    x = np.asarray(wav, dtype=np.float64)
    snd = parselmouth.Sound(x, sampling_frequency=sr)
    with _PRAAT_RANDOM:  # Praat's overlap-add is random: seed it (reproducible output)
        run_script(f"random_initializeWithSeedUnsafelyButPredictably ({PSOLA_SEED})")
        manip = call(snd, "To Manipulation", 0.01, floor_hz, ceiling_hz)
        own = call(manip, "Extract pitch tier")
        n = int(call(own, "Get number of points"))
        if n < 5:
            return np.asarray(wav, dtype=np.float32)  # nothing voiced to move
        times = [call(own, "Get time from index", k) for k in range(1, n + 1)]
        hz = np.array([call(own, "Get value at index", k) for k in range(1, n + 1)])
        m = float(np.median(hz))
        new = m * 2 ** (semitones / 12) * (hz / m) ** float(range_factor)
        new = np.clip(new, 0.5 * floor_hz, 2 * ceiling_hz)
        tier = call("Create PitchTier", "style", snd.xmin, snd.xmax)
        for t, f in zip(times, new.tolist(), strict=True):
            call(tier, "Add point", t, f)
        call([manip, tier], "Replace pitch tier")
        out = call(manip, "Get resynthesis (overlap-add)")
    y = np.asarray(out.values[0], dtype=np.float32)
    return y[: len(x)] if len(y) >= len(x) else np.pad(y, (0, len(x) - len(y)))


def apply_tilt(wav: np.ndarray, sr: int, db_per_oct: float) -> np.ndarray:
    """Zero-phase shelf: gain 0 dB below TILT_PIVOT_HZ, ``db_per_oct`` per octave above
    (capped at ±TILT_MAX_DB); RMS kept, so tilt changes colour, not loudness."""
    if abs(db_per_oct) < 1e-6 or len(wav) < 2:
        return np.asarray(wav, dtype=np.float32)
    x = np.asarray(wav, dtype=np.float64)
    spec = np.fft.rfft(x)
    freqs = np.fft.rfftfreq(len(x), 1.0 / sr)
    octaves = np.log2(np.maximum(freqs, TILT_PIVOT_HZ) / TILT_PIVOT_HZ)
    gain_db = np.clip(db_per_oct * octaves, -TILT_MAX_DB, TILT_MAX_DB)
    y = np.fft.irfft(spec * 10 ** (gain_db / 20), n=len(x))
    rms_in, rms_out = np.sqrt(np.mean(x ** 2)), np.sqrt(np.mean(y ** 2))
    if rms_out > 1e-12:
        y *= rms_in / rms_out
    return y.astype(np.float32)


def limit_peaks(wav: np.ndarray, sr: int, ceiling: float = LIMIT_CEILING) -> np.ndarray:
    """Look-ahead peak limiter: a smooth gain that keeps every |sample| ≤ ``ceiling``.

    The needed gain per sample is min-filtered over ±w and then averaged over w: every
    averaged value is a mean of minima over windows that contain the sample, so it never
    exceeds the gain that sample needs (no overs), and it ramps over w (no clicks).
    """
    from scipy.ndimage import minimum_filter1d, uniform_filter1d

    x = np.asarray(wav, dtype=np.float32)
    if not len(x) or float(np.max(np.abs(x))) <= ceiling:
        return x
    w = max(1, int(LIMIT_WINDOW_S * sr))
    need = np.minimum(1.0, ceiling / np.maximum(np.abs(x), 1e-9))
    gain = uniform_filter1d(minimum_filter1d(need, 2 * w + 1, mode="nearest"), w + 1 - (w % 2),
                            mode="nearest")
    y = x * gain.astype(np.float32)
    return np.clip(y, -ceiling, ceiling)  # float rounding only: the bound holds already

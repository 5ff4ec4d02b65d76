"""The voice profile of a recording: what the adapter moves a synthetic voice toward.

A :class:`VoiceProfile` is a handful of long-term statistics measured on a prompt (or on
synthesized speech), all JSON-serializable so a voice can be saved and reused:

- pitch: median F0 and its 5th / 95th percentiles (Praat autocorrelation pitch),
- voiced fraction of the active (non-silent) frames,
- formants: medians of F1, F2, F3 over voiced frames (Praat Burg, ceiling 5500 Hz);
  the ratio of two profiles' formants estimates their vocal-tract-length ratio,
- long-term spectral envelope: mean and standard deviation of the HiFi-GAN log-mel
  (80 bins) over voiced frames, plus the prompt's usable bandwidth (a telephone prompt
  has nothing above 4 kHz, and the adapter must not copy that hole),
- speaking rate: syllable nuclei per second of speech (intensity peaks in voiced
  frames, after de Jong & Wempe 2009) and the active-speech ratio.

Everything is measured at the mel analyzer's sample rate (22.05 kHz by default).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from cosyvoice.audio.io import resample
from cosyvoice.config import dataclass_from_dict
from cosyvoice.errors import PromptError

if TYPE_CHECKING:  # torch: imported where a profile is measured, not where one is read
    from cosyvoice.audio.mel import MelAnalyzer

logger = logging.getLogger(__name__)

FRAME_S = 0.01  # pitch / formant / intensity time step
PITCH_FLOOR_HZ = 60.0
PITCH_CEILING_HZ = 500.0
FORMANT_CEILING_HZ = 5500.0
ACTIVE_DB = 35.0  # frames within this many dB of the loudest count as active
MIN_VOICED_FRAMES = 20  # 0.2 s of voicing
_NUMBER_FIELDS = ("f0_median_hz", "f0_low_hz", "f0_high_hz", "voiced_fraction", "bandwidth_hz",
                  "syllable_rate", "speech_ratio", "sample_rate", "duration_s", "version")


@dataclass
class VoiceProfile:
    """Long-term voice statistics of one recording (see the module docstring)."""

    f0_median_hz: float
    f0_low_hz: float  # 5th percentile
    f0_high_hz: float  # 95th percentile
    voiced_fraction: float
    formants_hz: list[float]  # medians of F1, F2, F3
    mel_mean: list[float]  # (n_mels,) mean log-mel over voiced frames
    mel_std: list[float]  # (n_mels,) its standard deviation
    bandwidth_hz: float  # highest frequency the recording carries
    syllable_rate: float  # syllable nuclei per second of active speech
    speech_ratio: float  # active frames / all frames
    sample_rate: int  # of the source recording
    duration_s: float
    version: int = 1
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def f0_range_st(self) -> float:
        """5–95 percentile pitch range in semitones."""
        return 12.0 * float(np.log2(self.f0_high_hz / self.f0_low_hz))

    @property
    def f0_median_st(self) -> float:
        """Median F0 in semitones re 1 Hz (differences of these are pitch shifts)."""
        return 12.0 * float(np.log2(self.f0_median_hz))

    def formant_ratio(self, other: VoiceProfile) -> float:
        """Geometric mean of ``other``'s formants over this profile's (≈ 1 / VTL ratio)."""
        a, b = np.asarray(self.formants_hz), np.asarray(other.formants_hz)
        return float(np.exp(np.mean(np.log(b / a))))

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> VoiceProfile:
        """Inverse of :meth:`to_dict`; unknown keys are ignored; a missing key or a value of
        the wrong type (a profile read back from a damaged file) raises PromptError."""
        try:
            profile = dataclass_from_dict(cls, d)
        except TypeError as e:
            raise PromptError(f"saved voice profile is incomplete: {e}") from e
        profile._check_types()
        return profile

    def _check_types(self) -> None:
        def number(x: Any) -> bool:
            return isinstance(x, int | float) and not isinstance(x, bool)

        bad = [f.name for f in dataclasses.fields(self) if f.name in _NUMBER_FIELDS
               and not number(getattr(self, f.name))]
        bad += [name for name in ("formants_hz", "mel_mean", "mel_std")
                if not isinstance(getattr(self, name), list)
                or not all(map(number, getattr(self, name)))]
        if not isinstance(self.extra, dict):
            bad.append("extra")
        if not bad and len(self.formants_hz) != 3:  # (the adapter checks the mel bins)
            bad.append("formants_hz (three values)")
        if bad:
            raise PromptError(f"saved voice profile has wrong values: {', '.join(bad)}")

    @classmethod
    def from_audio(cls, wav: np.ndarray, sr: int,
                   mel: MelAnalyzer | None = None) -> VoiceProfile:
        """Measure a mono recording ``(T,)`` at ``sr``.

        Raises :class:`PromptError` when it holds too little voiced speech to measure.
        """
        mel = mel or _analyzer()
        rate = mel.config.sample_rate
        x = resample(np.asarray(wav, dtype=np.float32).reshape(-1), sr, rate)
        f0, intensity_db = _pitch_and_intensity(x, rate)
        active, voiced = _activity(f0, intensity_db)
        if voiced.sum() < MIN_VOICED_FRAMES:
            raise PromptError(
                f"the recording has only {voiced.sum() * FRAME_S:.2f} s of voiced speech; "
                "use a clear recording of one person speaking for 3–30 s"
            )
        f0v = f0[voiced]
        mean, std = _voiced_mel_stats(x, mel, f0 > 0)
        bandwidth = float(min(sr, rate) / 2.0)
        f0_median = float(np.median(f0v))
        return cls(
            f0_median_hz=f0_median,
            f0_low_hz=float(np.percentile(f0v, 5)),
            f0_high_hz=float(np.percentile(f0v, 95)),
            voiced_fraction=float(voiced.sum() / max(1, active.sum())),
            formants_hz=_formant_medians(x, rate, voiced, f0_median, bandwidth),
            mel_mean=[round(float(v), 4) for v in mean],
            mel_std=[round(float(v), 4) for v in std],
            bandwidth_hz=bandwidth,
            syllable_rate=_syllable_rate(intensity_db, voiced, active),
            speech_ratio=float(active.mean()),
            sample_rate=int(sr),
            duration_s=round(len(wav) / sr, 3),
        )


def voiced_f0(wav: np.ndarray, sr: int) -> np.ndarray:
    """F0 (Hz) of the active voiced 10 ms frames of a mono recording ``(T,)``: the pitch
    that :meth:`VoiceProfile.from_audio` measures, without the rest of the profile."""
    f0, intensity_db = _pitch_and_intensity(np.asarray(wav, np.float32).reshape(-1), sr)
    return f0[_activity(f0, intensity_db)[1]]


def _analyzer() -> MelAnalyzer:
    from cosyvoice.audio.mel import MelAnalyzer

    return MelAnalyzer()


def pitch_and_envelope(wav: np.ndarray, sr: int, mel: MelAnalyzer | None = None
                       ) -> tuple[np.ndarray, np.ndarray]:
    """The voiced F0 (Hz, as :func:`voiced_f0`) and the mean log-mel ``(n_mels,)`` over voiced
    frames (the profile's ``mel_mean``) of ``(T,)``: the two parts of a profile that voice
    fitting scores for every candidate, in one pitch pass."""
    mel = mel or _analyzer()
    rate = mel.config.sample_rate
    x = resample(np.asarray(wav, dtype=np.float32).reshape(-1), sr, rate)
    f0, intensity_db = _pitch_and_intensity(x, rate)
    mean, _ = _voiced_mel_stats(x, mel, f0 > 0)
    return f0[_activity(f0, intensity_db)[1]], mean


def _activity(f0: np.ndarray, intensity_db: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Active frames (within :data:`ACTIVE_DB` of the loudest) and the voiced ones among them."""
    active = intensity_db > intensity_db.max(initial=-200.0) - ACTIVE_DB
    return active, (f0 > 0) & active


def _pitch_and_intensity(x: np.ndarray, sr: int) -> tuple[np.ndarray, np.ndarray]:
    """F0 (Hz, 0 = unvoiced) and intensity (dB) on one 10 ms grid, both ``(N,)``."""
    import parselmouth

    snd = parselmouth.Sound(x.astype(np.float64), sampling_frequency=sr)
    pitch = snd.to_pitch_ac(time_step=FRAME_S, pitch_floor=PITCH_FLOOR_HZ,
                            pitch_ceiling=PITCH_CEILING_HZ)
    f0 = np.nan_to_num(pitch.selected_array["frequency"])
    if (f0 > 0).sum() >= MIN_VOICED_FRAMES:
        # Second pass with speaker-adapted limits (De Looze & Hirst 2008): 0.75 * q25 to
        # 1.5 * q75 removes most octave errors of the wide first pass.
        q25, q75 = np.percentile(f0[f0 > 0], [25, 75])
        pitch = snd.to_pitch_ac(time_step=FRAME_S, pitch_floor=max(40.0, 0.75 * q25),
                                pitch_ceiling=min(800.0, 1.5 * q75))
        f0 = np.nan_to_num(pitch.selected_array["frequency"])
    times = pitch.xs()
    intensity = snd.to_intensity(minimum_pitch=100.0, time_step=FRAME_S)
    db = np.interp(times, intensity.xs(), intensity.values[0], left=-100.0, right=-100.0)
    return f0, db


def _voiced_mel_stats(x: np.ndarray, mel: MelAnalyzer,
                      voiced_10ms: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and std ``(n_mels,)`` of the log-mel over frames that fall in voiced time."""
    import torch

    with torch.inference_mode():
        m = mel(x)[0].cpu().numpy()  # (n_mels, frames)
    hop_s = mel.config.hop_length / mel.config.sample_rate
    idx = np.minimum(((np.arange(m.shape[1]) + 0.5) * hop_s / FRAME_S).astype(int),
                     len(voiced_10ms) - 1)
    sel = m[:, voiced_10ms[idx]] if voiced_10ms[idx].sum() >= 4 else m
    return sel.mean(axis=1), sel.std(axis=1)


def _formant_medians(x: np.ndarray, sr: int, voiced: np.ndarray, f0_median: float,
                     bandwidth_hz: float) -> list[float]:
    """Medians of F1..F3 over voiced 10 ms frames (Praat Burg).

    The ceiling follows Praat's advice (5000 Hz for low, 5500 Hz for high voices) and
    shrinks, with proportionally fewer formants, for band-limited (telephone) audio.
    """
    import parselmouth

    ceiling = FORMANT_CEILING_HZ if f0_median >= 150.0 else 5000.0
    n_formants = 5.0
    if ceiling > 0.95 * bandwidth_hz:
        n_formants = max(3.0, 5.0 * 0.95 * bandwidth_hz / ceiling)
        ceiling = 0.95 * bandwidth_hz
    snd = parselmouth.Sound(x.astype(np.float64), sampling_frequency=sr)
    formant = snd.to_formant_burg(time_step=FRAME_S, max_number_of_formants=n_formants,
                                  maximum_formant=ceiling)
    times = (np.arange(len(voiced)) * FRAME_S) + FRAME_S / 2
    out = []
    for i in (1, 2, 3):
        vals = np.array([formant.get_value_at_time(i, t) for t in times[voiced]])
        vals = vals[np.isfinite(vals)]
        out.append(round(float(np.median(vals)), 2) if len(vals) else float("nan"))
    return out


def _syllable_rate(db: np.ndarray, voiced: np.ndarray, active: np.ndarray) -> float:
    """Syllable nuclei (intensity peaks ≥ 2 dB above the dips around them, voiced) per s."""
    from scipy.signal import find_peaks

    smooth = np.convolve(db, np.hanning(7) / np.hanning(7).sum(), mode="same")
    floor = np.median(smooth[active]) - 10.0 if active.any() else smooth.max()
    peaks, _ = find_peaks(smooth, prominence=2.0, distance=int(0.08 / FRAME_S))
    nuclei = [p for p in peaks if voiced[p] and smooth[p] > floor]
    speech_s = max(active.sum() * FRAME_S, FRAME_S)
    return float(len(nuclei) / speech_s)

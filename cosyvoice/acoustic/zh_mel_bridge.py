"""Bridge FastSpeech2's mel space (Baker, 24 kHz) to our HiFi-GAN's (22.05 kHz).

An analytic conversion, one linear map per frame plus a time resampling:

1. de-normalize: ``log10mel = mean + std · mel`` with the per-bin statistics estimated by
   bench/zh_mel_stats.py (retired 2026-12-07, in git history) from MB-MelGAN's audio
   (``zh_mel_stats.json``, shipped; the training stats are not);
2. ``10 ** log10mel`` is a Slaney mel of the *magnitude* spectrum (TensorFlowTTS' Baker
   preprocessing), 80 filters over 80–7600 Hz at n_fft 2048;
3. magnitude spectrum: each filter's value divided by its weight sum is the mean magnitude
   around its centre frequency; linear interpolation between centres (faded to 0 at 0 Hz
   below the first, held flat above the last) gives ``|X(f)|`` on the vocoder's STFT bins,
   always ≥ 0 (a pseudo-inverse of the filterbank goes negative between filters);
4. window gain: a partial's STFT peak grows with the window's sum (Hann 1200 → 1024:
   ×512/600), so ``|X|`` is scaled by ``win_vocoder / win_model``;
5. the vocoder's Slaney filterbank (0–8000 Hz, n_fft 1024) and natural log with its clamp;
6. time: FastSpeech2 frame ``j`` is centred at ``j · 12.5 ms``, vocoder frame ``k`` at
   ``(k + ½) · 11.61 ms``; the log mel is linearly interpolated onto the vocoder's grid.

Steps 2–5 compose into one non-negative ``(80, 80)`` matrix built once. How close the map
is on real audio (the same recording analysed both ways) is measured in
``tests/acoustic/test_mandarin.py``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from cosyvoice.audio.mel import MelConfig, mel_filterbank
from cosyvoice.errors import ModelError

STATS_PATH = Path(__file__).with_name("zh_mel_stats.json")


@dataclass
class ModelMelSpace:
    """The acoustic model's mel analysis (from its FastSpeech2Config)."""

    sample_rate: int
    n_fft: int
    hop_length: int
    win_length: int
    n_mels: int
    fmin: float
    fmax: float
    log_base: float = 10.0

    @classmethod
    def from_fastspeech2(cls, cfg) -> ModelMelSpace:
        return cls(cfg.sample_rate, cfg.n_fft, cfg.hop_length, cfg.win_length, cfg.num_mels,
                   cfg.fmin, cfg.fmax, cfg.mel_log_base)


def load_stats(path: str | Path = STATS_PATH) -> tuple[np.ndarray, np.ndarray]:
    """``(mean, std)``, each ``(n_mels,)`` float32, of the model's log mel."""
    try:
        data = json.loads(Path(path).read_text("utf-8"))
        mean, std = (np.asarray(data[k], dtype=np.float32) for k in ("mean", "std"))
    except (OSError, ValueError, KeyError) as e:
        raise ModelError(f"mel statistics {path} unreadable ({e}); restore the file from the "
                         "checkout (git checkout -- cosyvoice/acoustic/zh_mel_stats.json)"
                         ) from e
    if mean.shape != std.shape or mean.ndim != 1 or not (std > 0).all():
        raise ModelError(f"mel statistics {path} are malformed (need positive std per bin)")
    return mean, std


def _interpolation(centers: np.ndarray, freqs: np.ndarray) -> np.ndarray:
    """``(len(freqs), len(centers))`` linear-interpolation weights, edges held."""
    f = np.clip(freqs, centers[0], centers[-1])
    hi = np.clip(np.searchsorted(centers, f, side="right"), 1, len(centers) - 1)
    lo = hi - 1
    t = (f - centers[lo]) / (centers[hi] - centers[lo])
    w = np.zeros((len(freqs), len(centers)))
    w[np.arange(len(f)), lo] = 1.0 - t
    w[np.arange(len(f)), hi] += t
    below = freqs < centers[0]  # under the model's fmin: fade to 0 Hz, not hold
    w[below] *= (freqs[below] / centers[0])[:, None]
    return w


def bridge_matrix(src: ModelMelSpace, dst: MelConfig) -> np.ndarray:
    """``(dst.n_mels, src.n_mels)`` map from the model's magnitude mel to the vocoder's."""
    src_cfg = MelConfig(sample_rate=src.sample_rate, n_fft=src.n_fft, hop_length=src.hop_length,
                        win_length=src.win_length, n_mels=src.n_mels, fmin=src.fmin,
                        fmax=src.fmax)
    b_src = mel_filterbank(src_cfg).astype(np.float64)  # (M, K_src)
    f_src = np.linspace(0, src.sample_rate / 2, b_src.shape[1])
    weight = b_src.sum(1)
    centers = (b_src * f_src).sum(1) / weight  # each filter's centre of mass, Hz
    b_dst = mel_filterbank(dst).astype(np.float64)  # (M', K_dst)
    f_dst = np.linspace(0, dst.sample_rate / 2, b_dst.shape[1])
    spectrum = _interpolation(centers, f_dst) / weight[None, :]  # mel → |X| on dst bins
    gain = dst.win_length / src.win_length
    return (b_dst @ spectrum * gain).astype(np.float32)


def frame_positions(frames: int, src: ModelMelSpace, dst: MelConfig) -> tuple[int, np.ndarray]:
    """Vocoder frames covering ``frames`` model frames, and their fractional source index."""
    seconds = frames * src.hop_length / src.sample_rate
    n = max(1, int(round(seconds * dst.sample_rate / dst.hop_length)))
    t = (np.arange(n) + 0.5) * dst.hop_length / dst.sample_rate
    return n, np.clip(t * src.sample_rate / src.hop_length, 0, frames - 1)


class MelBridge:
    """Model mel ``(T, n_mels)`` (normalized) → vocoder log mel ``(n_mels', T')``."""

    def __init__(self, src: ModelMelSpace, dst: MelConfig,
                 stats: tuple[np.ndarray, np.ndarray] | None = None) -> None:
        self.src, self.dst = src, dst
        self.mean, self.std = stats if stats is not None else load_stats()
        if self.mean.shape != (src.n_mels,):
            raise ModelError(f"mel statistics have {self.mean.size} bins; the model has "
                             f"{src.n_mels}")
        self.matrix = bridge_matrix(src, dst)

    def log10_mel(self, mel: np.ndarray) -> np.ndarray:
        """De-normalized model mel, log10 magnitude, ``(T, n_mels)``."""
        return self.mean + self.std * np.asarray(mel, dtype=np.float32)

    def convert_log10(self, log10_mel: np.ndarray) -> np.ndarray:
        """Model-space log10 magnitude mel ``(T, M)`` → vocoder log mel ``(M', T')``."""
        mag = np.power(np.float32(self.src.log_base), log10_mel.astype(np.float32))  # (T, M)
        dst = np.log(np.maximum(mag @ self.matrix.T, self.dst.clamp))  # (T, M')
        n, pos = frame_positions(len(dst), self.src, self.dst)
        lo = np.floor(pos).astype(int)
        hi = np.minimum(lo + 1, len(dst) - 1)
        frac = (pos - lo)[:, None].astype(np.float32)
        return ((1.0 - frac) * dst[lo] + frac * dst[hi]).T.astype(np.float32)

    def __call__(self, mel: np.ndarray) -> np.ndarray:
        return self.convert_log10(self.log10_mel(mel))

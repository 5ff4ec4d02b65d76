"""A small picture of a result: waveform above, log-mel spectrogram below (PNG as RGB).

matplotlib draws on its Agg canvas (no display) into a Figure object that is not registered
with pyplot, so repeated requests keep no figures alive.
"""

from __future__ import annotations

import numpy as np

MEL_BANDS = 80
MEL_FMAX_HZ = 8000.0
FIG_SIZE_IN = (7.0, 3.2)
FIG_DPI = 80


def result_picture(wav: np.ndarray, sr: int) -> np.ndarray:
    """``(H, W, 3)`` uint8 image: the waveform ``(T,)`` and its log-mel spectrogram."""
    import librosa
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    wav = np.asarray(wav, np.float32)
    hop = max(1, sr // 100)  # 10 ms frames
    mel = librosa.feature.melspectrogram(y=wav, sr=sr, n_fft=1024, hop_length=hop,
                                         n_mels=MEL_BANDS, fmax=min(MEL_FMAX_HZ, sr / 2))
    log_mel = 10 * np.log10(np.maximum(mel, 1e-10))
    seconds = len(wav) / sr

    fig = Figure(figsize=FIG_SIZE_IN, dpi=FIG_DPI, layout="constrained")
    canvas = FigureCanvasAgg(fig)
    top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=(1, 2))
    t = np.arange(len(wav)) / sr
    step = max(1, len(wav) // 4000)  # enough points for the envelope, few for speed
    top.plot(t[::step], wav[::step], linewidth=0.5, color="#3b6ea8")
    top.set_ylim(-1, 1)
    top.set_ylabel("amplitude")
    vmax = float(log_mel.max()) if log_mel.size else 0.0
    bottom.imshow(log_mel, origin="lower", aspect="auto", cmap="magma",
                  extent=(0, seconds, 0, MEL_BANDS), vmin=vmax - 80, vmax=vmax)
    bottom.set_ylabel("mel band")
    bottom.set_xlabel("seconds")
    canvas.draw()
    rgba = np.asarray(canvas.buffer_rgba())
    return rgba[..., :3].copy()

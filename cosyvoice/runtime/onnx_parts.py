"""The two ONNX models of a CosyVoice folder, run with onnxruntime on our own features.

- :class:`SpeechTokenizer` (``speech_tokenizer_v2.onnx`` / ``_v3.onnx``): 16 kHz audio → Whisper
  128-bin log-mel → speech tokens (25 a second). Inputs ``(feats (1, 128, T), feats_length (1,)
  int32)``, output ``(1, T')`` token ids. Audio over 30 s is refused, as the model allows.
- :class:`SpeakerEncoder` (``campplus.onnx``): 16 kHz audio → mean-normalised Kaldi fbank
  ``(1, T, 80)`` → speaker embedding ``(1, 192)``.

Inputs are passed by position (the names differ between exports). Sessions use full graph
optimisation; CAM++ runs on one intra-op thread, as the reference runs it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime as ort
import torch

from cosyvoice.runtime.features import WHISPER_RATE, campplus_input, whisper_log_mel

MAX_TOKENIZER_SECONDS = 30


class PromptAudioError(ValueError):
    """Prompt audio the speech tokenizer cannot take (the message says what to change)."""


def _session(path: Path, threads: int | None = None) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    if threads is not None:
        options.intra_op_num_threads = threads
    return ort.InferenceSession(str(path), sess_options=options,
                                providers=["CPUExecutionProvider"])


def _mono_16k(audio: torch.Tensor | np.ndarray) -> torch.Tensor:
    wave = torch.as_tensor(np.asarray(audio, dtype=np.float32))
    return wave.reshape(1, -1)


class SpeechTokenizer:
    """``tokens(audio_16k) -> (1, N) int32`` speech tokens."""

    def __init__(self, path: str | Path):
        self.session = _session(Path(path))
        self.inputs = [i.name for i in self.session.get_inputs()]

    def tokens(self, audio_16k: torch.Tensor | np.ndarray) -> torch.Tensor:
        wave = _mono_16k(audio_16k)
        seconds = wave.shape[1] / WHISPER_RATE
        if seconds > MAX_TOKENIZER_SECONDS:
            raise PromptAudioError(
                f"prompt audio is {seconds:.1f} s; the speech tokenizer takes at most "
                f"{MAX_TOKENIZER_SECONDS} s / 提示音频长 {seconds:.1f} 秒，"
                f"语音分词器最多支持 {MAX_TOKENIZER_SECONDS} 秒")
        feats = whisper_log_mel(wave, n_mels=128)
        out = self.session.run(None, {
            self.inputs[0]: feats.numpy(),
            self.inputs[1]: np.array([feats.shape[2]], dtype=np.int32)})[0]
        return torch.from_numpy(np.asarray(out).reshape(1, -1).astype(np.int32))


class SpeakerEncoder:
    """``embedding(audio_16k) -> (1, 192)`` CAM++ speaker embedding."""

    def __init__(self, path: str | Path):
        self.session = _session(Path(path), threads=1)
        self.input = self.session.get_inputs()[0].name

    def embedding(self, audio_16k: torch.Tensor | np.ndarray) -> torch.Tensor:
        feats = campplus_input(_mono_16k(audio_16k))
        out = self.session.run(None, {self.input: feats.numpy()})[0]
        return torch.from_numpy(np.asarray(out, dtype=np.float32).reshape(1, -1))

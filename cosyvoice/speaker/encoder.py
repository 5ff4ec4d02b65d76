"""GE2E speaker encoder (Wan et al. 2018), weight-compatible with Resemblyzer's ``pretrained.pt``.

Pipeline of :meth:`SpeakerEncoder.embed`: resample to 16 kHz → raise quiet audio to
-30 dBFS (the training data were normalized the same way, and the network sees *linear*
mel power, so level matters) → 40-band mel power spectrogram (25 ms Hann window, 10 ms
hop) → partial utterances of 160 frames (1.6 s), 1.3 per second (~52 % overlap) → LSTM →
ReLU(linear) → L2 norm per partial → mean of the partials, L2-normalized again.

Resemblyzer also cuts long pauses with webrtcvad. We do not: prompts reach us already trimmed
at both ends (``validation.py``), and splicing Silero's speech segments together measured
worse (same-speaker cosine 0.69 instead of 0.75 on the gradio sample recordings, see
the retired bench/bench_speaker.py; parity: tests/speaker/test_encoder.py).

The package ``resemblyzer`` is never imported (it pulls webrtcvad); only its data file is read.
"""

from __future__ import annotations

import logging
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from cosyvoice.assets import package_dir
from cosyvoice.audio.io import resample
from cosyvoice.config import dataclass_from_dict
from cosyvoice.errors import ModelError, PromptError

logger = logging.getLogger(__name__)

# Keys of the GE2E training loss stored in the checkpoint; not part of the encoder.
_TRAINING_ONLY_KEYS = ("similarity_weight", "similarity_bias")


@dataclass
class EncoderConfig:
    """Feature and network hyper-parameters (Resemblyzer's ``hparams.py`` values)."""

    sample_rate: int = 16000
    window_ms: float = 25.0
    hop_ms: float = 10.0
    n_mels: int = 40
    partial_frames: int = 160      # 1.6 s per partial utterance
    partial_rate: float = 1.3      # partials per second of audio
    min_coverage: float = 0.75     # keep a zero-padded last partial if it is this full
    norm_target_dbfs: float = -30.0
    hidden_size: int = 256
    num_layers: int = 3
    embedding_size: int = 256

    @property
    def n_fft(self) -> int:
        return int(self.sample_rate * self.window_ms / 1000)

    @property
    def hop(self) -> int:
        return int(self.sample_rate * self.hop_ms / 1000)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EncoderConfig:
        return dataclass_from_dict(cls, data)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def default_encoder_path() -> Path:
    """``resemblyzer/pretrained.pt`` inside the installed package (found, not imported)."""
    hint = "run `pip install --no-deps Resemblyzer==0.1.4` (speaker encoder weights)"
    return package_dir("resemblyzer", hint) / "pretrained.pt"


class SpeakerEncoder(nn.Module):
    """LSTM(40 → 256, 3 layers) → Linear(256 → 256) → ReLU → L2 norm."""

    def __init__(self, config: EncoderConfig | None = None) -> None:
        super().__init__()
        self.config = cfg = config or EncoderConfig()
        self.lstm = nn.LSTM(cfg.n_mels, cfg.hidden_size, cfg.num_layers, batch_first=True)
        self.linear = nn.Linear(cfg.hidden_size, cfg.embedding_size)
        self.relu = nn.ReLU()
        # Feature constants travel with the module but are not weights.
        self.register_buffer("mel_basis", _mel_basis(cfg), persistent=False)
        self.register_buffer("window", torch.hann_window(cfg.n_fft), persistent=False)

    @classmethod
    def load(cls, path: str | Path | None = None, device: str = "cpu",
             config: EncoderConfig | None = None) -> SpeakerEncoder:
        """Build, load ``model_state`` strictly (minus the GE2E loss scalars), eval, move."""
        path = Path(path) if path is not None else default_encoder_path()
        if not path.is_file():
            raise ModelError(f"speaker encoder weights not found at {path}; "
                             "reinstall Resemblyzer==0.1.4 (--no-deps)")
        try:
            checkpoint = torch.load(path, map_location="cpu", weights_only=True)
        except Exception as e:
            raise ModelError(f"could not read speaker encoder weights {path}: {e}") from e
        state = checkpoint.get("model_state", checkpoint)
        state = {k: v for k, v in state.items() if k not in _TRAINING_ONLY_KEYS}
        model = cls(config)
        model.load_state_dict(state, strict=True)
        model.eval()
        logger.info("loaded speaker encoder from %s on %s", path, device)
        return model.to(device)

    @property
    def device(self) -> torch.device:
        return self.linear.weight.device

    def forward(self, mels: torch.Tensor | nn.utils.rnn.PackedSequence) -> torch.Tensor:
        """``(B, frames, n_mels)`` linear mel power (or a packed batch of different lengths,
        see :meth:`embed_each`) → ``(B, embedding_size)`` unit vectors."""
        _, (hidden, _) = self.lstm(mels)
        raw = self.relu(self.linear(hidden[-1]))
        return raw / torch.linalg.vector_norm(raw, dim=1, keepdim=True).clamp_min(1e-12)

    def embed_each(self, mels: list[torch.Tensor]) -> torch.Tensor:
        """Mel stretches of different lengths ``[(frames_i, n_mels)]`` → ``(B, embedding_size)``
        unit vectors, in one packed pass."""
        return self(nn.utils.rnn.pack_sequence(mels, enforce_sorted=False))

    def mel(self, wav: torch.Tensor) -> torch.Tensor:
        """``(T,)`` 16 kHz → ``(1 + T // hop, n_mels)`` mel power (centred, zero-padded STFT)."""
        cfg = self.config
        spec = torch.stft(wav, cfg.n_fft, cfg.hop, window=self.window, center=True,
                          pad_mode="constant", return_complex=True)
        power = spec.real.square() + spec.imag.square()          # (n_fft // 2 + 1, frames)
        return (self.mel_basis @ power).T

    def embed(self, wav: np.ndarray, sr: int) -> np.ndarray:
        """Utterance embedding ``(embedding_size,)`` float32, L2-normalized, on the CPU.

        ``wav`` is mono ``(T,)`` at ``sr``, ideally trimmed of leading/trailing silence.
        """
        wav16 = resample(np.asarray(wav, dtype=np.float32).reshape(-1), sr,
                         self.config.sample_rate)
        return self.embed_preprocessed(normalize_volume(wav16, self.config.norm_target_dbfs))

    @torch.inference_mode()
    def embed_preprocessed(self, wav16: np.ndarray) -> np.ndarray:
        """Embedding of audio that is already 16 kHz and level-normalized: ``(T,)`` → ``(E,)``."""
        cfg = self.config
        if len(wav16) == 0:
            raise PromptError("the prompt audio is empty; upload 3–30 s of speech")
        starts, n_pad = partial_starts(len(wav16), cfg)
        padded = np.zeros(max(len(wav16), n_pad), dtype=np.float32)
        padded[:len(wav16)] = wav16
        mel = self.mel(torch.from_numpy(padded).to(self.device))
        index = torch.as_tensor(starts, device=self.device)[:, None] + torch.arange(
            cfg.partial_frames, device=self.device)
        partials = self(mel[index])                               # (P, E)
        mean = partials.mean(dim=0)
        return (mean / torch.linalg.vector_norm(mean)).cpu().numpy().astype(np.float32)

    @staticmethod
    def similarity(a: np.ndarray, b: np.ndarray) -> float:
        """Cosine similarity of two embeddings."""
        return cosine(a, b)


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    """Cosine similarity of two vectors ``(E,)``; 0.0 if either is all zeros."""
    a = np.asarray(a, dtype=np.float64).reshape(-1)
    b = np.asarray(b, dtype=np.float64).reshape(-1)
    denom = float(np.linalg.norm(a) * np.linalg.norm(b))
    return float(a @ b / denom) if denom > 0 else 0.0


def partial_starts(n_samples: int, cfg: EncoderConfig) -> tuple[list[int], int]:
    """Start frames of the partial utterances, and the samples the audio is padded to.

    Partials of ``partial_frames`` frames start every ``round(sr / rate / hop)`` frames and
    cover the whole utterance; the last one is dropped if less than ``min_coverage`` of it
    lies inside the audio (unless it is the only one).
    """
    n_frames = math.ceil((n_samples + 1) / cfg.hop)
    step = int(round(cfg.sample_rate / cfg.partial_rate / cfg.hop))
    if not 0 < step <= cfg.partial_frames:
        raise ValueError(f"partial_rate {cfg.partial_rate} gives a step of {step} frames; "
                         f"need 1..{cfg.partial_frames}")
    starts = list(range(0, max(1, n_frames - cfg.partial_frames + step + 1), step))
    span = cfg.partial_frames * cfg.hop
    coverage = (n_samples - starts[-1] * cfg.hop) / span
    if coverage < cfg.min_coverage and len(starts) > 1:
        starts.pop()
    return starts, starts[-1] * cfg.hop + span


def normalize_volume(wav: np.ndarray, target_dbfs: float) -> np.ndarray:
    """Raise (never lower) the RMS level of ``wav`` to ``target_dbfs``; silence is left alone."""
    rms = float(np.sqrt(np.mean(np.square(wav, dtype=np.float64)))) if len(wav) else 0.0
    if rms <= 0.0:
        return wav
    gain_db = target_dbfs - 20.0 * math.log10(rms)
    if gain_db <= 0:
        return wav
    return (wav * 10.0 ** (gain_db / 20.0)).astype(np.float32)


def _mel_basis(cfg: EncoderConfig) -> torch.Tensor:
    """Slaney-style mel filterbank ``(n_mels, n_fft // 2 + 1)`` (librosa's default)."""
    import librosa

    basis = librosa.filters.mel(sr=cfg.sample_rate, n_fft=cfg.n_fft, n_mels=cfg.n_mels)
    return torch.from_numpy(basis.astype(np.float32))

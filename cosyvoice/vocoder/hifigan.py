"""HiFi-GAN V1/V2/V3 generator, state-dict compatible with the jik876 checkpoints.

Architecture (Kong et al. 2020, jik876/hifi-gan ``models.py``)::

    mel (B, n_mels, T)
      → conv_pre (7 taps)                                  (B, C0, T)
      → for each upsample rate u_i:  lrelu(0.1) → ConvTranspose(u_i)   (B, C0/2^(i+1), T·Πu)
                                     → mean of the MRF resblocks (kernel k_j, dilations D_j)
      → lrelu(0.01) → conv_post (7 taps) → tanh            (B, 1, T · hop)

Checkpoints store every conv with weight norm (``weight_g``, ``weight_v``); we fold them
into plain weights at load (``w = g · v / ‖v‖``, norm over all dims but 0), so inference
runs on plain convs. See :mod:`cosyvoice.vocoder.cpu_generator` for the CPU fast path.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from cosyvoice.audio.mel import MelConfig
from cosyvoice.config import dataclass_from_dict
from cosyvoice.errors import ModelError

logger = logging.getLogger(__name__)

LRELU_SLOPE = 0.1  # between layers
POST_LRELU_SLOPE = 0.01  # before conv_post: jik876 calls F.leaky_relu(x) with its default


@dataclass
class HifiGanConfig:
    """Generator hyper-parameters (defaults: HiFi-GAN V1) plus the mel analysis."""

    resblock: str = "1"
    upsample_rates: list[int] = field(default_factory=lambda: [8, 8, 2, 2])
    upsample_kernel_sizes: list[int] = field(default_factory=lambda: [16, 16, 4, 4])
    upsample_initial_channel: int = 512
    resblock_kernel_sizes: list[int] = field(default_factory=lambda: [3, 7, 11])
    resblock_dilation_sizes: list[list[int]] = field(
        default_factory=lambda: [[1, 3, 5], [1, 3, 5], [1, 3, 5]])
    mel: MelConfig = field(default_factory=MelConfig)

    def __post_init__(self) -> None:
        self.resblock = str(self.resblock)
        if self.resblock not in ("1", "2"):
            raise ModelError(f"HiFi-GAN resblock type {self.resblock!r} is unknown; use '1' or '2'")
        if math.prod(self.upsample_rates) != self.mel.hop_length:
            raise ModelError(
                f"HiFi-GAN upsample rates {self.upsample_rates} multiply to "
                f"{math.prod(self.upsample_rates)} but the mel hop is {self.mel.hop_length}; "
                "the config.json does not belong to these weights")

    @property
    def num_mels(self) -> int:
        return self.mel.n_mels

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> HifiGanConfig:
        """Accept our :meth:`to_dict` output or a jik876 ``config.json`` dict."""
        if "mel" in d:
            mel = MelConfig.from_dict(d["mel"])
        else:
            mel = MelConfig.from_hifigan_config(d)
        return dataclass_from_dict(cls, {**d, "mel": mel})

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, path: str | Path) -> HifiGanConfig:
        try:
            return cls.from_dict(json.loads(Path(path).read_text()))
        except (OSError, json.JSONDecodeError) as e:
            raise ModelError(f"cannot read HiFi-GAN config {path}: {e}") from e


def _same_padding(kernel_size: int, dilation: int = 1) -> int:
    return (kernel_size * dilation - dilation) // 2


def _conv(channels: int, kernel_size: int, dilation: int) -> nn.Conv1d:
    return nn.Conv1d(channels, channels, kernel_size, dilation=dilation,
                     padding=_same_padding(kernel_size, dilation))


class ResBlock1(nn.Module):
    """Per dilation d: ``x += conv_1(lrelu(conv_d(lrelu(x))))``. ``(B, C, T)`` → same."""

    def __init__(self, channels: int, kernel_size: int, dilations: list[int]):
        super().__init__()
        self.convs1 = nn.ModuleList([_conv(channels, kernel_size, d) for d in dilations])
        self.convs2 = nn.ModuleList([_conv(channels, kernel_size, 1) for _ in dilations])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for c1, c2 in zip(self.convs1, self.convs2):
            xt = c1(F.leaky_relu(x, LRELU_SLOPE))
            x = c2(F.leaky_relu(xt, LRELU_SLOPE)) + x
        return x


class ResBlock2(nn.Module):
    """Per dilation d: ``x += conv_d(lrelu(x))`` (HiFi-GAN V3). ``(B, C, T)`` → same."""

    def __init__(self, channels: int, kernel_size: int, dilations: list[int]):
        super().__init__()
        self.convs = nn.ModuleList([_conv(channels, kernel_size, d) for d in dilations])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for c in self.convs:
            x = c(F.leaky_relu(x, LRELU_SLOPE)) + x
        return x


class Generator(nn.Module):
    """log-mel ``(B, n_mels, T)`` → waveform ``(B, 1, T · hop)`` in [-1, 1]."""

    def __init__(self, cfg: HifiGanConfig):
        super().__init__()
        self.cfg = cfg
        ch = cfg.upsample_initial_channel
        self.num_kernels = len(cfg.resblock_kernel_sizes)
        self.conv_pre = nn.Conv1d(cfg.num_mels, ch, 7, padding=3)
        self.ups = nn.ModuleList()
        self.resblocks = nn.ModuleList()
        block = ResBlock1 if cfg.resblock == "1" else ResBlock2
        for i, (u, k) in enumerate(zip(cfg.upsample_rates, cfg.upsample_kernel_sizes)):
            c_in, c_out = ch // 2**i, ch // 2 ** (i + 1)
            self.ups.append(nn.ConvTranspose1d(c_in, c_out, k, u, padding=(k - u) // 2))
            for rk, rd in zip(cfg.resblock_kernel_sizes, cfg.resblock_dilation_sizes):
                self.resblocks.append(block(c_out, rk, list(rd)))
        self.conv_post = nn.Conv1d(ch // 2 ** len(cfg.upsample_rates), 1, 7, padding=3)

    def forward(self, mel: torch.Tensor) -> torch.Tensor:
        x = self.conv_pre(mel)
        for i, up in enumerate(self.ups):
            x = up(F.leaky_relu(x, LRELU_SLOPE))
            blocks = self.resblocks[i * self.num_kernels:(i + 1) * self.num_kernels]
            xs = blocks[0](x)
            for block in blocks[1:]:
                xs = xs + block(x)
            x = xs / self.num_kernels
        x = self.conv_post(F.leaky_relu(x, POST_LRELU_SLOPE))
        return torch.tanh(x)


def fold_weight_norm(state: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Replace each ``X.weight_g`` / ``X.weight_v`` pair by ``X.weight = g · v / ‖v‖``.

    The norm runs over all dims but 0 (``torch.nn.utils.weight_norm``'s default ``dim=0``,
    which jik876 uses for Conv1d and ConvTranspose1d alike). Other keys pass through.
    """
    out: dict[str, torch.Tensor] = {}
    for key, value in state.items():
        if key.endswith("weight_g") and _is_param(key, "weight_g"):
            if key[: -len("_g")] + "_v" not in state:
                raise ModelError(f"checkpoint has {key} without its weight_v")
            continue
        if not (key.endswith("weight_v") and _is_param(key, "weight_v")):
            out[key] = value
            continue
        g = state.get(key[: -len("_v")] + "_g")
        if g is None:
            raise ModelError(f"checkpoint has {key} without its weight_g")
        norm = value.reshape(value.shape[0], -1).norm(dim=1)
        norm = norm.reshape((-1,) + (1,) * (value.ndim - 1))
        out[key[: -len("_v")]] = value * (g / norm)
    return out


def _is_param(key: str, name: str) -> bool:
    """``key`` is ``name`` itself or ``<module path>.name``."""
    return key == name or key.endswith("." + name)

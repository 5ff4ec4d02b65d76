"""CPU fast path for the HiFi-GAN generator: same maths, fewer FLOPs, fewer memory passes.

On CPU the reference generator's convolutions already run near the cores' FMA peak, so
speed has to come from doing less work:

* **Channels-last layout.** Activations live as ``(B, C, 1, T)`` channels-last tensors
  (memory order ``(B, T, C)``), which oneDNN convolves without reordering them on every
  call.
* **Fused epilogues.** ``conv → leaky_relu`` and ``acc += conv(x)`` run as one oneDNN
  primitive (``torch.ops.mkldnn._convolution_pointwise``), the residual add in place.
* **FFT convolution for long kernels.** A ``C → C`` conv with ``k`` taps costs ``k·C²``
  MACs per sample directly, but about ``2·C²`` by overlap-save FFT (one complex GEMM per
  frequency bin), independent of ``k`` and of the dilation. Used where it wins
  (:func:`use_fft`), with the kernel spectra computed in float64 once at build time.

Everything is exact up to float32 rounding (max |diff| to the eager generator ~1e-5).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from cosyvoice.vocoder.hifigan import LRELU_SLOPE, POST_LRELU_SLOPE, Generator

logger = logging.getLogger(__name__)

CL = torch.channels_last


def fused_ops_available() -> bool:
    """Whether this torch build has oneDNN's fused conv primitives (CPU builds do)."""
    return torch.backends.mkldnn.is_available() and hasattr(
        torch.ops.mkldnn, "_convolution_pointwise")


@dataclass(frozen=True)
class FftRule:
    """When to convolve by FFT: kernel taps and channels at least these."""

    min_kernel: int = 11
    min_channels: int = 128
    min_channels_dilated: int = 64


def use_fft(conv: nn.Conv1d, rule: FftRule) -> bool:
    k, c, d = conv.kernel_size[0], conv.in_channels, conv.dilation[0]
    if k < rule.min_kernel or conv.in_channels != conv.out_channels:
        return False
    return c >= (rule.min_channels if d == 1 else rule.min_channels_dilated)


def _to_time_major(x: torch.Tensor) -> torch.Tensor:
    """``(B, C, 1, T)`` channels-last → ``(B, T, C)`` view (no copy)."""
    return x.permute(0, 2, 3, 1).flatten(1, 2)


class DirectConv:
    """A ``Conv1d`` run as a channels-last oneDNN conv2d with fused epilogues."""

    def __init__(self, conv: nn.Conv1d, fused: bool):
        self.weight = conv.weight.detach().unsqueeze(2).contiguous(memory_format=CL)
        self.bias = conv.bias.detach().clone()
        self.padding = [0, conv.padding[0]]
        self.dilation = [1, conv.dilation[0]]
        self.fused = fused

    def _args(self) -> tuple:
        return (self.weight, self.bias, self.padding, [1, 1], self.dilation, 1)

    def __call__(self, x: torch.Tensor, post_slope: float | None = None) -> torch.Tensor:
        """``(B, C, 1, T)`` → ``(B, O, 1, T)``, optionally followed by leaky_relu."""
        if self.fused:
            if post_slope is None:
                return torch.ops.mkldnn._convolution_pointwise(x, *self._args(), "none", [], "")
            return torch.ops.mkldnn._convolution_pointwise(
                x, *self._args(), "leaky_relu", [post_slope], "")
        y = F.conv2d(x, self.weight, self.bias, 1, self.padding, self.dilation)
        return y if post_slope is None else F.leaky_relu_(y, post_slope)

    def add_to_(self, x: torch.Tensor, acc: torch.Tensor) -> torch.Tensor:
        """``acc += conv(x)`` in place; returns ``acc``."""
        if self.fused and acc.is_contiguous(memory_format=CL):
            return torch.ops.mkldnn._convolution_pointwise_.binary(
                acc, x, *self._args(), "add", None, None, [], None)
        return acc.add_(F.conv2d(x, self.weight, self.bias, 1, self.padding, self.dilation))


class FftConv:
    """A same-padded ``C → O`` Conv1d by overlap-save FFT on ``(B, C, 1, T)`` inputs.

    Blocks of ``n_fft`` input samples overlap by the kernel span ``S = d·(k-1)+1`` and
    yield ``n_fft - S + 1`` outputs each; per frequency bin the output spectrum is one
    complex GEMM ``X_f (blocks, C) @ W_f (C, O)`` with ``W_f`` the conjugated kernel
    spectrum (cross-correlation, as conv layers compute).
    """

    def __init__(self, conv: nn.Conv1d, n_fft: int | None = None):
        w = conv.weight.detach().to(torch.float64)
        out_ch, in_ch, k = w.shape
        d = conv.dilation[0]
        self.span = d * (k - 1) + 1
        self.pad = conv.padding[0]
        self.n_fft = n_fft or max(64, 1 << math.ceil(math.log2(4 * self.span)))
        taps = torch.zeros(out_ch, in_ch, self.n_fft, dtype=torch.float64)
        taps[:, :, : self.span : d] = w
        spec = torch.fft.rfft(taps, dim=-1).conj()  # (O, C, F)
        self.spectrum = spec.permute(2, 1, 0).to(torch.complex64).contiguous()  # (F, C, O)
        self.bias = conv.bias.detach().clone()

    def _blocks(self, x: torch.Tensor, pre_slope: float | None) -> torch.Tensor:
        """Zero-padded, pre-activated input cut into overlapping blocks ``(B, n, C, n_fft)``."""
        b, c, _, t = x.shape
        hop = self.n_fft - self.span + 1
        blocks = -(-t // hop)
        padded = x.new_empty(b, blocks * hop + self.span - 1, c)
        padded[:, : self.pad].zero_()
        padded[:, self.pad + t:].zero_()
        body = padded[:, self.pad: self.pad + t]
        if pre_slope is None:
            body.copy_(_to_time_major(x))
        else:
            torch._C._nn.leaky_relu(_to_time_major(x), pre_slope, out=body)
        return padded.unfold(1, self.n_fft, hop)

    def _time(self, x: torch.Tensor, pre_slope: float | None) -> torch.Tensor:
        """Conv output with bias as ``(B, n·hop, O)`` (at least T long; crop after)."""
        seg = self._blocks(x, pre_slope)
        b, blocks, c, _ = seg.shape
        spec = torch.fft.rfft(seg, dim=-1).view(b * blocks, c, -1)  # (M, C, F)
        spec = spec.transpose(1, 2).contiguous().transpose(0, 1)  # (F, M, C), C unit stride
        y_spec = torch.bmm(spec, self.spectrum)  # (F, M, O)
        y_spec = y_spec.permute(1, 2, 0).contiguous()  # (M, O, F)
        y = torch.fft.irfft(y_spec, n=self.n_fft, dim=-1)  # (M, O, n_fft)
        hop = self.n_fft - self.span + 1
        o = y.shape[1]
        out = x.new_empty(b, blocks, hop, o)
        torch.add(y[..., :hop].transpose(1, 2).view(b, blocks, hop, o), self.bias, out=out)
        return out.view(b, blocks * hop, o)

    def __call__(self, x: torch.Tensor, pre_slope: float | None = None,
                 post_slope: float | None = None) -> torch.Tensor:
        """``(B, C, 1, T)`` → ``(B, O, 1, T)`` channels-last."""
        t = x.shape[-1]
        y = self._time(x, pre_slope)[:, :t]
        if post_slope is not None:
            F.leaky_relu_(y, post_slope)
        return y.permute(0, 2, 1).unsqueeze(2).contiguous(memory_format=CL)

    def add_to_(self, x: torch.Tensor, acc: torch.Tensor,
                pre_slope: float | None = None) -> torch.Tensor:
        """``acc += conv(x)`` in place; returns ``acc``."""
        t = x.shape[-1]
        _to_time_major(acc).add_(self._time(x, pre_slope)[:, :t])
        return acc


class _Conv:
    """One conv layer, run directly or by FFT; pre-activation handled either way."""

    def __init__(self, conv: nn.Conv1d, fft: bool, fused: bool):
        self.fft = FftConv(conv) if fft else None
        self.direct = None if fft else DirectConv(conv, fused)

    def __call__(self, x: torch.Tensor, pre_slope: float | None,
                 post_slope: float | None = None) -> torch.Tensor:
        if self.fft is not None:
            return self.fft(x, pre_slope, post_slope)
        if pre_slope is not None:
            x = F.leaky_relu(x, pre_slope)
        return self.direct(x, post_slope)

    def add_to_(self, x: torch.Tensor, acc: torch.Tensor, pre_slope: float | None) -> torch.Tensor:
        if self.fft is not None:
            return self.fft.add_to_(x, acc, pre_slope)
        if pre_slope is not None:
            x = F.leaky_relu(x, pre_slope)
        return self.direct.add_to_(x, acc)


class CpuGenerator:
    """The :class:`Generator`'s forward on CPU with the tricks above.

    Holds its own copies of the folded weights (and kernel spectra); ``__call__`` takes
    a log-mel ``(B, n_mels, T)`` float32 CPU tensor and returns ``(B, 1, T · hop)``.
    Must be called under ``torch.inference_mode()`` (or ``no_grad``).
    """

    def __init__(self, gen: Generator, rule: FftRule | None = None):
        rule = rule or FftRule()
        fused = fused_ops_available()
        self.resblock = gen.cfg.resblock
        self.num_kernels = gen.num_kernels
        self.pre = DirectConv(gen.conv_pre, fused)
        self.post = DirectConv(gen.conv_post, False)
        self.ups = [(u.weight.detach().unsqueeze(2).contiguous(memory_format=CL),
                     u.bias.detach().clone(), u.stride[0], u.padding[0]) for u in gen.ups]
        self.blocks = [self._block(b, rule, fused) for b in gen.resblocks]
        n_fft = sum(c.fft is not None for blk in self.blocks for pair in blk for c in pair
                    if c is not None)
        logger.debug("CPU HiFi-GAN: %d of %d resblock convs by FFT", n_fft,
                     sum(len(blk) * 2 for blk in self.blocks))

    def _block(self, block: nn.Module, rule: FftRule, fused: bool) -> list:
        if self.resblock == "1":
            return [(_Conv(c1, use_fft(c1, rule), fused), _Conv(c2, use_fft(c2, rule), fused))
                    for c1, c2 in zip(block.convs1, block.convs2)]
        return [(_Conv(c, use_fft(c, rule), fused), None) for c in block.convs]

    def _run_block(self, pairs: list, x: torch.Tensor) -> torch.Tensor:
        """One MRF resblock on ``(B, C, 1, T)``; ``x`` is left untouched."""
        acc = x.clone(memory_format=CL)
        for c1, c2 in pairs:
            if c2 is None:  # ResBlock2: acc += conv(lrelu(acc)); the conv reads acc
                acc.add_(c1(acc, LRELU_SLOPE))
                continue
            mid = c1(acc, LRELU_SLOPE, LRELU_SLOPE)
            c2.add_to_(mid, acc, None)
        return acc

    def __call__(self, mel: torch.Tensor) -> torch.Tensor:
        x = self.pre(mel.unsqueeze(2).contiguous(memory_format=CL))
        for i, (weight, bias, stride, pad) in enumerate(self.ups):
            x = F.leaky_relu(x, LRELU_SLOPE)
            x = F.conv_transpose2d(x, weight, bias, (1, stride), (0, pad))
            blocks = self.blocks[i * self.num_kernels:(i + 1) * self.num_kernels]
            xs = self._run_block(blocks[0], x)
            for pairs in blocks[1:]:
                xs.add_(self._run_block(pairs, x))
            x = xs.div_(self.num_kernels)
        x = self.post(F.leaky_relu(x, POST_LRELU_SLOPE))
        return torch.tanh(x).squeeze(2)

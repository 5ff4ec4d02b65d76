"""Kokoro's iSTFTNet generator in torch on CPU, with the HiFi-GAN fast path's convs.

The shipped graph spends ~86 % of its CPU time in the generator's 8 AdaIN resblocks, and
onnxruntime runs their ConvInteger at ~110 GOP/s on one Zen 4 core (im2col and a u8 × u8
GEMM, no VNNI) against ~320 for oneDNN's int8 conv (:class:`~cosyvoice.kernels.int8.
Int8Conv`) on the same conv (128 ch, k11, 37k frames; ``bench/kokoro_speed.py --convs``).
So the generator runs here, between the graph's front and back
(:mod:`cosyvoice.acoustic.kokoro_graph`), on the vocoder's tiled convs:

* the resblock convs as :class:`Int8Conv` (``int8``: weights requantized per output
  channel from the graph's dequantised ones, activations per call as the graph does) or
  :class:`DirectConv` (``fp32``), chosen like the vocoder's precision (int8 where the CPU
  has int8 dot products);
* the upsampling transposed convs as :class:`UpConv`, ``conv_post`` as a tiled
  :class:`DirectConv`, the source convs as GEMMs: fixed shapes, so a new request length
  builds no oneDNN kernel.

Activations are channels-last ``(1, C, 1, T)`` (time-major ``(T, C)`` in memory). The maths
is the graph's: AdaIN (instance norm, ``(1 + γ) · x̂ + β`` with γ, β from the style) and
Snake (``x + sin²(αx) / α``) before each conv of a resblock, the resblocks of a stage
averaged, leaky ReLUs and a left reflection pad as the graph has them.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from cosyvoice.acoustic.kokoro_graph import GENERATOR, KokoroGraph
from cosyvoice.kernels.cpu import has_int8_dot
from cosyvoice.kernels.direct import DirectConv, UpConv, fused_ops_available
from cosyvoice.kernels.int8 import Int8Conv, int8_ops_available
from cosyvoice.kernels.tiling import (
    CL,
    channels_last,
    runs_both_tiles,
    tile_sizes,
    time_major,
)

logger = logging.getLogger(__name__)

EPS = 1e-5  # the graph's instance-norm epsilon
BLOCK_BYTES = 262144  # rows per block of the AdaIN + Snake passes: a block in L2


class Int8Conv8(Int8Conv):
    """:class:`Int8Conv` with 8-bit weights, for CPUs whose int8 dot product accumulates in
    int32 (VNNI, AMX): the 7-bit limit guards only AVX2's saturating int16 pairs."""

    WEIGHT_MAX = 127


@dataclass
class _Adain:
    """One AdaIN + Snake: its style rows in the stacked style GEMM, and α."""

    rows: slice  # γ then β: 2·C outputs of the stacked fc
    alpha: torch.Tensor  # (C,)
    inv_alpha: torch.Tensor  # (C,)


class KokoroGenerator:
    """The generator's forward: ``(features, harmonics, style) → conv_post output``."""

    def __init__(self, graph: KokoroGraph, precision: str = "int8") -> None:
        fused = fused_ops_available()
        if precision == "int8" and not int8_ops_available():
            logger.warning("this torch build has no oneDNN int8 conv; Kokoro runs in float32")
            precision = "fp32"
        self.precision = precision
        int8_conv = Int8Conv8 if has_int8_dot() else Int8Conv
        g = GENERATOR
        self.stages = 0
        while graph.has(f"{g}ups.{self.stages}/ConvTranspose"):
            self.stages += 1
        kernels = 0
        while graph.has(f"{g}resblocks.{kernels}/convs1.0/Conv"):
            kernels += 1
        self.kernels = kernels // self.stages
        self.slopes = [graph.leaky_slope(f"{g}LeakyRelu" + (f"_{i}" if i else ""))
                       for i in range(self.stages + 1)]
        self.pad = graph.pad_left(f"{g}reflection_pad/Pad")
        self._fc_w: list[np.ndarray] = []
        self._fc_b: list[np.ndarray] = []
        rates = [1]
        self.ups = []
        self.channels = 0
        for i in range(self.stages):
            up = graph.conv_transpose(f"{g}ups.{i}/ConvTranspose")
            self.channels = self.channels or up.in_channels
            self.ups.append(UpConv(up, fused, tile_sizes(rates[-1])))
            rates.append(rates[-1] * up.stride[0])

        def conv(prefix: str, rate: int):
            c = graph.conv(prefix)
            if precision == "int8":
                return int8_conv(c)
            return DirectConv(c, fused, tile=tile_sizes(rate))

        def block(name: str, rate: int) -> list[tuple]:
            out, j = [], 0
            while graph.has(f"{g}{name}/convs1.{j}/Conv"):
                pair = []
                for n in (1, 2):
                    adain = self._adain(graph, f"{g}{name}/adain{n}.{j}/fc/Gemm",
                                        f"decoder.decoder.generator.{name.replace('/', '.')}"
                                        f".adain{n}.{j}.fc.bias",
                                        f"decoder.decoder.generator.{name}.alpha{n}.{j}")
                    pair.append((adain, conv(f"{g}{name}/convs{n}.{j}/Conv", rate)))
                out.append(tuple(pair))
                j += 1
            return out

        self.noise_res = [block(f"noise_res.{i}", rates[i + 1]) for i in range(self.stages)]
        self.resblocks = [block(f"resblocks.{i}", rates[i // self.kernels + 1])
                          for i in range(self.stages * self.kernels)]
        self.noise_convs = [_Gemm(graph.conv(f"{g}noise_convs.{i}/Conv"))
                            for i in range(self.stages)]
        self.post = DirectConv(graph.conv(f"{g}conv_post/Conv"), False,
                               tile=tile_sizes(rates[-1]))
        self._fc_weight = torch.from_numpy(np.concatenate(self._fc_w, axis=1))
        self._fc_bias = torch.from_numpy(np.concatenate(self._fc_b))
        del self._fc_w, self._fc_b
        logger.info("Kokoro generator in torch: %d stages × %d resblocks, %s convs",
                    self.stages, self.kernels, precision)

    def _adain(self, graph: KokoroGraph, fc: str, bias: str, alpha: str) -> _Adain:
        w, b = graph.linear(fc, bias)
        start = sum(x.shape[1] for x in self._fc_w)
        self._fc_w.append(w)
        self._fc_b.append(b)
        a = torch.from_numpy(graph.array(alpha).reshape(-1).astype(np.float32))
        return _Adain(slice(start, start + w.shape[1]), a, 1.0 / a)

    # ---- forward ------------------------------------------------------------------------
    def __call__(self, features: np.ndarray, harmonics: np.ndarray,
                 style: np.ndarray) -> np.ndarray:
        """``(1, 512, T)``, ``(1, 22, H)``, ``(1, 128)`` float32 → ``(1, 22, frames)``."""
        with torch.inference_mode():
            s = torch.from_numpy(style).reshape(1, -1) @ self._fc_weight + self._fc_bias
            s = s.reshape(-1)
            har = torch.from_numpy(harmonics)[0]  # (22, H)
            x = _cl(torch.from_numpy(features)[0])
            work = _Work()
            for i in range(self.stages):
                source = self._resblock(self.noise_res[i],
                                        _cl_tm(self.noise_convs[i](har)), s, work)
                x = self._stage(i, x, source, s, work)
            y = self.post(F.leaky_relu(x, self.slopes[-1]))
            return np.ascontiguousarray(y.squeeze(2).numpy())

    def _stage(self, i: int, x: torch.Tensor, source: torch.Tensor, s: torch.Tensor,
               work: _Work) -> torch.Tensor:
        """Upsampling stage ``i`` on its input ``(1, C, 1, T)``: upsample (the last stage
        then pads), add the harmonic ``source``, the mean of the stage's resblocks."""
        x = self.ups[i](x, self.slopes[i])
        if i == self.stages - 1 and self.pad:
            tm = time_major(x)
            x = _cl_tm(torch.cat([tm[1:1 + self.pad].flip(0), tm]))
        x.add_(source)
        blocks = self.resblocks[i * self.kernels:(i + 1) * self.kernels]
        acc = self._resblock(blocks[0], x, s, work, in_place=False)
        for j, blk in enumerate(blocks[1:], start=1):
            acc.add_(self._resblock(blk, x, s, work, in_place=j == len(blocks) - 1))
        return acc.div_(len(blocks))

    def _resblock(self, pairs: list[tuple], x: torch.Tensor, s: torch.Tensor,
                  work: _Work, in_place: bool = True) -> torch.Tensor:
        """One AdaIN resblock on ``(1, C, 1, T)``: per dilation
        ``x += c2(snake(adain(c1(snake(adain(x))))))``; ``x`` is overwritten only if
        ``in_place``. Each conv reads a zero-padded buffer that the AdaIN + Snake pass
        writes straight into, and c1 adds its output into a zeroed one: no activation is
        allocated or copied per conv."""
        acc = x if in_place else x.clone(memory_format=CL)
        t = acc.shape[-1]
        mid = work.get("mid", t, acc.shape[1])
        for (a1, c1), (a2, c2) in pairs:
            mid.zero_()
            c1.add_padded_(_adain_snake(acc, s, a1, c1, work), _cl_tm(mid))
            c2.add_padded_(_adain_snake(_cl_tm(mid), s, a2, c2, work), acc)
        return acc

    def warm_up(self) -> None:
        """Run every tiled conv at both its tile lengths now (oneDNN builds a kernel per
        shape), so no request pays for it: each stage on silence just long enough for its
        own convs. (One call long enough for every stage ran the last stage at 6× the
        length it needs: 1.9 CPU-s, most of Kokoro's load; bench/README.md.)"""
        with torch.inference_mode():
            s = self._fc_bias.clone()  # the style rows of a zero style
            work, channels = _Work(), self.channels
            for i, up in enumerate(self.ups):
                frames = 1
                while not runs_both_tiles(self._stage_tiled(i, frames)):
                    frames += 1
                n = self._stage_len(i, frames)
                source = self._resblock(self.noise_res[i], _cl_tm(torch.zeros(n, up.out_ch)),
                                        s, work)
                y = self._stage(i, _cl_tm(torch.zeros(frames, channels)), source, s, work)
                channels = up.out_ch
            self.post(F.leaky_relu(y, self.slopes[-1]))

    def _stage_len(self, i: int, frames: int) -> int:
        """Stage ``i``'s output length for an input of ``frames``."""
        return self.ups[i].out_len(frames) + (self.pad if i == self.stages - 1 else 0)

    def _stage_tiled(self, i: int, frames: int) -> list[tuple[object, int]]:
        """``(conv, outputs)`` of every tiled conv of stage ``i`` on an input of ``frames``
        (conv_post with the last stage)."""
        up, t = self.ups[i], self._stage_len(i, frames)
        blocks = [self.noise_res[i], *self.resblocks[i * self.kernels:(i + 1) * self.kernels]]
        out = [(up.conv, up.rows(frames)), *((c, t) for blk in blocks for pair in blk
                                               for _, c in pair)]
        if i == self.stages - 1:
            out.append((self.post, t))
        return [(c, n) for c, n in out if getattr(c, "tile", None) is not None]



def _cl(x: torch.Tensor) -> torch.Tensor:
    """``(C, T)`` → ``(1, C, 1, T)`` channels-last (a copy)."""
    return channels_last(x.t().contiguous())


def _cl_tm(tm: torch.Tensor) -> torch.Tensor:
    """Time-major ``(T, C)`` → ``(1, C, 1, T)`` channels-last (a view when contiguous)."""
    return channels_last(tm.contiguous())


def _adain_snake(x: torch.Tensor, s: torch.Tensor, a: _Adain, conv, work: _Work
                 ) -> torch.Tensor:
    """The zero-padded time-major input ``conv`` reads (its :meth:`add_padded_`):
    ``snake(adain(x))`` of ``(1, C, 1, T)`` channels-last between ``conv.left`` zero rows
    and zeros up to its padded length. Instance norm over time and ``(1 + γ) · x̂ + β``
    fold into one ``scale · x + shift`` per channel; then ``y + sin²(αy) / α``, with αy
    made from x directly. Both passes go block by block (:data:`BLOCK_BYTES`), so each
    block's temporaries stay in cache: the pass is bound by memory, not arithmetic.
    numpy's sine: torch 2.13's took ~5× as long on the Zen 4 here (34 vs 7 ms per 4.7 M
    values)."""
    tm = time_major(x)
    t, c = tm.shape
    rows = max(64, BLOCK_BYTES // (4 * c))
    tmp = work.get("tmp", min(rows, t), c)
    total = torch.zeros(c, dtype=torch.float64)
    squares = torch.zeros(c, dtype=torch.float64)
    for r in range(0, t, rows):
        block = tm[r:r + rows]
        sq = tmp[:len(block)]
        total += block.sum(0)
        squares += torch.mul(block, block, out=sq).sum(0)
    mean = total / t
    var = (squares / t - mean * mean).clamp_min(0.0)
    gb = s[a.rows].double()
    scale64 = (1.0 + gb[:c]) / torch.sqrt(var + EPS)
    shift, scale = (gb[c:] - mean * scale64).float(), scale64.float()
    shift_a, scale_a = shift * a.alpha, scale * a.alpha
    buf = work.get("pad", conv.padded_rows(t), c)
    left = conv.left
    buf[:left].zero_()
    buf[left + t:].zero_()
    for r in range(0, t, rows):
        block = tm[r:r + rows]
        y = torch.addcmul(shift, block, scale, out=buf[left + r:left + r + len(block)])
        z = torch.addcmul(shift_a, block, scale_a, out=tmp[:len(block)])
        np.sin(z.numpy(), out=z.numpy())
        y.addcmul_(z.mul_(z), a.inv_alpha)
    return buf


class _Work:
    """Scratch buffers of one call, reused by every conv (a fresh 19 MB tensor per conv
    costs its page faults again)."""

    def __init__(self) -> None:
        self._bufs: dict[str, torch.Tensor] = {}

    def get(self, name: str, rows: int, cols: int) -> torch.Tensor:
        """A ``(rows, cols)`` contiguous view of buffer ``name`` (grown when needed)."""
        buf = self._bufs.get(name)
        if buf is None or buf.numel() < rows * cols:
            buf = self._bufs[name] = torch.empty(rows * cols)
        return buf[:rows * cols].view(rows, cols)


class _Gemm:
    """A strided ``Conv1d`` on ``(C, H)`` as one GEMM over its unfolded windows (the
    source convs: few channels, no oneDNN kernel per length); output time-major."""

    def __init__(self, conv: nn.Conv1d) -> None:
        self.in_channels = conv.in_channels
        self.k, self.stride, self.pad = conv.kernel_size[0], conv.stride[0], conv.padding[0]
        self.weight = conv.weight.detach().reshape(conv.out_channels, -1).t().contiguous()
        self.bias = conv.bias.detach().clone()

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        """``(C, H)`` → ``(T_out, O)``."""
        if self.k == 1 and self.stride == 1:
            cols = x.t()
        else:
            win = F.pad(x, (self.pad, self.pad)).unfold(1, self.k, self.stride)  # (C, T, k)
            cols = win.permute(1, 0, 2).reshape(win.shape[1], -1)
        return torch.addmm(self.bias, cols, self.weight)

"""Direct convs of the CPU fast path: oneDNN on channels-last input, epilogues fused.

* **Fused epilogues.** ``conv → leaky_relu`` and ``acc += conv(x)`` run as one oneDNN
  primitive (``torch.ops.mkldnn._convolution_pointwise``), the residual add in place;
  the leaky_relu before a padded conv is fused into the copy that pads.
* **Polyphase dilated convs** (off by default, see :class:`SpeedRule`). A conv with
  dilation ``d`` over ``T`` samples equals an undilated ``(k, 1)`` conv2d over the
  ``(T/d, d)`` view of the same memory (:class:`DirectConv`).
* **Fixed-shape tiles** (:mod:`cosyvoice.kernels.tiling`), the transposed convs too
  (:class:`UpConv`), and resblock pairs fused tile by tile (:func:`fused_pair_`).
"""

from __future__ import annotations

import ctypes

import torch
import torch.nn.functional as F
from torch import nn

from cosyvoice.kernels.tiling import (
    CL,
    Tiled,
    add_tiles_,
    channels_last,
    padded_input,
    tile_plan,
    time_major,
    write_tiles_,
)


def fused_ops_available() -> bool:
    """Whether this torch build has oneDNN's fused conv primitives (x86 CPU builds do)."""
    return torch.backends.mkldnn.is_available() and hasattr(
        torch.ops.mkldnn, "_convolution_pointwise")


def _mkldnn_bytes(t: torch.Tensor) -> bytes:
    """The raw bytes of an opaque oneDNN tensor (its blocked layout, padding included)."""
    return ctypes.string_at(torch.ops.mkldnn.data_ptr(t), torch.ops.mkldnn._nbytes(t))


class DirectConv(Tiled):
    """A ``Conv1d`` on ``(1, C, 1, T)`` channels-last input via oneDNN, epilogues fused.

    With ``tile`` (``(tile, small)``, see :func:`tile_sizes`) the zero-padded input is cut
    into overlapping views and every tile runs with no padding, so oneDNN sees two input
    shapes per conv whatever the request's length. oneDNN builds (and caches) a kernel
    for each new shape: on a CPU with AVX-512/AMX that cost 2–30 ms and ~3 MB of memory
    per conv and length here, so an untiled vocoder grew by ~170 MB per new request
    length until the cache's 1024 entries were full (``bench/vocoder_memory.py``).
    :meth:`add_to_` adds every tile, the last one too, with the same fused kernel.
    Output is the same as untiled up to float32 summation order.
    """

    def __init__(self, conv: nn.Conv1d, fused: bool, polyphase: bool = False,
                 tile: tuple[int, int] | None = None, left: int | None = None):
        k = conv.kernel_size[0]
        self.dilation = conv.dilation[0]
        self.polyphase = polyphase and self.dilation > 1
        w = conv.weight.detach()
        w = w.unsqueeze(3) if self.polyphase else w.unsqueeze(2)
        self.weight = w.contiguous(memory_format=CL)
        self.bias = conv.bias.detach().clone()
        self.out_ch = w.shape[0]
        self.span = self.dilation * (k - 1) + 1
        self.left = conv.padding[0] if left is None else left
        self.tile = None if self.polyphase else tile
        if self.polyphase:
            self.padding, self.dil2d = [(k - 1) // 2, 0], [1, 1]
        elif self.tile is not None:
            self.padding, self.dil2d = [0, 0], [1, self.dilation]
        else:
            self.padding, self.dil2d = [0, conv.padding[0]], [1, self.dilation]
        self.fused = fused
        # oneDNN's blocked weight layouts, one per input width the tiles use (see
        # :meth:`_weight`); built at warm-up.
        self._packed: dict[int, torch.Tensor] = {}

    def tiles(self, t: int) -> list[tuple[int, int]]:
        """The ``(start, length)`` tiles of ``t`` outputs (one untiled run without tiling)."""
        return [(0, t)] if self.tile is None else tile_plan(t, *self.tile)

    def run(self, x: torch.Tensor, out_len: int, pre_slope: float | None = None,
            post_slope: float | None = None, dest: torch.Tensor | None = None,
            offset: int = 0) -> torch.Tensor:
        """Tiled: ``(1, C, 1, T)`` → time-major ``(covered(out_len), O)``, whose first
        ``out_len`` rows are ``post(conv(pre(x)))`` over ``x`` with ``left`` zeros before it
        (and zeros after, as far as the outputs need); the rows after are scratch.
        With ``dest`` (time-major), written into its rows from ``offset`` on instead."""
        covered = self.covered(out_len)
        buf = padded_input(x, self.left, covered + self.span - 1, pre_slope)
        out = x.new_empty(covered, self.out_ch) if dest is None else (
            dest[offset:offset + covered])
        return write_tiles_(out, self.tiles(out_len), lambda start, length: self._conv(
            channels_last(buf[start:start + length + self.span - 1]), post_slope))

    def _weight(self, width: int) -> torch.Tensor:
        """The weight for an input ``width`` samples wide: tiled and fused, packed once
        into the blocked layout oneDNN picks for that shape. A plain weight is reordered
        at every call, i.e. at every tile (2-20 % of a tile's time on 2 Xeon cores); one
        packed for another width may be the wrong layout: with AVX2 (2 Zen 2 cores,
        2026-12-05) oneDNN wanted ``Acdb24a`` for 1026-wide tiles and ``Acdb16a`` for
        130-wide ones, and converting between them took 6.6 ms per 0.45 ms tile. Widths
        whose layouts come out byte-identical share one tensor."""
        if not self.fused or self.tile is None:
            return self.weight
        packed = self._packed.get(width)
        if packed is None:
            # Once packed, the plain weight is not kept: the packed one gives it back.
            plain = self.weight.to_dense() if self.weight.is_mkldnn else self.weight
            packed = torch._C._nn.mkldnn_reorder_conv2d_weight(
                plain.contiguous().to_mkldnn(), self.padding, [1, 1], self.dil2d, 1,
                [1, plain.shape[1], 1, width])
            raw = _mkldnn_bytes(packed)
            packed = next((p for p in self._packed.values() if _mkldnn_bytes(p) == raw),
                          packed)
            self._packed[width] = packed
            self.weight = packed
        return packed

    @property
    def packed_bytes(self) -> int:
        """Bytes of the distinct packed weights (the plain weight not counted)."""
        return sum(torch.ops.mkldnn._nbytes(p)
                   for p in {id(p): p for p in self._packed.values()}.values())

    def _conv(self, x: torch.Tensor, post_slope: float | None) -> torch.Tensor:
        args = (self._weight(x.shape[-1]), self.bias, self.padding, [1, 1], self.dil2d, 1)
        if self.fused:
            attr, scalars = ("none", []) if post_slope is None else ("leaky_relu", [post_slope])
            return torch.ops.mkldnn._convolution_pointwise(x, *args, attr, scalars, "")
        y = F.conv2d(x, self.weight, self.bias, 1, self.padding, self.dil2d)
        return y if post_slope is None else F.leaky_relu_(y, post_slope)

    def __call__(self, x: torch.Tensor, pre_slope: float | None = None,
                 post_slope: float | None = None) -> torch.Tensor:
        """``(1, C, 1, T)`` → ``(1, O, 1, T)``: ``post(conv(pre(x)))``."""
        if self.tile is not None:
            t = x.shape[-1]
            return channels_last(self.run(x, t, pre_slope, post_slope)[:t])
        if not self.polyphase:
            x = x if pre_slope is None else F.leaky_relu(x, pre_slope)
            return self._conv(x, post_slope)
        t, d = x.shape[-1], self.dilation
        rows = -(-t // d)
        buf = padded_input(x, 0, rows * d, pre_slope)  # (rows·d, C)
        grid = buf.view(1, rows, d, -1).permute(0, 3, 1, 2)  # (1, C, rows, d) channels-last
        y = self._conv(grid, post_slope)  # (1, O, rows, d)
        return channels_last(y.permute(0, 2, 3, 1).reshape(rows * d, -1)[:t])

    def add_to_(self, x: torch.Tensor, acc: torch.Tensor,
                pre_slope: float | None = None) -> torch.Tensor:
        """``acc += conv(pre(x))`` in place; returns ``acc``."""
        if self.polyphase or not self.fused or not acc.is_contiguous(memory_format=CL):
            return acc.add_(self(x, pre_slope))
        if self.tile is not None:
            buf = padded_input(x, self.left, self.padded_rows(x.shape[-1]), pre_slope)
            return self.add_padded_(buf, acc)
        x = x if pre_slope is None else F.leaky_relu(x, pre_slope)
        return torch.ops.mkldnn._convolution_pointwise_.binary(
            acc, x, self.weight, self.bias, self.padding, [1, 1], self.dil2d, 1,
            "add", None, None, [], None)

    @property
    def chains(self) -> bool:
        """Whether :meth:`add_padded_` and :func:`fused_pair_` serve (tiled, fused)."""
        return self.tile is not None and self.fused

    def _add_into(self, dest: torch.Tensor, xin: torch.Tensor) -> None:
        """``dest += conv(xin)`` for one tile, ``(1, O, 1, L)`` and ``(1, C, 1, L + span - 1)``
        channels-last (tiled and fused only)."""
        torch.ops.mkldnn._convolution_pointwise_.binary(
            dest, xin, self._weight(xin.shape[-1]), self.bias, self.padding,
            [1, 1], self.dil2d, 1, "add", None, None, [], None)

    def add_padded_(self, buf: torch.Tensor, acc: torch.Tensor) -> torch.Tensor:
        """``acc += conv`` of a time-major input already padded (``left`` zeros, the
        input, zeros up to :meth:`padded_rows`); tiled and fused only. Returns ``acc``."""
        return add_tiles_(acc, self.tiles(acc.shape[-1]), lambda start, length, dest: (
            self._add_into(dest, channels_last(buf[start:start + length + self.span - 1]))))


class UpConv:
    """A ``ConvTranspose1d`` (stride ``s``, ``k`` taps, padding ``p``) as a tiled
    :class:`DirectConv`: with ``K = ⌈k/s⌉``, output ``n = q·s + r - p`` is
    ``Σ_t x[q - t] · W[:, :, t·s + r]`` for ``t < K``, so a ``K``-tap conv (``K - 1`` zeros
    on the left) from ``C`` to ``s·O`` channels, ordered ``(r, o)``, gives a time-major
    ``(Q, s·O)`` buffer that *is* the ``(Q·s, O)`` output; the ``p``-row offset is a view.
    Fixed tile shapes instead of oneDNN's transposed conv built for every length."""

    def __init__(self, up: nn.ConvTranspose1d, fused: bool, tile: tuple[int, int]):
        w = up.weight.detach()  # (C, O, k)
        in_ch, out_ch, k = w.shape
        s, p = up.stride[0], up.padding[0]
        if up.dilation[0] != 1 or up.groups != 1 or up.output_padding[0] != 0:
            raise ValueError("UpConv handles plain ConvTranspose1d layers only")
        taps = -(-k // s)
        wp = w.new_zeros(s, out_ch, in_ch, taps)  # (r, o, c, u)
        for u in range(taps):
            for r in range(s):
                j = (taps - 1 - u) * s + r
                if j < k:
                    wp[r, :, :, u] = w[:, :, j].t()
        conv = nn.Conv1d(in_ch, s * out_ch, taps)
        with torch.no_grad():
            conv.weight.copy_(wp.reshape(s * out_ch, in_ch, taps))
            conv.bias.copy_(up.bias.detach().repeat(s))
        self.conv = DirectConv(conv, fused, tile=tile, left=taps - 1)
        self.stride, self.pad, self.k, self.out_ch = s, p, k, out_ch

    def out_len(self, t: int) -> int:
        """Output samples for ``t`` input frames (as ``nn.ConvTranspose1d``)."""
        return (t - 1) * self.stride - 2 * self.pad + self.k

    def rows(self, t: int) -> int:
        """Conv outputs (rows of ``s`` samples) that cover :meth:`out_len`."""
        return (self.out_len(t) - 1 + self.pad) // self.stride + 1

    def __call__(self, x: torch.Tensor, pre_slope: float | None = None) -> torch.Tensor:
        """``(1, C, 1, T)`` → ``(1, O, 1, out_len(T))`` channels-last."""
        t = x.shape[-1]
        rows, n = self.rows(t), self.out_len(t)
        z = self.conv.run(x, rows, pre_slope)
        flat = z[:rows].view(rows * self.stride, self.out_ch)
        return channels_last(flat[self.pad:self.pad + n])


def fused_pair_(c1: DirectConv, c2: DirectConv, acc: torch.Tensor,
                slope: float) -> torch.Tensor:
    """``acc += c2(lrelu(c1(lrelu(acc))))`` (leaky ReLUs of ``slope``) tile by tile: for
    each of ``c2``'s tiles, ``c1`` computes just the outputs that tile reads
    (``c2.span - 1`` more than it writes) and ``c2`` adds its conv of them into ``acc``
    while they are in cache. The middle activation never goes to memory whole: on 2 cores
    that pass of ~14 MB per pair cost more than the few recomputed edge outputs. Outputs of
    ``c1`` outside the signal are zeroed, as ``c2``'s own zero padding would have them.
    Returns ``acc``."""
    t = acc.shape[-1]
    halo = c2.span - 1
    # Row r of buf feeds c1's output at position r - c2.left.
    buf = padded_input(acc, c1.left + c2.left, c2.covered(t) + halo + c1.span - 1,
                       slope)

    def add(start: int, length: int, dest: torch.Tensor) -> None:
        mid = time_major(c1._conv(channels_last(
            buf[start:start + length + halo + c1.span - 1]), slope))
        if start < c2.left:  # rows before the signal's start
            mid[: c2.left - start].zero_()
        end = t + c2.left - start  # first row past the signal's end
        if end < length + halo:
            mid[max(end, 0):].zero_()
        c2._add_into(dest, channels_last(mid))

    return add_tiles_(acc, c2.tiles(t), add)

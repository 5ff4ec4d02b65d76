"""CPU fast path for the HiFi-GAN generator: the same maths with fewer FLOPs and passes.

On CPU the reference generator's convolutions already run near the cores' FMA peak
(~200 GFLOP/s on 2 Zen 4 cores, as fast as a large SGEMM), so speed has to come from
doing less work per output sample:

* **Channels-last layout.** Activations are ``(B, C, 1, T)`` channels-last tensors
  (memory order ``(B, T, C)``), which oneDNN convolves without reordering them per call.
* **Fused epilogues.** ``conv → leaky_relu`` and ``acc += conv(x)`` run as one oneDNN
  primitive (``torch.ops.mkldnn._convolution_pointwise``), the residual add in place;
  the leaky_relu before a padded conv is fused into the copy that pads.
* **Polyphase dilated convs** (off by default, see :class:`SpeedRule`). A conv with
  dilation ``d`` over ``T`` samples equals an undilated ``(k, 1)`` conv2d over the
  ``(T/d, d)`` view of the same memory (:class:`DirectConv`).
* **Spectral convs for long kernels on many channels.** By overlap-save with a real DFT
  written as matrix products, a ``k``-tap ``C → C`` conv costs about
  ``(4F/L)·C² + (2F·(N+L)/L)·C`` MACs per output sample instead of ``k·C²``
  (``N``-sample blocks, ``F = N/2 + 1`` bins, ``L = N - span + 1`` outputs per block),
  all of it in GEMMs (:class:`SpectralConv`). Used where that wins (:class:`SpeedRule`).
* **Fixed-shape tiles.** oneDNN builds a kernel for every new conv shape and caches up
  to 1024 of them; with AVX-512/AMX a kernel of this vocoder held ~3 MB, so convs at the
  request's own length grew the process by ~170 MB per new length (1.1 → 4.4 GB over 20
  lengths, ``bench/vocoder_memory.py``) and spent 2–400 ms building. Every conv, the
  transposed ones too (:class:`UpConv`), runs on overlapping views of its padded input
  in tiles of two lengths (:func:`tile_sizes`), all built at load
  (:meth:`CpuGenerator.warm_up`); the spectral convs use GEMMs, which build nothing.
* **int8 convs** (opt-in per upsampling stage, ``int8_stages``): 7-bit per-channel
  weights, uint8 activations quantized per call from their own min/max, oneDNN's
  quantized conv with float32 output (:class:`Int8Conv`). Not exact: see its docstring.

With no int8 stages, results match the eager generator to float32 rounding (max |diff|
~2e-5 on speech).
"""

from __future__ import annotations

import ctypes
import logging
import math
import warnings
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from cosyvoice.vocoder.hifigan import LRELU_SLOPE, POST_LRELU_SLOPE, Generator

logger = logging.getLogger(__name__)

CL = torch.channels_last

# torch 2.13 marks quantized tensor creation deprecated; Int8Conv only uses it to round
# float → uint8 in one vectorised pass and reads the bytes out (checked by the tests).
warnings.filterwarnings("ignore", message=r"torch\.quantize_per_tensor", category=UserWarning)


def fused_ops_available() -> bool:
    """Whether this torch build has oneDNN's fused conv primitives (x86 CPU builds do)."""
    return torch.backends.mkldnn.is_available() and hasattr(
        torch.ops.mkldnn, "_convolution_pointwise")


@dataclass(frozen=True)
class SpeedRule:
    """Which layers take which trick; from timings on 2 cores (torch 2.13).

    Per layer, medians of 7 interleaved runs, ms per conv, ``lrelu → conv → lrelu`` at
    V1's lengths for 430 frames on the EPYC (``bench/vocoder_layers.py`` prints the full
    table)::

        C    k  d   direct  spectral(best N)       C    k  d   direct  spectral(best N)
        256  7  1    28.1    17.5 (64)             128  7  1    53.7    42.0 (64)
        256 11  1    50.8    18.6 (64)             128  7  3    51.8    62.7 (64)
        256 11  3    47.9    23.5 (128)            128 11  1   117.3    54.7 (64)
        256  3  *    ~15     ≥ 17                  128 11  3   120.0    69.6 (128)
        64   *  *   direct always wins             128 11  5    81.2    62.4 (128)

    The generator runs its convs tiled and its resblock pairs fused
    (:func:`_fused_pair_`), which a single layer's timing does not show, so the rule was
    then checked resblock by resblock inside the generator (``bench/vocoder_blocks.py``,
    rules side by side; 2026-12-04, 2 Xeon cores, medians of 21, ms per resblock, the
    previous rule, which kept every 64-channel conv and the dilated 128-channel k7 convs
    direct, → today's)::

        stage 1 (128 ch) k7 resblock:   123.3 → 108.4   (its d3 and d5 convs spectral)
        stage 2 (64 ch)  k11 resblock:  124.3 → 102.0   (all six spectral)
        stage 2 (64 ch)  k7 resblock:    81.4 →  89.5   if spectral: kept direct
        stage 3 (32 ch)  k11 resblock:   68.5 → 101.3   if spectral: kept direct

    So a conv goes spectral when, for the largest channel count of ``spectral_kernels``
    ``(channels, taps)`` that it reaches, it has at least that many taps (dilated ones at
    least ``spectral_dilated_kernel``).
    Its DFT block is the smallest power of two ≥ ``block_factor`` × its span and ≥
    ``min_block`` (64: on the Xeon, 128 ch k7 d1 took 22.8 ms at 32 and 16.9 at 64; 64
    was the best on the EPYC too), halved while its spectra exceed ``spectral_max_mb`` (a
    block under 2 × span is never used: then it stays direct). At the default 20 MB cap
    the 256-channel convs get blocks of 32 and their dilated ones stay direct: blocks of
    64 (a 40 MB cap) took the 256-channel k7 and k11 resblocks from 55.3 and 74.5 to
    47.1 and 63.8 ms but would add 243 MB of spectra (279 → 522 MB).

    ``polyphase_channels``: dilated convs with at most that many channels and at least
    ``polyphase_kernel`` taps run as undilated convs over a ``(T/d, d)`` view. With torch
    2.13's oneDNN that is slower than its dilated kernel at every layer of V1 (e.g. 64 ch
    k7 d3: 51 vs 29 ms), so it is off (0) by default; kept for other builds.
    """

    spectral_kernels: tuple[tuple[int, int], ...] = ((128, 7), (64, 11))
    spectral_dilated_kernel: int = 7
    spectral_max_mb: float = 20.0
    block_factor: int = 3
    min_block: int = 64
    polyphase_kernel: int = 7
    polyphase_channels: int = 0

    def spectral_block(self, conv: nn.Conv1d) -> int | None:
        """The DFT block length for ``conv``, or None when it should stay direct."""
        c, k, d = conv.in_channels, conv.kernel_size[0], conv.dilation[0]
        if conv.out_channels != c:
            return None
        taps = next((kt for ch, kt in sorted(self.spectral_kernels, reverse=True) if c >= ch),
                    None)
        if taps is None or k < taps or (d > 1 and k < self.spectral_dilated_kernel):
            return None
        span = d * (k - 1) + 1
        n = max(self.min_block, 1 << math.ceil(math.log2(self.block_factor * span)))
        while n >= 2 * span:
            if (n // 2 + 1) * (2 * c) ** 2 * 4 <= self.spectral_max_mb * 2**20:
                return n
            n //= 2
        return None

    def spectral(self, conv: nn.Conv1d) -> bool:
        return self.spectral_block(conv) is not None

    def polyphase(self, conv: nn.Conv1d) -> bool:
        return (conv.dilation[0] > 1 and conv.kernel_size[0] >= self.polyphase_kernel
                and conv.in_channels <= self.polyphase_channels)


def _time_major(x: torch.Tensor) -> torch.Tensor:
    """``(1, C, 1, T)`` channels-last → ``(T, C)`` view (no copy)."""
    return x.permute(0, 2, 3, 1).flatten(0, 2)


def _channels_last(y: torch.Tensor) -> torch.Tensor:
    """``(T, C)`` with unit channel stride → ``(1, C, 1, T)`` channels-last view."""
    return y.t().unsqueeze(0).unsqueeze(2)


def _mkldnn_bytes(t: torch.Tensor) -> bytes:
    """The raw bytes of an opaque oneDNN tensor (its blocked layout, padding included)."""
    return ctypes.string_at(torch.ops.mkldnn.data_ptr(t), torch.ops.mkldnn._nbytes(t))


def _padded_input(x: torch.Tensor, left: int, length: int,
                  pre_slope: float | None) -> torch.Tensor:
    """``(1, C, 1, T)`` → ``(length, C)``: ``left`` zeros, ``lrelu(x)`` (or x), zeros."""
    t, c = x.shape[-1], x.shape[1]
    buf = x.new_empty(length, c)
    buf[:left].zero_()
    buf[left + t:].zero_()
    body = buf[left:left + t]
    if pre_slope is None:
        body.copy_(_time_major(x))
    else:
        torch._C._nn.leaky_relu(_time_major(x), pre_slope, out=body)
    return buf


def tile_plan(t: int, tile: int, small: int) -> list[tuple[int, int]]:
    """``(start, length)`` output tiles covering ``t`` samples: ``tile``-long ones, then
    ``small``-long ones for the rest (the last may reach past ``t``)."""
    big, rest = divmod(t, tile)
    out = [(i * tile, tile) for i in range(big)]
    out += [(big * tile + j * small, small) for j in range(-(-rest // small))]
    return out


def tile_sizes(rate: int) -> tuple[int, int]:
    """``(tile, small)`` for a conv running at ``rate`` samples per mel frame: 64 and 8
    frames' worth, so the waste past the end stays under 8 frames and a long request runs
    few tiles; at low rates at least 1024 and 128 samples (128 and 16 frames at most, and
    at least 32), where a tile's fixed cost would dominate. Chosen by the side-by-side
    sweep of ``bench/vocoder_memory.py --sweep`` (2026-12-04, RTF fp32/int8 on 2 Xeon
    cores: 0.149/0.099 against 0.158/0.105 for 32 and 4 frames, 0.170/0.111 for 16 and 2)."""
    return (max(64 * rate, min(128 * rate, 1024)),
            max(8 * rate, min(16 * rate, 128), 32))


class _Tiled:
    """What a conv with ``tiles(t)`` and ``span`` knows of its tiles' extent."""

    span: int

    def tiles(self, t: int) -> list[tuple[int, int]]:
        raise NotImplementedError

    def covered(self, t: int) -> int:
        """Outputs the tiles of ``t`` outputs compute (``t`` up to one small tile more)."""
        start, length = self.tiles(t)[-1]
        return start + length

    def padded_rows(self, t: int) -> int:
        """Rows of zero-padded input the tiles of ``t`` outputs read."""
        return self.covered(t) + self.span - 1


class DirectConv(_Tiled):
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
        buf = _padded_input(x, self.left, covered + self.span - 1, pre_slope)
        out = x.new_empty(covered, self.out_ch) if dest is None else (
            dest[offset:offset + covered])
        for start, length in self.tiles(out_len):
            xin = _channels_last(buf[start:start + length + self.span - 1])
            out[start:start + length].copy_(_time_major(self._conv(xin, post_slope)))
        return out

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
            return _channels_last(self.run(x, t, pre_slope, post_slope)[:t])
        if not self.polyphase:
            x = x if pre_slope is None else F.leaky_relu(x, pre_slope)
            return self._conv(x, post_slope)
        t, d = x.shape[-1], self.dilation
        rows = -(-t // d)
        buf = _padded_input(x, 0, rows * d, pre_slope)  # (rows·d, C)
        grid = buf.view(1, rows, d, -1).permute(0, 3, 1, 2)  # (1, C, rows, d) channels-last
        y = self._conv(grid, post_slope)  # (1, O, rows, d)
        return _channels_last(y.permute(0, 2, 3, 1).reshape(rows * d, -1)[:t])

    def add_to_(self, x: torch.Tensor, acc: torch.Tensor,
                pre_slope: float | None = None) -> torch.Tensor:
        """``acc += conv(pre(x))`` in place; returns ``acc``."""
        if self.polyphase or not self.fused or not acc.is_contiguous(memory_format=CL):
            return acc.add_(self(x, pre_slope))
        if self.tile is not None:
            buf = _padded_input(x, self.left, self.padded_rows(x.shape[-1]), pre_slope)
            return self.add_padded_(buf, acc)
        x = x if pre_slope is None else F.leaky_relu(x, pre_slope)
        return torch.ops.mkldnn._convolution_pointwise_.binary(
            acc, x, self.weight, self.bias, self.padding, [1, 1], self.dil2d, 1,
            "add", None, None, [], None)

    @property
    def chains(self) -> bool:
        """Whether :meth:`add_padded_` and :func:`_fused_pair_` serve (tiled, fused)."""
        return self.tile is not None and self.fused

    def _add_tile_(self, tm: torch.Tensor, start: int, length: int,
                   xin: torch.Tensor) -> None:
        """``tm[start:start + length] += conv(xin)`` for one tile of the time-major
        accumulator ``tm``. oneDNN adds into ``tm``; the last tile, which may reach past
        the end, adds into a copy (the same kernel, so warm-up builds every one this
        uses)."""
        t = tm.shape[0]
        inside = start + length <= t
        dest = tm[start:start + length] if inside else _padded_input(
            _channels_last(tm[start:]), 0, length, None)
        torch.ops.mkldnn._convolution_pointwise_.binary(
            _channels_last(dest), xin, self._weight(xin.shape[-1]), self.bias, self.padding,
            [1, 1], self.dil2d, 1, "add", None, None, [], None)
        if not inside:
            tm[start:].copy_(dest[: t - start])

    def add_padded_(self, buf: torch.Tensor, acc: torch.Tensor) -> torch.Tensor:
        """``acc += conv`` of a time-major input already padded (``left`` zeros, the
        input, zeros up to :meth:`padded_rows`); tiled and fused only. Returns ``acc``."""
        tm = _time_major(acc)
        for start, length in self.tiles(acc.shape[-1]):
            self._add_tile_(tm, start, length,
                            _channels_last(buf[start:start + length + self.span - 1]))
        return acc


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
        return _channels_last(flat[self.pad:self.pad + n])


def int8_ops_available() -> bool:
    """Whether this torch build has oneDNN's quantized conv with float output (x86 builds)."""
    return (torch.backends.mkldnn.is_available()
            and hasattr(torch.ops.onednn, "qconv2d_pointwise")
            and hasattr(torch.ops.onednn, "qconv_prepack")
            and hasattr(torch, "quantize_per_tensor"))


class Int8Conv(_Tiled):
    """A ``Conv1d`` on ``(1, C, 1, T)`` channels-last input in int8 arithmetic.

    * Weights: symmetric, one scale per output channel, **7-bit** (|q| ≤ 63). On AVX2
      CPUs without VNNI oneDNN multiplies u8 × s8 with ``vpmaddubsw``, which sums two
      products into a saturating int16: with 8-bit weights, 2 · 255 · 127 overflows it and
      the result is silently wrong (measured: 9 % relative error on a Gaussian input).
      2 · 255 · 63 = 32130 < 2¹⁵ cannot overflow; the 7th bit costs ~0.2 % relative error.
    * Activations: ``pre(x)`` quantized to uint8 per call with an asymmetric scale from
      its own min and max (one pass), so nothing is calibrated and a loud or quiet input
      keeps all 256 levels. The uint8 tensor aliases the quantized tensor's storage (no
      ``int_repr`` copy).
    * **Fixed-length tiles.** oneDNN builds an int8 kernel for each input shape, and on
      CPUs with AMX (Intel Sapphire Rapids and later) that took 10–400 ms per new length
      here, against 2–8 ms for the conv itself; every request has a new length. So the
      zero-padded, quantized input is cut into overlapping tiles of ``TILE`` outputs (the
      rest in tiles of ``SMALL``) and each runs with no padding: two shapes per conv,
      built once (:meth:`CpuGenerator.warm_up`), at most ``SMALL - 1`` wasted outputs.
      Tiles are views of the time-major buffer (no copies in).
    * The conv runs in oneDNN with int32 accumulation and writes float32 with the bias
      added; in :meth:`add_to_` it sums straight into the accumulator (oneDNN's ``sum``
      post-op). ``post_slope`` runs in float32 after it.

    Error against float32, measured on the universal V1 generator (``bench/vocoder_int8``):
    one conv 1–3 % relative (mostly the 7-bit weights); the whole generator with stages
    1–2 in int8 28–33 dB SNR of the waveform, DNSMOS unchanged.
    """

    WEIGHT_MAX = 63
    TILE = 4096
    SMALL = 512

    def __init__(self, conv: nn.Conv1d):
        w = conv.weight.detach().float()
        self.out_ch = w.shape[0]
        self.w_scale = (w.abs().amax(dim=(1, 2)).clamp_min(1e-12) / self.WEIGHT_MAX).contiguous()
        wq = torch.round(w / self.w_scale[:, None, None]).clamp_(-self.WEIGHT_MAX,
                                                                  self.WEIGHT_MAX)
        wq = wq.to(torch.int8).unsqueeze(2).contiguous(memory_format=CL)
        self.pad = conv.padding[0]
        self.span = conv.dilation[0] * (conv.kernel_size[0] - 1) + 1
        self.padding, self.dil2d = [0, self.pad], [1, conv.dilation[0]]
        # The prepacked weight does not depend on the activation scale (checked in the
        # tests by running two scales through one packing).
        self.weight = torch.ops.onednn.qconv_prepack(
            wq, self.w_scale, 1.0, 0, [1, 1], [0, 0], self.dil2d, 1, None)
        self.w_zero = torch.zeros(self.out_ch, dtype=torch.long)
        self.bias = conv.bias.detach().float().clone()

    @property
    def nbytes(self) -> int:
        return self.weight.numel() * self.weight.element_size()

    @staticmethod
    def _quantize_rows(x: torch.Tensor) -> tuple[torch.Tensor, float, int]:
        """Contiguous float ``(..., C)`` → (uint8 same shape, scale, zero point)."""
        lo, hi = torch.aminmax(x.reshape(-1))
        lo, hi = min(float(lo), 0.0), max(float(hi), 0.0)
        if not math.isfinite(lo) or not math.isfinite(hi):
            raise ValueError("the vocoder met a non-finite activation (NaN or inf in the mel?)")
        scale = max(hi - lo, 1e-8) / 255.0
        zero = min(255, max(0, round(-lo / scale)))
        q = torch.quantize_per_tensor(x, scale, zero, torch.quint8)
        u8 = torch.empty(0, dtype=torch.uint8)
        u8.set_(q.untyped_storage(), q.storage_offset(), q.shape, q.stride())
        return u8, scale, zero

    @staticmethod
    def quantize(x: torch.Tensor) -> tuple[torch.Tensor, float, int]:
        """``(1, C, 1, T)`` channels-last float → (uint8 ``(1, C, 1, T)``, scale, zero
        point): the operands :meth:`__call__` convolves (zero padding maps to the zero
        point exactly, so padding first changes nothing)."""
        u8, scale, zero = Int8Conv._quantize_rows(_time_major(x).contiguous())
        return _channels_last(u8), scale, zero

    @property
    def tile(self) -> tuple[int, int]:
        return self.TILE, self.SMALL

    def tiles(self, t: int) -> list[tuple[int, int]]:
        """``(start, length)`` output tiles covering ``t`` samples."""
        return tile_plan(t, self.TILE, self.SMALL)

    @property
    def left(self) -> int:
        return self.pad

    def _prepare(self, x: torch.Tensor, pre_slope: float | None):
        t = x.shape[-1]
        tiles = self.tiles(t)
        covered = tiles[-1][0] + tiles[-1][1] if tiles else 0
        buf = _padded_input(x, self.pad, covered + self.span - 1, pre_slope)
        u8, scale, zero = self._quantize_rows(buf)
        return tiles, covered, u8, scale, zero

    def run(self, x: torch.Tensor, out_len: int, pre_slope: float | None = None,
            post_slope: float | None = None, dest: torch.Tensor | None = None,
            offset: int = 0) -> torch.Tensor:
        """As :meth:`DirectConv.run` (``out_len`` must be ``x``'s length)."""
        tiles, covered, u8, scale, zero = self._prepare(x, pre_slope)
        out = x.new_empty(covered, self.out_ch) if dest is None else (
            dest[offset:offset + covered])
        for start, length in tiles:
            out[start:start + length].copy_(
                _time_major(self._conv(u8, start, length, scale, zero)))
        if post_slope is not None:
            F.leaky_relu_(out[:out_len], post_slope)
        return out

    def add_padded_(self, buf: torch.Tensor, acc: torch.Tensor) -> torch.Tensor:
        """As :meth:`DirectConv.add_padded_`: the input quantized here, in one pass."""
        u8, scale, zero = self._quantize_rows(buf)
        return self._add_tiles(u8, scale, zero, acc)

    def _conv(self, u8: torch.Tensor, start: int, length: int, scale: float, zero: int,
              acc: torch.Tensor | None = None) -> torch.Tensor:
        xin = _channels_last(u8[start:start + length + self.span - 1])
        args = (self.bias, [1, 1], [0, 0], self.dil2d, 1, 1.0, 0, torch.float32)
        if acc is None:
            return torch.ops.onednn.qconv2d_pointwise(
                xin, scale, zero, self.weight, self.w_scale, self.w_zero, *args,
                "none", [], "")
        return torch.ops.onednn.qconv2d_pointwise.binary(
            xin, scale, zero, self.weight, self.w_scale, self.w_zero, acc, *args,
            1.0, 0, "sum", 1.0, "none", [], "")

    def __call__(self, x: torch.Tensor, pre_slope: float | None = None,
                 post_slope: float | None = None) -> torch.Tensor:
        """``(1, C, 1, T)`` → ``(1, O, 1, T)`` channels-last float32: ``post(conv(pre(x)))``."""
        t = x.shape[-1]
        return _channels_last(self.run(x, t, pre_slope, post_slope)[:t])

    def add_to_(self, x: torch.Tensor, acc: torch.Tensor,
                pre_slope: float | None = None) -> torch.Tensor:
        """``acc += conv(pre(x))`` in place; returns ``acc``."""
        if not acc.is_contiguous(memory_format=CL):
            return acc.add_(self(x, pre_slope))
        _, _, u8, scale, zero = self._prepare(x, pre_slope)
        return self._add_tiles(u8, scale, zero, acc)

    def _add_tiles(self, u8: torch.Tensor, scale: float, zero: int,
                   acc: torch.Tensor) -> torch.Tensor:
        t = acc.shape[-1]
        tm = _time_major(acc)
        for start, length in self.tiles(t):
            inside = start + length <= t
            # oneDNN adds into acc; the last tile, which may reach past the end, adds into
            # a copy (the same kernel, so warm-up builds every one this uses)
            dest = tm[start:start + length] if inside else _padded_input(
                _channels_last(tm[start:]), 0, length, None)
            self._conv(u8, start, length, scale, zero, _channels_last(dest))
            if not inside:
                tm[start:].copy_(dest[: t - start])
        return acc


def _block_size(span: int) -> int:
    """DFT length per block: a power of two at least twice the kernel span, ≥ 32."""
    return max(32, 1 << math.ceil(math.log2(2 * span)))


class SpectralConv:
    """Same-padded ``C → O`` Conv1d by overlap-save with a real DFT as matrix products.

    Input blocks of ``N`` samples overlap by the kernel span ``S = d·(k-1)+1`` and give
    ``L = N - S + 1`` outputs each. With ``X = D @ block`` (``D``: ``(2F, N)`` rows
    ``Re, Im`` per bin) the product by the conjugated kernel spectrum is, per bin ``f``,
    two real GEMMs ``[Xr Xi] @ [Wr; -Wi]`` and ``[Xr Xi] @ [Wi; Wr]`` over all blocks,
    written straight into a ``(2, F, blocks, O)`` buffer, and ``Dinv (L, 2F)`` maps each
    block's ``(2F, O)`` slice of it (a strided view, no copy) to its ``(L, O)`` outputs:
    a batched product that writes them where they go (``__call__``) or adds them into
    the accumulator (``add_to_``, ``baddbmm_``), so no output buffer is made and read
    again (~2 ms of 15 per 128-channel conv on 2 cores). The bias is added to the DC
    bin. Spectra are computed in float64 once, stored in float32.
    """

    def __init__(self, conv: nn.Conv1d, block: int | None = None):
        w = conv.weight.detach().to(torch.float64)
        out_ch, in_ch, k = w.shape
        d = conv.dilation[0]
        self.span = d * (k - 1) + 1
        self.pad = conv.padding[0]
        self.n = block or _block_size(self.span)
        self.hop = self.n - self.span + 1
        self.bins = self.n // 2 + 1
        self.out_ch = out_ch
        self.fwd, self.inv = self._dft_matrices()
        # Conjugated kernel spectrum per bin, (F, C, O): Σ_j w_j·e^{+2πi·f·j·d/N}, as one
        # small float64 product (F × k) @ (k × C·O) instead of an FFT of zero-padded taps.
        ang = (2 * math.pi / self.n) * torch.outer(
            torch.arange(self.bins, dtype=torch.float64),
            torch.arange(k, dtype=torch.float64) * d)
        wk = w.permute(2, 1, 0).reshape(k, in_ch * out_ch)
        re = (torch.cos(ang) @ wk).view(self.bins, in_ch, out_ch)
        im = (torch.sin(ang) @ wk).view(self.bins, in_ch, out_ch)
        self.w_re = torch.empty(self.bins, 2 * in_ch, out_ch)  # (F, 2C, O): [Wr; -Wi]
        self.w_im = torch.empty(self.bins, 2 * in_ch, out_ch)  # (F, 2C, O): [Wi; Wr]
        self.w_re[:, :in_ch], self.w_re[:, in_ch:] = re, -im
        self.w_im[:, :in_ch], self.w_im[:, in_ch:] = im, re
        self.dc_bias = conv.bias.detach().to(torch.float32) * self.n

    def _dft_matrices(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``D (2F, N)`` forward (rows Re, Im per bin), ``Dinv (L, 2F)`` (all Re, all Im)."""
        n, f = self.n, torch.arange(self.bins, dtype=torch.float64)
        ang = 2 * math.pi * f[:, None] * torch.arange(n, dtype=torch.float64)[None] / n
        fwd = torch.stack([torch.cos(ang), -torch.sin(ang)], 1).reshape(2 * self.bins, n)
        weight = torch.full((self.bins,), 2.0, dtype=torch.float64)
        weight[0] = 1.0
        weight[-1] = 1.0  # Nyquist bin (n is even)
        t = torch.arange(self.hop, dtype=torch.float64)
        ang = 2 * math.pi * t[:, None] * f[None] / n
        inv = torch.stack([weight * torch.cos(ang), -weight * torch.sin(ang)], 1) / n
        return fwd.to(torch.float32), inv.reshape(self.hop, 2 * self.bins).to(torch.float32)

    @property
    def nbytes(self) -> int:
        return 2 * self.w_re.numel() * self.w_re.element_size()

    @property
    def left(self) -> int:
        return self.pad

    def covered(self, t: int) -> int:
        """Outputs the blocks of ``t`` outputs compute (whole blocks: ``t`` or more)."""
        return -(-t // self.hop) * self.hop

    def padded_rows(self, t: int) -> int:
        """Rows of zero-padded input the blocks of ``t`` outputs read."""
        return self.covered(t) + self.span - 1

    def _spectra(self, x: torch.Tensor, pre_slope: float | None) -> torch.Tensor:
        """Per block, the output spectrum with bias: ``(blocks, 2F, O)`` (a strided view;
        ``blocks·L ≥ T``), ready for ``Dinv @`` block by block."""
        t = x.shape[-1]
        return self._spectra_padded(
            _padded_input(x, self.pad, self.padded_rows(t), pre_slope), t)

    def _spectra_padded(self, buf: torch.Tensor, t: int) -> torch.Tensor:
        """As :meth:`_spectra`, of a time-major input already padded (``left`` zeros, the
        ``t`` input rows, zeros up to :meth:`padded_rows`; rows past that are ignored)."""
        c = buf.shape[1]
        blocks = -(-t // self.hop)
        buf = buf[: blocks * self.hop + self.span - 1]
        seg = buf.unfold(0, self.n, self.hop).transpose(1, 2)  # (blocks, N, C)
        spec = torch.matmul(self.fwd, seg)  # (blocks, 2F, C)
        spec = spec.view(blocks, self.bins, 2 * c).transpose(0, 1)  # (F, blocks, 2C)
        z = buf.new_empty(2, self.bins, blocks, self.out_ch)
        torch.bmm(spec, self.w_re, out=z[0])
        torch.bmm(spec, self.w_im, out=z[1])
        z[0, 0] += self.dc_bias
        return z.view(2 * self.bins, blocks, self.out_ch).transpose(0, 1)

    def run(self, x: torch.Tensor, out_len: int, pre_slope: float | None = None,
            post_slope: float | None = None, dest: torch.Tensor | None = None,
            offset: int = 0) -> torch.Tensor:
        """As :meth:`DirectConv.run` (``out_len`` must be ``x``'s length): time-major
        ``(covered(T), O)`` whose first ``T`` rows are ``post(conv(pre(x)))``, written
        into ``dest`` from row ``offset`` on when given."""
        z = self._spectra(x, pre_slope)
        blocks = z.shape[0]
        out = x.new_empty(blocks * self.hop, self.out_ch) if dest is None else (
            dest[offset:offset + blocks * self.hop])
        # (blocks, L, O) = Dinv (L, 2F) @ z[b]: written where the output goes, no copy
        torch.bmm(self.inv.expand(blocks, -1, -1), z, out=out.view(blocks, self.hop, -1))
        if post_slope is not None:
            F.leaky_relu_(out[:out_len], post_slope)
        return out

    def __call__(self, x: torch.Tensor, pre_slope: float | None = None,
                 post_slope: float | None = None) -> torch.Tensor:
        """``(1, C, 1, T)`` → ``(1, O, 1, T)`` channels-last: ``post(conv(pre(x)))``."""
        t = x.shape[-1]
        return _channels_last(self.run(x, t, pre_slope, post_slope)[:t])

    def add_to_(self, x: torch.Tensor, acc: torch.Tensor,
                pre_slope: float | None = None) -> torch.Tensor:
        """``acc += conv(pre(x))`` in place; returns ``acc``. The inverse DFT adds into
        ``acc`` (``baddbmm_``): no output buffer, no separate pass to add it."""
        return self._add_spectra_(self._spectra(x, pre_slope), acc)

    def add_padded_(self, buf: torch.Tensor, acc: torch.Tensor) -> torch.Tensor:
        """``acc += conv`` of a time-major input already padded (see
        :meth:`_spectra_padded`). Returns ``acc``."""
        return self._add_spectra_(self._spectra_padded(buf, acc.shape[-1]), acc)

    def _add_spectra_(self, z: torch.Tensor, acc: torch.Tensor) -> torch.Tensor:
        t = acc.shape[-1]
        whole, rest = divmod(t, self.hop)
        tm = _time_major(acc)
        if whole:
            tm[: whole * self.hop].view(whole, self.hop, self.out_ch).baddbmm_(
                self.inv.expand(whole, -1, -1), z[:whole])
        if rest:
            tm[whole * self.hop:].addmm_(self.inv[:rest], z[whole])
        return acc


def _writes_into(c1, c2, acc: torch.Tensor) -> bool:
    """Whether :meth:`CpuGenerator._chain` serves ``c1`` → ``c2``: ``c1`` can write its
    output into a buffer (:meth:`run` with ``dest``: tiled direct, int8 or spectral) and
    ``c2`` can read a padded one (:meth:`add_padded_`: tiled fused direct, int8 or
    spectral)."""
    def writes(c) -> bool:
        return isinstance(c, (SpectralConv, Int8Conv)) or (
            isinstance(c, DirectConv) and c.tile is not None)

    def reads(c) -> bool:
        return isinstance(c, (SpectralConv, Int8Conv)) or (
            isinstance(c, DirectConv) and c.chains)

    return (writes(c1) and reads(c2) and isinstance(c1, Int8Conv) == isinstance(c2, Int8Conv)
            and acc.is_contiguous(memory_format=CL))


def _fused_pair_(c1: DirectConv, c2: DirectConv, acc: torch.Tensor) -> torch.Tensor:
    """``acc += c2(lrelu(c1(lrelu(acc))))`` tile by tile: for each of ``c2``'s tiles,
    ``c1`` computes just the outputs that tile reads (``c2.span - 1`` more than it
    writes) and ``c2`` adds its conv of them into ``acc`` while they are in cache. The
    middle activation never goes to memory whole: on 2 cores that pass of ~14 MB per
    pair cost more than the few recomputed edge outputs. Outputs of ``c1`` outside the
    signal are zeroed, as ``c2``'s own zero padding would have them. Returns ``acc``."""
    t = acc.shape[-1]
    halo = c2.span - 1
    # Row r of buf feeds c1's output at position r - c2.left.
    buf = _padded_input(acc, c1.left + c2.left, c2.covered(t) + halo + c1.span - 1,
                        LRELU_SLOPE)
    tm = _time_major(acc)
    for start, length in c2.tiles(t):
        mid = _time_major(c1._conv(_channels_last(
            buf[start:start + length + halo + c1.span - 1]), LRELU_SLOPE))
        if start < c2.left:  # rows before the signal's start
            mid[: c2.left - start].zero_()
        end = t + c2.left - start  # first row past the signal's end
        if end < length + halo:
            mid[max(end, 0):].zero_()
        c2._add_tile_(tm, start, length, _channels_last(mid))
    return acc


def _plan(conv: nn.Conv1d, rule: SpeedRule, fused: bool,
          tile: tuple[int, int] | None = None) -> DirectConv | SpectralConv:
    block = rule.spectral_block(conv)
    if block is not None:
        return SpectralConv(conv, block)
    return DirectConv(conv, fused, polyphase=rule.polyphase(conv), tile=tile)


class CpuGenerator:
    """The :class:`Generator`'s forward on CPU with the tricks above.

    Holds its own copies of the folded weights and kernel spectra. ``__call__`` takes a
    log-mel ``(B, n_mels, T)`` float32 CPU tensor and returns ``(B, 1, T · hop)``; batch
    items run one after another. Call it under ``torch.inference_mode()``.

    ``int8_stages``: the upsampling stages (0 = first, 256 channels in V1) whose MRF
    resblock convs run as :class:`Int8Conv`; ignored (with a warning) where the build
    lacks the ops. conv_pre, the transposed convs and conv_post stay float32.
    """

    def __init__(self, gen: Generator, rule: SpeedRule | None = None,
                 int8_stages: tuple[int, ...] = ()):
        rule = rule or SpeedRule()
        fused = fused_ops_available()
        if int8_stages and not int8_ops_available():
            logger.warning("this torch build has no oneDNN int8 conv; HiFi-GAN runs in float32")
            int8_stages = ()
        self.int8_stages = tuple(sorted(set(int8_stages)))
        self.resblock = gen.cfg.resblock
        self.num_kernels = gen.num_kernels
        # Samples per mel frame at the input of each upsampling stage, and after the last.
        rates = [1]
        for u in gen.ups:
            rates.append(rates[-1] * u.stride[0])
        self.pre = DirectConv(gen.conv_pre, fused, tile=tile_sizes(1))
        self.post = DirectConv(gen.conv_post, False, tile=tile_sizes(rates[-1]))
        self.ups = [UpConv(u, fused, tile_sizes(rates[i])) for i, u in enumerate(gen.ups)]
        convs = (lambda b: zip(b.convs1, b.convs2)) if self.resblock == "1" else (
            lambda b: ((c, None) for c in b.convs))

        def plan(conv: nn.Conv1d | None, stage: int):
            if conv is None:
                return None
            if stage in self.int8_stages:
                return Int8Conv(conv)
            return _plan(conv, rule, fused, tile_sizes(rates[stage + 1]))

        self.blocks = [[(plan(c1, i // self.num_kernels), plan(c2, i // self.num_kernels))
                        for c1, c2 in convs(b)] for i, b in enumerate(gen.resblocks)]
        spectral = [c for blk in self.blocks for pair in blk for c in pair
                    if isinstance(c, SpectralConv)]
        logger.info("CPU HiFi-GAN: %d spectral convs (%.0f MB of spectra), fused ops %s, "
                    "int8 stages %s", len(spectral), sum(c.nbytes for c in spectral) / 2**20,
                    fused, list(self.int8_stages) or "none")

    def _run_block(self, pairs: list, x: torch.Tensor, in_place: bool) -> torch.Tensor:
        """One MRF resblock on ``(1, C, 1, T)``; ``x`` is overwritten only if ``in_place``."""
        acc = x if in_place else x.clone(memory_format=CL)
        for c1, c2 in pairs:
            if c2 is None:  # ResBlock2: acc += conv(lrelu(acc)); the conv reads acc first
                acc.add_(c1(acc, LRELU_SLOPE))
            elif (isinstance(c1, DirectConv) and isinstance(c2, DirectConv) and c1.chains
                  and c2.chains and acc.is_contiguous(memory_format=CL)):
                _fused_pair_(c1, c2, acc)
            elif _writes_into(c1, c2, acc):
                self._chain(c1, c2, acc)
            else:
                c2.add_to_(c1(acc, LRELU_SLOPE, LRELU_SLOPE), acc)
        return acc

    @staticmethod
    def _chain(c1, c2, acc: torch.Tensor) -> None:
        """``acc += c2(lrelu(c1(lrelu(acc))))`` with ``c1``'s output (tiles or blocks)
        written straight into the zero-padded input ``c2`` reads: the middle activation
        is made once, not made and then copied into a padded buffer."""
        t = acc.shape[-1]
        buf = acc.new_empty(max(c2.padded_rows(t), c2.left + c1.covered(t)), c1.out_ch)
        buf[:c2.left].zero_()
        c1.run(acc, t, LRELU_SLOPE, LRELU_SLOPE, dest=buf, offset=c2.left)
        buf[c2.left + t:].zero_()
        c2.add_padded_(buf, acc)

    def mrf(self, stage: int, x: torch.Tensor) -> torch.Tensor:
        """The multi-receptive-field fusion of upsampling stage ``stage`` on its input
        ``(1, C, 1, T)`` (the upsampled signal): the mean of its resblocks. Overwrites
        ``x`` (the last resblock runs in place)."""
        blocks = self.blocks[stage * self.num_kernels:(stage + 1) * self.num_kernels]
        last = len(blocks) - 1
        xs = self._run_block(blocks[0], x, in_place=last == 0)
        for j, pairs in enumerate(blocks[1:], start=1):
            xs.add_(self._run_block(pairs, x, in_place=j == last))
        return xs.div_(self.num_kernels)

    def _one(self, mel: torch.Tensor) -> torch.Tensor:
        """``(1, n_mels, T)`` → ``(1, 1, T · hop)``."""
        x = self.pre(mel.unsqueeze(2).contiguous(memory_format=CL))
        for i, up in enumerate(self.ups):
            x = self.mrf(i, up(x, LRELU_SLOPE))
        x = self.post(F.leaky_relu(x, POST_LRELU_SLOPE))
        return torch.tanh(x).squeeze(2)

    def tiled_lengths(self, frames: int) -> list[tuple[object, int]]:
        """``(conv, outputs)`` for every tiled conv on a ``frames``-long mel, in order."""
        out: list[tuple[object, int]] = [(self.pre, frames)]
        t = frames
        for i, up in enumerate(self.ups):
            out.append((up.conv, up.rows(t)))
            t = up.out_len(t)
            for blk in self.blocks[i * self.num_kernels:(i + 1) * self.num_kernels]:
                out += [(c, t) for pair in blk for c in pair
                        if c is not None and getattr(c, "tile", None) is not None]
        out.append((self.post, t))
        return [(c, n) for c, n in out if c.tile is not None]

    def warm_up_frames(self) -> int:
        """The shortest mel on which every tiled conv runs both its tile lengths (so one
        call builds every oneDNN kernel the generator will use); 0 if nothing is tiled."""
        if not self.tiled_lengths(1):
            return 0
        frames = 1
        while not all({n for _, n in c.tiles(t)} == set(c.tile)
                      for c, t in self.tiled_lengths(frames)):
            frames += 1
        return frames

    def warm_up(self, n_mels: int) -> None:
        """Build the tiled convs' oneDNN kernels now (both tile lengths, every conv)
        rather than in the first request: a short silence-level mel."""
        frames = self.warm_up_frames()
        if frames:
            with torch.inference_mode():
                self(torch.full((1, n_mels, frames), -11.5))

    def __call__(self, mel: torch.Tensor) -> torch.Tensor:
        """``(B, n_mels, T)`` float32 CPU → ``(B, 1, T · hop)``."""
        return torch.cat([self._one(m.unsqueeze(0)) for m in mel], dim=0)

"""int8 convs of the CPU fast path (opt-in per upsampling stage, ``int8_stages``).

7-bit per-channel weights, uint8 activations quantized per call from their own min/max,
oneDNN's quantized conv with float32 output (:class:`Int8Conv`). Not exact: see its
docstring.
"""

from __future__ import annotations

import math
import warnings

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

# torch 2.13 marks quantized tensor creation deprecated; Int8Conv only uses it to round
# float → uint8 in one vectorised pass and reads the bytes out (checked by the tests).
warnings.filterwarnings("ignore", message=r"torch\.quantize_per_tensor", category=UserWarning)


def int8_ops_available() -> bool:
    """Whether this torch build has oneDNN's quantized conv with float output (x86 builds)."""
    return (torch.backends.mkldnn.is_available()
            and hasattr(torch.ops.onednn, "qconv2d_pointwise")
            and hasattr(torch.ops.onednn, "qconv_prepack")
            and hasattr(torch, "quantize_per_tensor"))


class Int8Conv(Tiled):
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
        u8, scale, zero = Int8Conv._quantize_rows(time_major(x).contiguous())
        return channels_last(u8), scale, zero

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
        buf = padded_input(x, self.pad, covered + self.span - 1, pre_slope)
        u8, scale, zero = self._quantize_rows(buf)
        return tiles, covered, u8, scale, zero

    def run(self, x: torch.Tensor, out_len: int, pre_slope: float | None = None,
            post_slope: float | None = None, dest: torch.Tensor | None = None,
            offset: int = 0) -> torch.Tensor:
        """As :meth:`DirectConv.run` (``out_len`` must be ``x``'s length)."""
        tiles, covered, u8, scale, zero = self._prepare(x, pre_slope)
        out = x.new_empty(covered, self.out_ch) if dest is None else (
            dest[offset:offset + covered])
        write_tiles_(out, tiles, lambda start, length: self._conv(u8, start, length, scale, zero))
        if post_slope is not None:
            F.leaky_relu_(out[:out_len], post_slope)
        return out

    def add_padded_(self, buf: torch.Tensor, acc: torch.Tensor) -> torch.Tensor:
        """As :meth:`DirectConv.add_padded_`: the input quantized here, in one pass."""
        u8, scale, zero = self._quantize_rows(buf)
        return self._add_tiles(u8, scale, zero, acc)

    def _conv(self, u8: torch.Tensor, start: int, length: int, scale: float, zero: int,
              acc: torch.Tensor | None = None) -> torch.Tensor:
        xin = channels_last(u8[start:start + length + self.span - 1])
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
        return channels_last(self.run(x, t, pre_slope, post_slope)[:t])

    def add_to_(self, x: torch.Tensor, acc: torch.Tensor,
                pre_slope: float | None = None) -> torch.Tensor:
        """``acc += conv(pre(x))`` in place; returns ``acc``."""
        if not acc.is_contiguous(memory_format=CL):
            return acc.add_(self(x, pre_slope))
        _, _, u8, scale, zero = self._prepare(x, pre_slope)
        return self._add_tiles(u8, scale, zero, acc)

    def _add_tiles(self, u8: torch.Tensor, scale: float, zero: int,
                   acc: torch.Tensor) -> torch.Tensor:
        """``acc += conv`` of the quantized padded input ``u8``, tile by tile (oneDNN's
        ``sum`` post-op adds into ``acc``)."""
        return add_tiles_(acc, self.tiles(acc.shape[-1]), lambda start, length, dest: (
            self._conv(u8, start, length, scale, zero, dest)))

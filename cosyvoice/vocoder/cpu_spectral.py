"""Spectral (FFT) convs of the CPU fast path, for long kernels on many channels.

By overlap-save with a real DFT written as matrix products, a ``k``-tap ``C → C`` conv
costs about ``(4F/L)·C² + (2F·(N+L)/L)·C`` MACs per output sample instead of ``k·C²``
(``N``-sample blocks, ``F = N/2 + 1`` bins, ``L = N - span + 1`` outputs per block), all
of it in GEMMs (:class:`SpectralConv`), which build no oneDNN kernel per length. Where
it wins is :class:`SpeedRule`'s call.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from cosyvoice.kernels.tiling import channels_last, padded_input, time_major


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
            padded_input(x, self.pad, self.padded_rows(t), pre_slope), t)

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
        return channels_last(self.run(x, t, pre_slope, post_slope)[:t])

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
        tm = time_major(acc)
        if whole:
            tm[: whole * self.hop].view(whole, self.hop, self.out_ch).baddbmm_(
                self.inv.expand(whole, -1, -1), z[:whole])
        if rest:
            tm[whole * self.hop:].addmm_(self.inv[:rest], z[whole])
        return acc

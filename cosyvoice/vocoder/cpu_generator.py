"""CPU fast path for the HiFi-GAN generator: the same maths with fewer FLOPs and passes.

On CPU the reference generator's convolutions already run near the cores' FMA peak
(~200 GFLOP/s on 2 Zen 4 cores, as fast as a large SGEMM), so speed has to come from
doing less work per output sample. :class:`CpuGenerator` runs the generator's forward
on convs of three designs, one module each, picked per layer by :class:`SpeedRule`:

* :mod:`cosyvoice.kernels.direct`: oneDNN convs on channels-last activations
  (``(B, C, 1, T)``, memory order ``(B, T, C)``, never reordered per call) with fused
  epilogues (``conv → leaky_relu``, ``acc += conv(x)`` in place), optionally polyphase
  for dilated convs; the transposed convs as direct convs too (:class:`UpConv`).
* :mod:`cosyvoice.vocoder.cpu_spectral`: overlap-save convs with the DFT as GEMMs,
  for long kernels on many channels (:class:`SpectralConv`).
* :mod:`cosyvoice.kernels.int8`: int8 convs, opt-in per upsampling stage
  (``int8_stages``; :class:`Int8Conv`). Not exact: see its docstring.

Every oneDNN conv runs in fixed-shape tiles (:mod:`cosyvoice.kernels.tiling`), all
built at load (:meth:`CpuGenerator.warm_up`), so a new request length builds no kernel
and costs no memory.

With no int8 stages, results match the eager generator to float32 rounding (max |diff|
~2e-5 on speech).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from cosyvoice.kernels.direct import DirectConv, UpConv, fused_ops_available, fused_pair_
from cosyvoice.kernels.int8 import Int8Conv, int8_ops_available
from cosyvoice.kernels.tiling import CL, runs_both_tiles, tile_sizes
from cosyvoice.vocoder.cpu_spectral import SpectralConv
from cosyvoice.vocoder.hifigan import LRELU_SLOPE, POST_LRELU_SLOPE, Generator

logger = logging.getLogger(__name__)


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
    (:func:`fused_pair_`), which a single layer's timing does not show, so the rule was
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
                fused_pair_(c1, c2, acc, LRELU_SLOPE)
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
        while not runs_both_tiles(self.tiled_lengths(frames)):
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

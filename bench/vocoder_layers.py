"""Per-layer timings behind the CPU vocoder's SpeedRule: direct vs polyphase vs spectral.

For every distinct (channels, kernel, dilation) conv of the HiFi-GAN V1 generator, at
the length it runs at for ``--frames`` mel frames, times ``lrelu → conv → lrelu`` with
each implementation (interleaved, medians) and marks the fastest and what
:class:`cosyvoice.vocoder.cpu_generator.SpeedRule` picks. Usage::

    python bench/vocoder_layers.py [--frames 430] [--reps 7]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import machine, median  # noqa: E402
from cosyvoice.kernels.direct import DirectConv, fused_ops_available  # noqa: E402
from cosyvoice.kernels.tiling import CL, tile_sizes  # noqa: E402
from cosyvoice.vocoder.cpu_generator import SpeedRule  # noqa: E402
from cosyvoice.vocoder.cpu_spectral import SpectralConv  # noqa: E402
from cosyvoice.vocoder.hifigan import HifiGanConfig  # noqa: E402
from cosyvoice.vocoder.loader import default_paths  # noqa: E402


def candidates(conv: nn.Conv1d, rate: int) -> dict[str, object]:
    """``direct`` is what the generator runs (tiled, weights packed), ``untiled`` the
    same conv over the whole length (new oneDNN kernels per length, weights reordered
    at every call)."""
    fused = fused_ops_available()
    out: dict[str, object] = {"direct": DirectConv(conv, fused, tile=tile_sizes(rate)),
                              "untiled": DirectConv(conv, fused)}
    if conv.dilation[0] > 1:
        out["poly"] = DirectConv(conv, fused, polyphase=True)
    span = conv.dilation[0] * (conv.kernel_size[0] - 1) + 1
    n = max(32, 1 << (2 * span - 1).bit_length())
    for block in (n, 2 * n, 4 * n):
        out[f"spec{block}"] = SpectralConv(conv, block)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=430)
    ap.add_argument("--reps", type=int, default=7)
    args = ap.parse_args()
    cfg = HifiGanConfig.from_json(default_paths()[1])
    rule = SpeedRule()
    print(f"machine: {machine()} (load avg {os.getloadavg()[0]:.1f}); torch "
          f"{torch.__version__}, {torch.get_num_threads()} threads; {args.frames} frames")
    print(f"{'layer':16s} {'rule':>8s} {'best':>8s}  timings (ms, median of {args.reps})")
    ch, length = cfg.upsample_initial_channel, args.frames
    with torch.inference_mode():
        total = 1
        for rate in cfg.upsample_rates:
            ch, length, total = ch // 2, length * rate, total * rate
            x = torch.randn(1, ch, 1, length).contiguous(memory_format=CL)
            for k, dils in zip(cfg.resblock_kernel_sizes, cfg.resblock_dilation_sizes):
                for d in dils:
                    conv = nn.Conv1d(ch, ch, k, dilation=d, padding=d * (k - 1) // 2)
                    cands = candidates(conv, total)
                    times: dict[str, list[float]] = {name: [] for name in cands}
                    for c in cands.values():
                        c(x, 0.1, 0.1)
                    for _ in range(args.reps):
                        for name, c in cands.items():
                            t0 = time.perf_counter()
                            c(x, 0.1, 0.1)
                            times[name].append(time.perf_counter() - t0)
                    med = {name: median(v) * 1000 for name, v in times.items()}
                    block = rule.spectral_block(conv)
                    picked = (f"spec{block}" if block else
                              "poly" if rule.polyphase(conv) else "direct")
                    best = min(med, key=med.get)
                    row = " ".join(f"{n}:{v:.1f}" for n, v in med.items())
                    print(f"C{ch:<4d} k{k:<2d} d{d:<2d}    {picked:>8s} {best:>8s}  {row}",
                          flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

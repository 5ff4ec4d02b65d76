"""Real-time factor (synthesis seconds / audio seconds) of the preset and cloned voice.

    .venv/bin/python bench/rtf.py [--runs 5]

Runs preset and clone requests interleaved, on the same ~20-word sentence, through the
in-process Synthesizer (text checks, normalization, synthesis, adaptation, WAV write).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import SENTENCE_20, machine, make_synthesizer, median, real_prompt, verdict
from cosyvoice.pipeline import SynthesisRequest

TARGETS = {"preset": 0.15, "clone": 0.35}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    synth = make_synthesizer()
    prompt = str(real_prompt())
    reqs = {"preset": SynthesisRequest(SENTENCE_20, mode="preset"),
            "clone": SynthesisRequest(SENTENCE_20, mode="clone", prompt_path=prompt)}
    for req in reqs.values():  # warm-up: caches, allocator, onnxruntime arenas
        synth.synthesize(req)
    rtf: dict[str, list[float]] = {k: [] for k in reqs}
    for _ in range(args.runs):
        for mode, req in reqs.items():
            t0 = time.perf_counter()
            res = synth.synthesize(req)
            rtf[mode].append((time.perf_counter() - t0) / res.duration_s)
    print(f"# RTF on {machine()}; {len(SENTENCE_20.split())} words; median of {args.runs}")
    print(f"{'mode':8} {'median RTF':>10} {'min':>6} {'max':>6} {'target':>7}  verdict")
    ok = True
    for mode, xs in rtf.items():
        m = median(xs)
        ok &= m <= TARGETS[mode]
        print(f"{mode:8} {m:10.3f} {min(xs):6.3f} {max(xs):6.3f} {TARGETS[mode]:7.2f}  "
              f"{verdict(m <= TARGETS[mode])}")
    print("RESULT " + " ".join(f"rtf_{mode}={median(xs):.3f}" for mode, xs in rtf.items()))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

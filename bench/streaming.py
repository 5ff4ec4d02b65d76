"""Streaming latency: time to the first audio chunk vs the whole non-streamed synthesis.

A 200-character Chinese passage, preset voice *baker*, in-process
(``Synthesizer.stream`` / ``Synthesizer.synthesize``, real models on CPU), after one
warm-up of each. The first chunk is the passage's first clause (the pipeline splits a long
first Chinese sentence at its first clause break, FIRST_CHUNK_CHARS). Targets: median
first chunk ≤ 0.5 s and ≤ 1/3 of the median full time.

Run: ``nice -n 5 .venv/bin/python bench/streaming.py [--runs 5] [--device cpu]``.
Timings come from a shared machine; the two are measured alternately in one run.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import machine, make_synthesizer, median  # noqa: E402
from cosyvoice.pipeline import SynthesisRequest  # noqa: E402

# 200 characters (counted with punctuation); an everyday descriptive passage.
TEXT = ("春天到了，公园里的花都开了。每天早上，很多老人在湖边慢慢散步、打太极拳，孩子们在"
        "草地上放风筝，到处都是欢声笑语。周末的时候，年轻人喜欢约上三五好友，带着相机去郊"
        "外踏青，拍下美丽的风景。傍晚时分，夕阳把天空染成了金黄色，湖面上波光粼粼，小船慢"
        "慢地划过水面。这座城市虽然不大，但是生活节奏舒缓，空气清新，交通也很方便。很多外"
        "地游客来到这里以后，都说这是一个适合居住的好地方，希望以后还有机会再来这里看看。")
TARGET_FIRST_S = 0.5
TARGET_RATIO = 1 / 3


def first_chunk_seconds(synth, req: SynthesisRequest) -> tuple[float, float]:
    """Seconds until the stream's first chunk, and that chunk's audio seconds."""
    t0 = time.perf_counter()
    stream = synth.stream(req)
    try:
        chunk = next(stream)
        elapsed = time.perf_counter() - t0
    finally:
        stream.close()
    return elapsed, len(chunk.wav) / chunk.sample_rate


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    print(f"machine: {machine()}; text: {len(TEXT)} characters; runs: {args.runs}")
    synth = make_synthesizer(args.device)
    req = SynthesisRequest(text=TEXT, mode="preset", voice="baker", seed=0)
    first_chunk_seconds(synth, req)  # warm-up: jieba dictionary, kernels, caches
    synth.synthesize(req)
    firsts, fulls = [], []
    for i in range(args.runs):
        first, first_audio = first_chunk_seconds(synth, req)
        result = synth.synthesize(req)
        firsts.append(first)
        fulls.append(result.elapsed_s)
        print(f"run {i + 1}: first chunk {first:.3f} s ({first_audio:.2f} s of audio); "
              f"full {result.elapsed_s:.2f} s for {result.duration_s:.1f} s of audio, "
              f"{result.sentences} chunks")
    first_s, full_s = median(firsts), median(fulls)
    ok = first_s <= TARGET_FIRST_S and first_s <= TARGET_RATIO * full_s
    print(f"median first chunk {first_s:.3f} s (target ≤ {TARGET_FIRST_S}), full {full_s:.2f} s,"
          f" ratio {first_s / full_s:.3f} (target ≤ {TARGET_RATIO:.3f})")
    print(f"RESULT first_chunk_s={first_s:.3f} full_s={full_s:.2f} pass={int(ok)}")


if __name__ == "__main__":
    main()

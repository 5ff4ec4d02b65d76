"""Streaming latency: time to the first audio chunk vs the whole non-streamed synthesis.

Offline engine (default): a 200-character Chinese passage, preset voice *baker*,
in-process (``Synthesizer.stream`` / ``Synthesizer.synthesize``, real models on CPU), after
one warm-up of each. The first chunk is the passage's first clause (the pipeline splits a
long first Chinese sentence at its first clause break, FIRST_CHUNK_CHARS). Targets: median
first chunk ≤ 0.5 s and ≤ 1/3 of the median full time.

CosyVoice engine (``--engine cosyvoice3|cosyvoice2``): one sentence, the folder's first
preset voice, through the same Synthesizer: the first chunk is the runtime's first token hop
(25 tokens + 3 of look-ahead, vocoded), against the whole streamed request (every hop) and
the non-streamed request (whole sentences). ``--folder DIR`` (default: a tiny folder of
tests/cosyvoice_folder.py made on the fly; real size: ``bench/make_random_cosyvoice.py
--size real``). No target: the figures say what hop streaming buys on this machine.

Run: ``nice -n 5 .venv/bin/python bench/streaming.py [--runs 5] [--device cpu]``, or
``PYTHONPATH=. nice -n 5 .venv/bin/python bench/streaming.py --engine cosyvoice3 [--folder
DIR] [--runs 3]``. Timings come from a shared machine; the kinds are measured alternately
in one run, with this process's CPU-seconds beside the wall-clock ones.
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
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
COSYVOICE_TEXT = "Hello there, my good friend."
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


def timed_stream(synth, req: SynthesisRequest) -> dict[str, float]:
    """A whole streamed request: wall and CPU seconds to its first and last chunk, chunks,
    audio seconds."""
    w0, c0 = time.perf_counter(), time.process_time()
    first = first_cpu = None
    chunks, samples, sr = 0, 0, 1
    for chunk in synth.stream(req):
        if first is None and len(chunk.wav):
            first, first_cpu = time.perf_counter() - w0, time.process_time() - c0
        chunks, samples, sr = chunks + 1, samples + len(chunk.wav), chunk.sample_rate
    return {"first": first or 0.0, "first_cpu": first_cpu or 0.0,
            "full": time.perf_counter() - w0, "full_cpu": time.process_time() - c0,
            "chunks": chunks, "audio": samples / sr}


def offline(args) -> None:
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


def cosyvoice(args) -> None:
    version = int(args.engine[-1])
    folder = args.folder
    if folder is None:
        from tests.cosyvoice_folder import make_folder

        folder = make_folder(Path(tempfile.mkdtemp(prefix="bench-cv-")), version, seed=version)
    t0 = time.perf_counter()
    synth = make_synthesizer(args.device, engine=args.engine, model_dir=str(folder))
    print(f"folder {folder}: loaded in {time.perf_counter() - t0:.1f} s")
    voice = synth.capabilities.voices and next(iter(synth.capabilities.voices))
    req = SynthesisRequest(text=args.text, mode="preset", voice=voice, seed=args.seed)
    streams, wholes = [], []
    for i in range(args.runs):
        s = timed_stream(synth, req)
        c0 = time.process_time()
        result = synth.synthesize(req)
        whole_cpu = time.process_time() - c0
        streams.append(s)
        wholes.append((result.elapsed_s, whole_cpu))
        print(f"run {i + 1}: streamed: first chunk {s['first']:.2f} s wall / "
              f"{s['first_cpu']:.2f} CPU-s, last {s['full']:.2f} / {s['full_cpu']:.2f}, "
              f"{s['chunks']} chunks, {s['audio']:.2f} s of audio; whole request "
              f"{result.elapsed_s:.2f} / {whole_cpu:.2f} for {result.duration_s:.2f} s")
    first = median([s["first"] for s in streams])
    full = median([s["full"] for s in streams])
    whole = median([w[0] for w in wholes])
    print(f"median (wall): first chunk {first:.2f} s, streamed request {full:.2f} s, whole "
          f"request {whole:.2f} s; first chunk / whole = {first / whole:.3f}")
    print(f"RESULT engine={args.engine} first_chunk_s={first:.2f} stream_full_s={full:.2f} "
          f"whole_s={whole:.2f} chunks={streams[-1]['chunks']}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--engine", default="offline",
                    choices=("offline", "cosyvoice2", "cosyvoice3"))
    ap.add_argument("--folder", type=Path, help="CosyVoice folder (default: a tiny one)")
    ap.add_argument("--text", default=COSYVOICE_TEXT, help="CosyVoice engine: the sentence")
    ap.add_argument("--seed", type=int, default=2, help="CosyVoice engine: the seed")
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    print(f"machine: {machine()}; engine: {args.engine}; runs: {args.runs}")
    if args.engine == "offline":
        print(f"text: {len(TEXT)} characters")
        offline(args)
    else:
        print(f"text: {args.text!r}, seed {args.seed}")
        cosyvoice(args)


if __name__ == "__main__":
    main()

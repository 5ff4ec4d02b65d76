"""Speaker stage figures: encoder parity with Resemblyzer, speaker separation, VAD parity and
speed, prompt-validation speed. Prints medians; A/B timings are interleaved in one run.

    .venv/bin/python bench/bench_speaker.py [--device cpu|cuda] [--repeats 5]

Imports resemblyzer and silero_vad *here only*, as references (the app never does).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "fixtures"))

import make_prompts  # noqa: E402

from cosyvoice.audio.io import read_audio, resample, to_mono  # noqa: E402
from cosyvoice.errors import PromptError  # noqa: E402
from cosyvoice.speaker.encoder import SpeakerEncoder, cosine  # noqa: E402
from cosyvoice.speaker.vad import SileroVad  # noqa: E402
from cosyvoice.speaker.validation import PromptLimits, validate_prompt  # noqa: E402

NAMES = {"cate": "cate_blanch.mp3", "cate2": "cate_blanch_2.mp3", "heath": "heath_ledger.mp3"}


def timed(fn, repeats: int) -> float:
    """Median wall time of ``fn()`` in ms."""
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def interleaved(a, b, repeats: int) -> tuple[float, float]:
    ta, tb = [], []
    for _ in range(repeats):
        ta.append(timed(a, 1))
        tb.append(timed(b, 1))
    return statistics.median(ta), statistics.median(tb)


def encoder_parity(enc: SpeakerEncoder) -> dict[str, list[np.ndarray]]:
    from resemblyzer import VoiceEncoder, preprocess_wav

    ref = VoiceEncoder("cpu", verbose=False)
    out: dict[str, list[np.ndarray]] = {"resemblyzer": [], "ours": []}
    print("\n== encoder parity (same Resemblyzer-preprocessed 16 kHz audio into both) ==")
    for key, name in NAMES.items():
        path = make_prompts.gradio_audio(name)
        pre = preprocess_wav(path)
        theirs, ours_same = ref.embed_utterance(pre), enc.embed_preprocessed(pre)
        data, sr = read_audio(path)
        ours = enc.embed(to_mono(data), sr)          # our own preprocessing end to end
        out["resemblyzer"].append(theirs)
        out["ours"].append(ours)
        print(f"{key:6s} cos(same input) = {cosine(ours_same, theirs):.6f}  "
              f"max|diff| = {np.abs(ours_same - theirs).max():.2e}  "
              f"cos(our pipeline, theirs) = {cosine(ours, theirs):.4f}")
    return out


def separation(embs: dict[str, list[np.ndarray]]) -> None:
    print("\n== speaker separation (cosine) ==")
    for who, (c1, c2, h) in embs.items():
        print(f"{who:12s} same(cate, cate2) = {cosine(c1, c2):.4f}   "
              f"cross(cate, heath) = {cosine(c1, h):.4f}   "
              f"cross(cate2, heath) = {cosine(c2, h):.4f}")


def vad_parity_and_speed(vad: SileroVad, repeats: int) -> None:
    threads = torch.get_num_threads()
    from silero_vad import load_silero_vad  # sets torch threads to 1
    torch.set_num_threads(threads)

    ref = load_silero_vad(onnx=True)
    print("\n== Silero VAD: ours vs the package's OnnxWrapper ==")
    for key, name in NAMES.items():
        wav = make_prompts.load_real(name)
        ours = vad.speech_prob(wav)
        theirs = ref.audio_forward(torch.from_numpy(wav), 16000).numpy().reshape(-1)
        print(f"{key:6s} windows = {len(ours)}  max|prob diff| = {np.abs(ours - theirs).max():.2e}")
    wav30 = make_prompts.female_speech(30.0)
    a, b = interleaved(lambda: vad.speech_prob(wav30),
                       lambda: ref.audio_forward(torch.from_numpy(wav30), 16000), repeats)
    print(f"30 s of speech: ours {a:.0f} ms, reference wrapper {b:.0f} ms (ratio {b / a:.2f})")


def validation_speed(vad: SileroVad, repeats: int) -> None:
    print("\n== prompt validation ==")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        long_path = make_prompts.write_ten_minutes(folder)
        good = make_prompts.write_good_44k(folder)

        def reject_long() -> None:
            try:
                validate_prompt(long_path, PromptLimits(), vad)
            except PromptError:
                return
            raise AssertionError("10-minute file was accepted")

        def decode_and_vad_long() -> None:               # what a naive validator would do
            data, sr = read_audio(long_path)
            vad.speech_segments(resample(to_mono(data), sr, 16000))

        a, b = interleaved(reject_long, lambda: validate_prompt(good, PromptLimits(), vad),
                           repeats)
        print(f"reject 10-min file: {a:.2f} ms   accept 10 s 44.1 kHz prompt: {b:.0f} ms")
        print(f"(a naive decode + VAD of the 10-min file: {timed(decode_and_vad_long, 1):.0f} ms)")


def encoder_speed(enc: SpeakerEncoder, repeats: int) -> None:
    wav = make_prompts.female_speech(10.0)
    print(f"\n== encoder speed on {enc.device} ==")
    print(f"embed 10 s of speech: {timed(lambda: enc.embed(wav, 16000), repeats):.0f} ms "
          f"(torch threads {torch.get_num_threads()})")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print("shared machine: absolute times are indicative only")
    enc = SpeakerEncoder.load(device="cpu")
    vad = SileroVad.load()
    separation(encoder_parity(enc))
    encoder_speed(enc, args.repeats)
    if args.device != "cpu":
        gpu = SpeakerEncoder.load(device=args.device)
        wav = make_prompts.female_speech(10.0)
        same = cosine(gpu.embed(wav, 16000), enc.embed(wav, 16000))
        print(f"cos(cpu, {args.device}) = {same:.6f}")
        encoder_speed(gpu, args.repeats)
    vad_parity_and_speed(vad, args.repeats)
    validation_speed(vad, args.repeats)


if __name__ == "__main__":
    main()

"""End-to-end CosyVoice synthesis at the released sizes (random weights): parity with the
reference, whole and streamed, and our runtime's CPU figures.

    PYTHONPATH=. nice -n 5 .venv/bin/python bench/cosyvoice_e2e.py bench/out/cosyvoice2-real \
        [bench/out/cosyvoice3-real] [--text Hi] [--seed 1]

Per folder (made by ``bench/make_random_cosyvoice.py --size real``): load it with
``CosyVoiceSynth`` (time, RSS), build zero-shot inputs from a 1 s real prompt (25 speech
tokens, so the first streamed hop is 25 tokens), synthesize them whole and streamed with one
seed, then run the same inputs and seed through the reference's ``tts``
(tests/oracle/scripts/synthesis_e2e.py) and compare tokens and samples. A short text keeps the
decode short (random weights rarely stop before 20 speech tokens per text token).

Figures (wall and CPU seconds of this process): load, RSS after load, LLM tokens/s (the whole
run's time less its flow and HiFT calls), flow and HiFT real-time factors (their calls' time /
audio seconds, whole run), end-to-end RTF (whole run), first streamed chunk latency. The CPU is
shared with other jobs: wall-clock figures are noisy, CPU-seconds less so.
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
from pathlib import Path

import numpy as np
import psutil
import torch

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench._common import machine, real_prompt  # noqa: E402
from cosyvoice.audio.io import read_audio, resample, to_mono  # noqa: E402
from cosyvoice.runtime.synthesis import CosyVoiceSynth  # noqa: E402
from tests.oracle.harness import run_oracle  # noqa: E402

PROMPT_TEXT = "Hello."


class Clock:
    """Wall and CPU seconds since ``start``."""

    def __init__(self) -> None:
        self.wall, self.cpu = time.perf_counter(), time.process_time()

    def read(self) -> tuple[float, float]:
        return time.perf_counter() - self.wall, time.process_time() - self.cpu


class Timed:
    """Wraps ``obj.name`` to add each call's wall and CPU seconds to ``self.wall``/``self.cpu``."""

    def __init__(self, obj, name: str) -> None:
        self.wall = self.cpu = 0.0
        inner = getattr(obj, name)

        @functools.wraps(inner)
        def timed(*args, **kwargs):
            clock = Clock()
            try:
                return inner(*args, **kwargs)
            finally:
                wall, cpu = clock.read()
                self.wall, self.cpu = self.wall + wall, self.cpu + cpu

        setattr(obj, name, timed)

    def reset(self) -> None:
        self.wall = self.cpu = 0.0


def prompt_audio(rate: int, start: float = 0.5, end: float = 1.5) -> torch.Tensor:
    wav, sr = read_audio(real_prompt("heath_ledger.mp3"))
    wav = resample(to_mono(wav), sr, rate).astype(np.float32)
    return torch.from_numpy(wav[int(start * rate):int(end * rate)])[None]


def version_of(folder: Path) -> int:
    return 3 if (folder / "cosyvoice3.yaml").exists() else 2


def run_folder(folder: Path, text: str, seed: int) -> dict:
    version = version_of(folder)
    clock = Clock()
    synth = CosyVoiceSynth.load(folder, version)
    load_wall, load_cpu = clock.read()
    rss = psutil.Process().memory_info().rss / 2**20
    inputs = synth.zero_shot(text, PROMPT_TEXT, prompt_audio(16000), prompt_audio(24000))
    flow, hift = Timed(synth.flow, "inference"), Timed(synth.hift, "inference")
    decoded: list[int] = []
    tokens_of = synth._tokens  # record the tokens vocoded by the whole run

    def recording(*args):
        decoded.clear()
        for token in tokens_of(*args):
            decoded.append(token)
            yield token

    synth._tokens = recording

    clock = Clock()
    whole = list(synth.tts(inputs, seed=seed))
    whole_wall, whole_cpu = clock.read()
    ours_tokens = list(decoded)
    flow_t, hift_t = (flow.wall, flow.cpu), (hift.wall, hift.cpu)
    flow.reset()
    hift.reset()

    clock, streamed, first = Clock(), [], None
    for chunk in synth.tts(inputs, stream=True, seed=seed):
        streamed.append(chunk)
        first = first or clock.read()
    stream_wall, stream_cpu = clock.read()

    seconds = sum(c.numel() for c in whole) / synth.sample_rate
    tokens = len(ours_tokens)
    llm_wall = whole_wall - flow_t[0] - hift_t[0]
    llm_cpu = whole_cpu - flow_t[1] - hift_t[1]
    ours = {"version": version, "load_s": load_wall, "load_cpu_s": load_cpu, "rss_mib": rss,
            "tokens": tokens, "audio_s": seconds,
            "llm_tok_s": tokens / llm_wall, "llm_tok_cpu_s": tokens / llm_cpu,
            "flow_rtf": flow_t[0] / seconds, "flow_rtf_cpu": flow_t[1] / seconds,
            "hift_rtf": hift_t[0] / seconds, "hift_rtf_cpu": hift_t[1] / seconds,
            "e2e_rtf": whole_wall / seconds, "e2e_rtf_cpu": whole_cpu / seconds,
            "first_chunk_s": first[0], "first_chunk_cpu_s": first[1],
            "stream_rtf": stream_wall / seconds, "stream_rtf_cpu": stream_cpu / seconds,
            "chunks": [c.numel() for c in streamed]}
    cases = [{"inputs": inputs, "stream": s, "speed": 1.0, "seed": seed} for s in (False, True)]
    synth.close()
    clock = Clock()
    ref = run_oracle("synthesis_e2e.py", timeout=3600, folder=str(folder.resolve()),
                     cases=cases)["cases"]
    ours["oracle_s"] = clock.read()[0]
    for name, got, want in (("whole", whole, ref[0]), ("streamed", streamed, ref[1])):
        same_len = [c.numel() for c in got] == [c.numel() for c in want["chunks"]]
        ours[f"{name}_tokens_equal"] = (decoded if name == "streamed" else ours_tokens) == \
            want["tokens"].tolist()
        ours[f"{name}_diff"] = (max(float((a - b).abs().max())
                                    for a, b in zip(got, want["chunks"]))
                                if same_len else float("inf"))
    return ours


def report(r: dict) -> None:
    v = r["version"]
    print(f"\n## CosyVoice{v} (real size, random weights): {r['tokens']} tokens, "
          f"{r['audio_s']:.2f} s of audio, streamed chunks {r['chunks']}")
    print(f"parity whole: tokens equal {r['whole_tokens_equal']}, max|diff| {r['whole_diff']:.2e}")
    print(f"parity streamed: tokens equal {r['streamed_tokens_equal']}, "
          f"max|diff| {r['streamed_diff']:.2e}")
    print(f"load {r['load_s']:.1f} s wall / {r['load_cpu_s']:.1f} CPU-s; RSS after load "
          f"{r['rss_mib']:.0f} MiB")
    print(f"LLM {r['llm_tok_s']:.2f} tokens/s wall, {r['llm_tok_cpu_s']:.2f} per CPU-s")
    print(f"flow RTF {r['flow_rtf']:.2f} wall / {r['flow_rtf_cpu']:.2f} CPU; HiFT RTF "
          f"{r['hift_rtf']:.2f} / {r['hift_rtf_cpu']:.2f}")
    print(f"end-to-end RTF (whole) {r['e2e_rtf']:.2f} wall / {r['e2e_rtf_cpu']:.2f} CPU; "
          f"streamed {r['stream_rtf']:.2f} / {r['stream_rtf_cpu']:.2f}")
    print(f"first streamed chunk {r['first_chunk_s']:.1f} s wall / "
          f"{r['first_chunk_cpu_s']:.1f} CPU-s; oracle run {r['oracle_s']:.0f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", type=Path, nargs="+")
    parser.add_argument("--text", default="Hi")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    print(f"# {machine()} · torch {torch.__version__} · {torch.get_num_threads()} threads · "
          f"load average {psutil.getloadavg()[0]:.1f}")
    for folder in args.folders:
        report(run_folder(folder, args.text, args.seed))
    print(f"\nload average at the end {psutil.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()

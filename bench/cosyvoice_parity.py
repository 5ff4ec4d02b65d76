"""Flow and HiFT parity with the reference at the released v2/v3 sizes (random weights), and
our CPU real-time factors.

    PYTHONPATH=. .venv/bin/python bench/cosyvoice_parity.py [--versions 2 3] [--seconds 6]
        [--repeats 3] [--streaming]

For each version the oracle (tests/oracle, its own venv) builds the released ``flow`` and
``hift`` from the reference's example YAML with seeded random weights and runs a whole
utterance (and, with ``--streaming``, the streamed calls of the tiny-config tests
tests/runtime/test_{flow,hift}_parity.py). We load its state dicts strictly into our modules,
run the same calls and print the max |diff| (over every repeat), our RTF (median of
``--repeats`` whole-utterance runs) and the oracle's (one run). HiFT vocodes the flow's mel.
The CPU is shared: timings are noisy.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.oracle.harness import oracle_dir, run_oracle  # noqa: E402
from tests.runtime.parity_cases import (  # noqa: E402
    our_flow,
    our_hift,
    run_flow_case,
    run_hift_case,
    yaml_text,
)

TOKEN_RATE, MEL_RATE, SAMPLE_RATE = 25, 50, 24000


def flow_inputs(seconds: float, prompt_seconds: float, seed: int) -> dict:
    gen = torch.Generator().manual_seed(seed)
    tokens, prompt = int(seconds * TOKEN_RATE), int(prompt_seconds * TOKEN_RATE)
    return {"token": torch.randint(0, 6561, (1, tokens), generator=gen),
            "prompt_token": torch.randint(0, 6561, (1, prompt), generator=gen),
            "prompt_feat": torch.randn(1, 2 * prompt, 80, generator=gen),
            "embedding": torch.randn(1, 192, generator=gen)}


def flow_cases(tokens: int, streaming: bool) -> list[dict]:
    whole = {"tokens": tokens, "streaming": False, "finalize": True}
    if not streaming:
        return [whole]
    return [whole, {**whole, "streaming": True},
            {"tokens": tokens * 2 // 3, "streaming": True, "finalize": False}]


def hift_cases(frames: int, causal: bool, streaming: bool) -> list[dict]:
    whole = {"start": 0, "end": frames, "seed": 7, "cache": 0, "finalize": True}
    if not streaming:
        return [whole]
    if causal:
        return [whole, {**whole, "end": frames * 2 // 3, "finalize": False}]
    return [whole, {**whole, "start": frames // 2, "seed": 8, "cache": 480 * 4}]


def timed(fn, repeats: int) -> tuple[list, float]:
    """Every result and the median wall time of ``repeats`` calls."""
    times, outs = [], []
    for _ in range(repeats):
        start = time.perf_counter()
        outs.append(fn())
        times.append(time.perf_counter() - start)
    return outs, statistics.median(times)


def bench_flow(version: int, yaml_text: str, args: argparse.Namespace) -> dict:
    x = flow_inputs(args.seconds, args.prompt_seconds, 100 + version)
    cases = flow_cases(x["token"].size(1), args.streaming)
    ref = run_oracle("flow_parity.py", timeout=7200, jobs=[
        {"yaml_text": yaml_text, "seed": version, "cases": cases, **x}])["results"][0]
    flow = our_flow(yaml_text).eval()
    flow.load_state_dict(ref["state"], strict=True)
    # the timed runs of the whole utterance are also its comparison
    mels, seconds = timed(lambda: run_flow_case(flow, x, cases[0]), args.repeats)
    diffs = [max((m - ref["mels"][0]).abs().max().item() for m in mels)]
    diffs += [(run_flow_case(flow, x, case) - want).abs().max().item()
              for case, want in zip(cases[1:], ref["mels"][1:], strict=True)]
    mel = mels[-1]
    audio = mel.size(2) / MEL_RATE
    return {"diffs": diffs, "rtf": seconds / audio, "oracle_rtf": ref["seconds"][0] / audio,
            "audio_s": audio, "mel": mel}


def bench_hift(version: int, yaml_text: str, mel: torch.Tensor, args: argparse.Namespace) -> dict:
    causal = version == 3
    cases = hift_cases(mel.size(2), causal, args.streaming)
    ref = run_oracle("hift_parity.py", timeout=7200, jobs=[
        {"yaml_text": yaml_text, "seed": version, "mel": mel, "cases": cases,
         "f0_hz": 150.0}])["results"][0]
    hift = our_hift(yaml_text).eval()
    hift.load_state_dict(ref["state"], strict=True)
    if causal:  # our replay of the reference's construction-time noise must be its noise
        phase, noise = hift.m_source.fixed_noise(ref["sine_noise"].size(1))
        if not (torch.equal(phase, ref["phase_init"])
                and torch.equal(noise[:, :ref["sine_noise"].size(1)], ref["sine_noise"])):
            raise SystemExit("v3 HiFT: our causal noise replay differs from the reference's")
    diffs, sources = [], []
    for case, wave_ref in zip(cases, ref["waves"], strict=True):
        wave, source = run_hift_case(hift, mel, case, sources)
        sources.append(source)
        diffs.append((wave - wave_ref).abs().max().item())
    outs, seconds = timed(lambda: run_hift_case(hift, mel, cases[0], []), args.repeats)
    diffs[0] = max([diffs[0]] + [(w - ref["waves"][0]).abs().max().item() for w, _ in outs])
    audio = mel.size(2) / MEL_RATE
    return {"diffs": diffs, "rtf": seconds / audio, "oracle_rtf": ref["seconds"][0] / audio}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--versions", type=int, nargs="+", default=[2, 3])
    parser.add_argument("--seconds", type=float, default=6.0, help="new speech per utterance")
    parser.add_argument("--prompt-seconds", type=float, default=2.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--streaming", action="store_true",
                        help="also compare the streamed calls (slow at the released sizes)")
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    root = oracle_dir()
    if root is None:
        raise SystemExit("the reference (shared/oracles/cosyvoice) is not found above the repo")
    print(f"threads={args.threads} seconds={args.seconds} prompt={args.prompt_seconds} "
          f"repeats={args.repeats} streaming={args.streaming}", flush=True)
    for version in args.versions:
        text = yaml_text(version, "real")
        flow = bench_flow(version, text, args)
        print(f"v{version} flow: max|diff| per case {[f'{d:.2e}' for d in flow['diffs']]}; "
              f"RTF ours {flow['rtf']:.3f} (median of {args.repeats}), "
              f"oracle {flow['oracle_rtf']:.3f} (one run); {flow['audio_s']:.2f} s of mel",
              flush=True)
        # HiFT vocodes the flow's own mel (a realistic range of values)
        hift = bench_hift(version, text, flow["mel"], args)
        print(f"v{version} hift: max|diff| per case {[f'{d:.2e}' for d in hift['diffs']]}; "
              f"RTF ours {hift['rtf']:.3f} (median of {args.repeats}), "
              f"oracle {hift['oracle_rtf']:.3f} (one run)", flush=True)


if __name__ == "__main__":
    main()

"""CosyVoice LLM at real size (random weights): parity with the reference, load time, RSS, tokens/s.

    PYTHONPATH=. .venv/bin/python bench/make_random_cosyvoice.py --version 2 --size real DIR
    PYTHONPATH=. .venv/bin/python bench/cosyvoice_llm.py DIR [--steps 50 --runs 3]

Parity: the reference (the oracle, tests/oracle) decodes ``--steps`` tokens with its seeded RAS
sampling; ours follows its tokens (max |diff| of the log-probabilities at every step) and samples on
its own with the same seed (same tokens?). Speed: our load time (YAML + build + strict load of
llm.pt), process RSS after load, and decode tokens/s (prompt of 8 + 26 text tokens and 75 prompt
speech tokens, i.e. a 3 s prompt), medians over ``--runs``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import psutil
import torch

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from cosyvoice.runtime.folder import check_folder, load_part  # noqa: E402
from cosyvoice.runtime.llm import END_OF_PROMPT_ID, StopRule  # noqa: E402
from cosyvoice.runtime.sampling import RasSampler  # noqa: E402
from tests.oracle.harness import run_oracle  # noqa: E402


def inputs(version: int) -> dict:
    gen = torch.Generator().manual_seed(42)
    prompt_text = torch.randint(0, 5000, (1, 8), generator=gen, dtype=torch.int32)
    if version == 3:
        prompt_text[0, 5] = END_OF_PROMPT_ID
    return {"text": torch.randint(0, 5000, (1, 26), generator=gen, dtype=torch.int32),
            "prompt_text": prompt_text,
            "prompt_speech": torch.randint(0, 6561, (1, 75), generator=gen, dtype=torch.int32),
            "embedding": torch.randn(1, 192, generator=gen)}


def decode(lm, args: dict, steps: int, seed: int, forced=None, on_step=None) -> list[int]:
    torch.manual_seed(seed)
    lm_input = lm.prompt_input(args["text"], args["prompt_text"], args["prompt_speech"])
    out = []
    for token in lm.decode(lm_input, StopRule.for_text(args["text"].shape[1]),
                           RasSampler(lm.config.sampling), on_step=on_step, forced=forced):
        out.append(token)
        if len(out) >= steps:
            break
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=2026)
    opts = parser.parse_args()
    opts.folder = opts.folder.resolve()
    version = 3 if (opts.folder / "cosyvoice3.yaml").exists() else 2
    args = inputs(version)

    loads, lm = [], None
    for _ in range(opts.runs):
        lm = None
        start = time.perf_counter()
        lm = load_part(check_folder(opts.folder, version), "llm")
        loads.append(time.perf_counter() - start)
    rss = psutil.Process().memory_info().rss / 2**20

    rates = []
    for _ in range(opts.runs):
        start = time.perf_counter()
        tokens = decode(lm, args, opts.steps, opts.seed)
        rates.append(len(tokens) / (time.perf_counter() - start))

    start = time.perf_counter()
    ref = run_oracle("llm_decode.py", folder=str(opts.folder), timeout=3600, cases=[
        dict(args, seed=opts.seed, max_steps=opts.steps)])["results"][0]
    oracle_s = time.perf_counter() - start
    steps: list[torch.Tensor] = []
    decode(lm, args, opts.steps, opts.seed, forced=ref["tokens"].tolist(),
           on_step=lambda i, logp: steps.append(logp.clone()))
    diff = (torch.stack(steps[: len(ref["logp"])]) - ref["logp"]).abs().amax(dim=1)

    print(f"folder: {opts.folder} (CosyVoice{version}), threads: {torch.get_num_threads()}")
    print(f"parity over {len(diff)} steps: max |logp diff| {float(diff.max()):.3g} "
          f"(worst step {int(diff.argmax())}); sampled tokens identical: "
          f"{tokens == ref['tokens'].tolist()}")
    print(f"load (YAML + build + llm.pt): median {statistics.median(loads):.2f} s "
          f"of {[round(x, 2) for x in loads]}")
    print(f"RSS after load: {rss:.0f} MiB")
    print(f"decode: median {statistics.median(rates):.1f} tokens/s "
          f"of {[round(x, 1) for x in rates]} ({opts.steps} tokens, prompt "
          f"{args['prompt_text'].shape[1] + args['text'].shape[1]} text + "
          f"{args['prompt_speech'].shape[1]} speech tokens)")
    print(f"oracle run (its load + decode, one run): {oracle_s:.1f} s")


if __name__ == "__main__":
    main()

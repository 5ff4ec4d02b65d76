"""Golden outputs: a fixed set of seeded requests whose samples must not change when the code
is reorganized. Recorded with ``python -m tests.golden --record`` (see test_golden.py).

Exact sha256 of the float32 samples is only comparable on the CPU and library versions it
was recorded on (oneDNN picks kernels by CPU), so each record is keyed by a fingerprint of
both; every CPU also checks the portable part: the exact sample count and a 64-band RMS
envelope within a small tolerance.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import platform
from pathlib import Path

import numpy as np

GOLDEN_FILE = Path(__file__).parent / "fixtures" / "golden.json"
ENVELOPE_BANDS = 64

# name → request fields (seeded; the vocoder runs in fp32 so the record is portable). The
# cases recorded with the default voice before Kokoro became the default name joe: the same
# requests as recorded.
CASES: dict[str, dict] = {
    "english": {"text": "The birch canoe slid on the smooth planks. It was 3 p.m.",
                "voice": "joe", "seed": 11},
    "mandarin": {"text": "今天天气很好，我们一起去公园散步吧。", "voice": "baker", "seed": 12},
    "mixed": {"text": "我今天用 Python 写了 3 个 scripts。Then we went home.", "voice": "joe",
              "seed": 13},
    "clone": {"text": "Please call Stella and ask her to bring these things.", "mode": "clone",
              "prompt": "female", "seed": 14},
    "instruct_emotion": {"text": "I can't believe we won the final!", "mode": "instruct",
                         "instruction": "speak happily and a bit faster", "voice": "joe",
                         "seed": 15},
    "instruct_dialect": {"text": "你吃饭了没有？我们一起去吧。", "mode": "instruct",
                         "voice": "baker", "instruction": "用四川话说", "seed": 16},
    "inline_tags": {"text": "Hello there. [pause:600ms] I said <strong>yes</strong>, "
                            "not maybe. [breath] Go on.", "voice": "joe", "seed": 17},
}


def cpu_key() -> str:
    """The CPU model and its vector extensions plus torch's version: what oneDNN's choice of
    kernels (and so the exact float32 samples) depends on."""
    import torch

    flags, model = set(), platform.processor()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
            elif line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                break
    except OSError:
        pass
    isa = sorted(f for f in flags if f.startswith(("avx", "amx", "fma")))
    return hashlib.sha256(f"{model}|{' '.join(isa)}|torch {torch.__version__}".encode()
                          ).hexdigest()[:16]


def fingerprint(wav: np.ndarray) -> dict:
    wav = np.asarray(wav, np.float32)
    bands = np.array_split(wav.astype(np.float64), ENVELOPE_BANDS)
    env = [float(np.sqrt(np.mean(b ** 2))) if len(b) else 0.0 for b in bands]
    return {"samples": int(len(wav)), "sha256": hashlib.sha256(wav.tobytes()).hexdigest(),
            "envelope": [round(e, 6) for e in env]}


# The portable check, for CPUs without an exact record. fp32 kernels chosen by CPU differ by
# ~1e-6 relative, so these bounds leave room for that and none for a real change: a 2 % gain
# change on every output moves the total RMS by 2 % and fails (tests/test_golden.py).
TOTAL_RMS_RTOL = 0.005
BAND_RTOL, BAND_ATOL = 0.02, 5e-4


def portable_mismatches(fp: dict, samples: int, envelope: list[float]) -> list[str]:
    """What differs between a rendered fingerprint and the record, beyond the CPU-to-CPU
    rounding: the sample count, the total RMS, any band of the envelope."""
    out = []
    if fp["samples"] != samples:
        out.append(f"{fp['samples']} samples, recorded {samples}")
    got, want = np.asarray(fp["envelope"]), np.asarray(envelope)
    total = float(np.sqrt(np.mean(got ** 2)) / max(np.sqrt(np.mean(want ** 2)), 1e-12))
    if abs(total - 1.0) > TOTAL_RMS_RTOL:
        out.append(f"total RMS {100 * (total - 1):+.2f} % vs the record")
    bad = np.flatnonzero(np.abs(got - want) > BAND_ATOL + BAND_RTOL * np.abs(want))
    if bad.size:
        out.append(f"{bad.size} envelope bands differ (first: band {bad[0]}, "
                   f"{got[bad[0]]:.5f} vs {want[bad[0]]:.5f})")
    return out


def request_fields(case: dict, prompts: dict[str, Path]) -> dict:
    fields = {k: v for k, v in case.items() if k != "prompt"}
    if "prompt" in case:
        fields["prompt_path"] = str(prompts[case["prompt"]])
    return fields


def prompt_files() -> dict[str, Path]:
    from tests.conftest import site_packages_file

    return {"female": site_packages_file("gradio", "media_assets", "audio",
                                         "cate_blanch.mp3")}


def render_all(synthesize) -> dict[str, dict]:
    """``synthesize(fields) -> float32 samples`` for every case."""
    prompts = prompt_files()
    return {name: fingerprint(synthesize(request_fields(case, prompts)))
            for name, case in CASES.items()}


def main() -> None:
    from tests.test_golden import build_synthesize

    ap = argparse.ArgumentParser()
    ap.add_argument("--record", action="store_true", help="write the record for this CPU")
    args = ap.parse_args()
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        got = render_all(build_synthesize(Path(tmp)))
    for name, fp in got.items():
        print(f"{name:18s} {fp['samples']:7d} {fp['sha256'][:16]}")
    if args.record:
        data = json.loads(GOLDEN_FILE.read_text()) if GOLDEN_FILE.exists() else {}
        data.setdefault("envelope", {k: v["envelope"] for k, v in got.items()})
        data.setdefault("samples", {k: v["samples"] for k, v in got.items()})
        data.setdefault("sha256", {})[cpu_key()] = {k: v["sha256"] for k, v in got.items()}
        GOLDEN_FILE.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
        print(f"recorded for CPU key {cpu_key()} in {GOLDEN_FILE}")


if __name__ == "__main__":
    main()

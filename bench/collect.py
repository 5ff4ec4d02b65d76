"""Collect the ``RESULT key=value ...`` lines of benchmark logs into one table.

    .venv/bin/python bench/collect.py [--quick] LOG...      (bench/run.sh calls it)

Each log is one script's output (``<name>.log``, its exit status in ``<name>.rc``). Every
RESULT value is checked against its target; targets are copied from the scripts that
define them (named per row) and kept here so the table reads in one place. A value
written ``n/total`` passes when n equals total. Keys without a target are shown as
``info`` (the harness's ``eval_<row>_<column>`` figures among them: it judges nothing).
Exit status: 1 when any row FAILs or a script failed, else 0.
"""

from __future__ import annotations

import argparse
import operator
import re
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import ROOT, machine  # noqa: E402

# key: (comparison, bound, where the target comes from)
TARGETS: dict[str, tuple[str, float | tuple[float, float], str]] = {
    "vocoder_max_diff": ("<=", 1e-4, "vocoder_parity.py MAX_DIFF"),
    "vocoder_speedup": (">=", 1.5, "vocoder_parity.py MIN_SPEEDUP"),
    "int8_time_ratio": ("<=", 0.85, "vocoder_int8.py MAX_TIME_RATIO"),
    "int8_speech_dnsmos_drop": ("<=", 0.05, "vocoder_int8.py MAX_DNSMOS_DROP"),
    "int8_zh_dnsmos_drop": ("<=", 0.05, "vocoder_int8.py MAX_DNSMOS_DROP"),
    "int8_speech_l1_rise_max": ("<=", 0.01, "vocoder_int8.py MAX_L1_RISE"),
    "vocoder_rss_growth_fp32_mb": ("<=", 64.0, "vocoder_memory.py MAX_GROWTH_MB"),
    "vocoder_rss_growth_int8_mb": ("<=", 64.0, "vocoder_memory.py MAX_GROWTH_MB"),
    "rss_growth_mb": ("<=", 5.0, "lifecycle.py RSS_TARGET_MB"),
    "restart_hard_s": ("<=", 15.0, "lifecycle.py HARD_TARGET_S"),
    "reload_soft_s": ("<=", 3.0, "lifecycle.py SOFT_TARGET_S"),
    "first_chunk_s": ("<=", 0.5, "streaming.py (issue 5: ≤ 0.5 s)"),
    "load_5xx": ("==", 0, "issue 7: zero 5xx"),
    "load_busy_without_retry_after": ("==", 0, "issue 7: Retry-After on 429/503"),
    "load_failed": ("==", 0, "load.py: every request ends in audio"),
}
_OPS = {"<=": operator.le, ">=": operator.ge, "==": operator.eq}
_RESULT = re.compile(r"^RESULT\s+(.*)$")


def parse_results(text: str) -> list[tuple[str, str]]:
    """``RESULT a=1 b=2/3`` lines → ``[("a", "1"), ("b", "2/3")]`` in order."""
    out = []
    for line in text.splitlines():
        m = _RESULT.match(line.strip())
        if m:
            out.extend(tuple(kv.split("=", 1)) for kv in m.group(1).split() if "=" in kv)
    return out


def judge(key: str, value: str) -> tuple[str, str]:
    """(target text, PASS | FAIL | info) for one value."""
    if re.fullmatch(r"\d+/\d+", value):
        n, total = map(int, value.split("/"))
        return "all", "PASS" if n == total else "FAIL"
    if key not in TARGETS:
        return "—", "info"
    op, bound, _ = TARGETS[key]
    try:
        v = float(value)
    except ValueError:
        return str(bound), "FAIL"
    if op == "in":
        lo, hi = bound  # type: ignore[misc]
        return f"{lo:g}–{hi:g}", "PASS" if lo <= v <= hi else "FAIL"
    return f"{op} {bound:g}", "PASS" if _OPS[op](v, bound) else "FAIL"


def _commit() -> str:
    r = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                       text=True)
    return r.stdout.strip() or "?"


def table(logs: list[Path], quick: bool) -> tuple[str, bool]:
    rows, ok = [], True
    notes = []
    for log in logs:
        name = log.stem
        rc_file = log.with_suffix(".rc")
        rc = rc_file.read_text().strip() if rc_file.exists() else "?"
        results = parse_results(log.read_text(errors="replace"))
        if not results:
            notes.append(f"{name}: no RESULT line (exit {rc}); see {log}")
            ok = False
        for key, value in results:
            target, verdict = judge(key, value)
            ok &= verdict != "FAIL"
            rows.append((key, value, target, verdict, name))
        if rc not in ("0", "?") and results:
            notes.append(f"{name}: exit status {rc} (a check of its own failed; see {log})")
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    head = (f"Benchmarks {'(--quick: small run counts, figures indicative only) ' if quick else ''}"
            f"· {stamp} · commit {_commit()}\nmachine: {machine()}\n")
    w = [max(len(r[i]) for r in rows + [("metric", "value", "target", "PASS", "script")])
         for i in range(5)]
    lines = [f"| {'metric':{w[0]}} | {'value':>{w[1]}} | {'target':{w[2]}} | "
             f"{'result':6} | {'script':{w[4]}} |",
             f"|{'-' * (w[0] + 2)}|{'-' * (w[1] + 1)}:|{'-' * (w[2] + 2)}|{'-' * 8}|"
             f"{'-' * (w[4] + 2)}|"]
    for key, value, target, verdict, name in rows:
        lines.append(f"| {key:{w[0]}} | {value:>{w[1]}} | {target:{w[2]}} | {verdict:6} | "
                     f"{name:{w[4]}} |")
    return head + "\n".join(lines) + "".join(f"\nnote: {n}" for n in notes), ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--skipped", default="", help="comma-separated scripts not present")
    ap.add_argument("logs", nargs="*", type=Path)
    args = ap.parse_args()
    text, ok = table(args.logs, args.quick)
    print(text)
    for name in filter(None, args.skipped.split(",")):
        print(f"note: bench/{name}.py is not in this checkout: skipped")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

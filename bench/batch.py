"""Batch job throughput and resume: a 20,000-character English chapter as one job on a real
app process, killed (SIGKILL) part-way and started again on the same folders.

    PYTHONPATH=. nice -n 5 .venv/bin/python bench/batch.py [--chars 20000] [--kill-at 0.4]

Prints: items and characters; audio seconds; RTF by the items' own synthesis time
(sum of per-item seconds / audio seconds: the engine's speed, not counting app start-up)
and by wall time of the rendering (first item start → done, both processes, start-up of
the second excluded); each process's peak RSS (VmHWM) and CPU seconds; and the resume
check: items finished before the kill, items rendered twice (at most the one in flight),
item files rewritten (mtime changed, must be 0). The text is generated deterministically
(seeded sentences from a fixed word list; no outside text).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import machine  # noqa: E402
from cosyvoice.cli.jobs import multipart, request  # noqa: E402
from tests.conftest import start_app, stop_app  # noqa: E402

SUBJECTS = ["The old sailor", "A young clerk", "The miller's daughter", "Our neighbour",
            "The village doctor", "A tired traveller", "The schoolmaster", "My grandmother"]
VERBS = ["walked slowly towards", "looked carefully at", "spoke quietly about",
         "thought for a long time about", "wrote a short letter about", "remembered"]
OBJECTS = ["the harbour at dawn", "the narrow bridge over the river", "a lantern in the "
           "window", "the first snow of winter", "the market square", "an empty railway "
           "station", "the garden behind the church", "a map of the northern hills"]
TAILS = ["", " before the rain began", ", and nobody said a word", " while the bells rang",
         " as the evening grew colder", ", though it was already late"]


def chapter(chars: int, seed: int = 7) -> str:
    """``# Chapter One`` and seeded sentences until ``chars`` characters."""
    rng = random.Random(seed)
    out, n = ["# Chapter One", ""], 15
    while n < chars:
        s = (f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)}"
             f"{rng.choice(TAILS)}.")
        out.append(s)
        n += len(s) + 1
    return "\n".join(out)[:chars].rsplit(".", 1)[0] + "."


def proc_figures(pid: int) -> dict:
    p = psutil.Process(pid)
    hwm = next(int(line.split()[1]) for line in open(f"/proc/{pid}/status")
               if line.startswith("VmHWM"))
    cpu = p.cpu_times()
    return {"peak_rss_mb": round(hwm / 1024, 1), "cpu_s": round(cpu.user + cpu.system, 1)}


def job(url: str, job_id: str) -> dict:
    return json.loads(request(url, "GET", f"/api/v1/jobs/{job_id}")[0])


def wait(url: str, job_id: str, until, timeout: float = 3600) -> dict:
    deadline = time.time() + timeout
    while time.time() < deadline:
        state = job(url, job_id)
        if until(state):
            return state
        time.sleep(0.5)
    raise SystemExit(f"job {job_id} timed out: {state}")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--chars", type=int, default=20000)
    ap.add_argument("--kill-at", type=float, default=0.4, help="fraction of items done")
    ap.add_argument("--voice", default="af_heart")
    args = ap.parse_args()
    text = chapter(args.chars)
    work = Path(tempfile.mkdtemp(prefix="bench-batch-"))
    body, ctype = multipart({"voice": args.voice}, "chapter.md", text.encode())
    app = start_app(work)
    try:
        first = json.loads(request(app.url, "POST", "/api/v1/jobs", body,
                                   {"Content-Type": ctype})[0])
        job_id, total = first["id"], first["total"]
        t0 = time.monotonic()
        wait(app.url, job_id, lambda s: s["done"] >= max(1, int(args.kill_at * total)))
        wall_1 = time.monotonic() - t0
        figures_1 = proc_figures(app.proc.pid)
        app.proc.kill()
        app.proc.wait(30)
    finally:
        stop_app(app)
    folder = work / "jobs" / job_id
    before = json.loads((folder / "job.json").read_text())
    done_before = {it["filename"]: (folder / "items" / it["filename"]).stat().st_mtime_ns
                   for it in before["items"] if it["state"] == "done"}
    app = start_app(work)
    try:
        t1 = time.monotonic()
        final = wait(app.url, job_id, lambda s: s["state"] not in ("queued", "running"))
        wall_2 = time.monotonic() - t1
        figures_2 = proc_figures(app.proc.pid)
    finally:
        stop_app(app)
    items = final["items"]
    full = json.loads((folder / "job.json").read_text())["items"]
    synth_s = sum(it["elapsed_s"] or 0 for it in full)
    audio_s = final["audio_s"]
    rewritten = sum((folder / "items" / n).stat().st_mtime_ns != m
                    for n, m in done_before.items())
    print(f"machine: {machine()}; load average {psutil.getloadavg()}")
    print(f"chapter: {len(text)} characters, {total} items (parts ≤ max_text_chars), "
          f"voice {args.voice}; state {final['state']}, {final['done']} done, "
          f"{final['failed']} failed")
    print(f"audio: {audio_s:.1f} s; synthesis {synth_s:.1f} s → RTF {synth_s / audio_s:.3f}; "
          f"wall (both runs, no start-up) {wall_1 + wall_2:.1f} s → RTF "
          f"{(wall_1 + wall_2) / audio_s:.3f}")
    print(f"process 1 (killed at {len(done_before)}/{total} items): {figures_1}")
    print(f"process 2 (resumed): {figures_2}")
    print(f"resume: {len(done_before)} items finished before the kill, "
          f"{sum(it['attempts'] > 1 for it in items)} rendered twice, {rewritten} item files "
          f"rewritten, attempts {sum(it['attempts'] for it in items)} for {total} items, "
          f"runs {final['runs']}, resumed {final['resumed']}")
    return 0 if final["state"] == "done" and rewritten == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())

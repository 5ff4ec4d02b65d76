"""Does loading a hostile model folder freeze the app? Liveness during the load, and SIGTERM.

    PYTHONPATH=. .venv/bin/python bench/hostile_folder.py [--variants power_tower,alias_bomb]
        [--watch 20]
    PYTHONPATH=. .venv/bin/python bench/hostile_folder.py --cost 20

``--cost N``: what reading a folder's YAML in a child process costs on a normal folder — the
median of N reads of the tiny v3 YAML (and the released v2/v3 configs where shared/oracles is
present) through the child (CosyVoiceHParams.from_file) and in process (from_text), and of N
folder checks (check_folder) and 3 whole loads (CosyVoiceSynth.load) of the tiny folder.

Starts app.py (temporary dirs, ``--engine cosyvoice3`` with no folder), then for each variant
of tests/hostile_folders.py: writes the hostile folder (a tiny valid one with its YAML
replaced), sends ``POST /api/v1/models/cosyvoice3/load {"model_dir": ...}`` from a thread and
polls ``GET /health/live`` (1 s client timeout, every 0.25 s) until the load answers or
``--watch`` seconds pass. A frozen app is then sent SIGTERM and given 10 s to exit (then
SIGKILL), and the next variant gets a fresh app. "Frozen": the load did not end within
``--watch`` s, or /health/live went unanswered 3 times in a row. Prints one line per variant:
the answers of /health/live (count, slowest, timeouts), the load's status and seconds, the
model's state and reason, and what SIGTERM did. Issue #35 item 2 (the freeze, before and
after the fix).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import machine  # noqa: E402
from tests.conftest import start_app, stop_app  # noqa: E402
from tests.hostile_folders import VARIANTS, make_hostile  # noqa: E402

LIVE_TIMEOUT_S = 1.0


def watch_load(app, folder: Path, watch_s: float) -> dict:
    """Load ``folder`` in a thread, poll /health/live meanwhile; what happened."""
    result: dict = {}

    def load() -> None:
        t0 = time.perf_counter()
        try:
            r = httpx.post(f"{app.url}/api/v1/models/cosyvoice3/load", timeout=watch_s + 60,
                           json={"model_dir": str(folder)})
            result["status"] = r.status_code
            result["message"] = r.json().get("error", {}).get("message", "")[:300]
        except httpx.HTTPError as e:
            result["status"] = f"no answer ({type(e).__name__})"
        result["load_s"] = round(time.perf_counter() - t0, 2)

    thread = threading.Thread(target=load, daemon=True)
    thread.start()
    answers, timeouts, run, longest, t_end = [], 0, 0, 0, time.monotonic() + watch_s
    while thread.is_alive() and time.monotonic() < t_end:
        t0 = time.perf_counter()
        try:
            httpx.get(app.url + "/health/live", timeout=LIVE_TIMEOUT_S).raise_for_status()
            answers.append(time.perf_counter() - t0)
            run = 0
        except httpx.HTTPError:
            timeouts, run = timeouts + 1, run + 1
            longest = max(longest, run)
        time.sleep(0.25)
    result.update(live_answers=len(answers), live_timeouts=timeouts,
                  live_timeouts_in_a_row=longest,
                  live_max_s=round(max(answers), 3) if answers else None,
                  load_done=not thread.is_alive())
    # frozen: the load never ended, or /health/live went unanswered 3 s in a row
    result["frozen"] = not result["load_done"] or longest >= 3
    return result


def terminate(app) -> str:
    """SIGTERM, 10 s to exit, then SIGKILL; what happened."""
    t0 = time.perf_counter()
    app.proc.send_signal(signal.SIGTERM)
    try:
        app.proc.wait(10)
        return f"exited in {time.perf_counter() - t0:.1f} s"
    except subprocess.TimeoutExpired:
        app.proc.kill()
        app.proc.wait()
        return "ignored for 10 s; SIGKILL"


def _median_s(call, runs: int) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        call()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def child_cost(runs: int, work: Path) -> None:
    from cosyvoice.runtime.folder import check_folder
    from cosyvoice.runtime.hparams import CosyVoiceHParams
    from cosyvoice.runtime.synthesis import CosyVoiceSynth
    from tests.cosyvoice_folder import make_folder
    from tests.oracle.harness import oracle_dir

    good = make_folder(work / "good", 3, seed=3)
    yamls = {"tiny v3": good / "cosyvoice3.yaml"}
    if oracle_dir() is not None:
        yamls.update({f"released v{v}": oracle_dir() / "configs" / f"cosyvoice{v}.yaml"
                      for v in (2, 3)})
    print(f"# reading a folder's YAML: child process vs in process, on {machine()}; "
          f"load average {os.getloadavg()}")
    for name, path in yamls.items():
        text = path.read_text(encoding="utf-8")
        child = _median_s(lambda p=path: CosyVoiceHParams.from_file(p), runs)
        here = _median_s(lambda t=text: CosyVoiceHParams.from_text(t), runs)
        print(f"{name} ({len(text):,} B): child {child * 1000:.0f} ms, in process "
              f"{here * 1000:.0f} ms (median of {runs})")
    check = _median_s(lambda: check_folder(good, 3), runs)
    load = _median_s(lambda: CosyVoiceSynth.load(good, 3).close(), 3)
    print(f"check_folder (tiny v3): {check * 1000:.0f} ms; CosyVoiceSynth.load (tiny v3): "
          f"{load:.2f} s (median of 3); load average {os.getloadavg()}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--variants", default="power_tower,shift_huge,alias_bomb,yaml_is_fifo")
    ap.add_argument("--watch", type=float, default=20.0, help="seconds to poll per variant")
    ap.add_argument("--cost", type=int, default=0, metavar="N",
                    help="only measure the child's cost on a normal folder, N runs")
    args = ap.parse_args()
    if args.cost:
        work = Path(tempfile.mkdtemp(prefix="bench-yaml-cost-"))
        try:
            child_cost(args.cost, work)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        return 0
    names = args.variants.split(",") if args.variants != "all" else list(VARIANTS)
    work = Path(tempfile.mkdtemp(prefix="bench-hostile-"))
    from tests.cosyvoice_folder import make_folder

    good = make_folder(work / "good", 3, seed=3)
    print(f"# hostile model folders on {machine()}; load average {os.getloadavg()}")
    app, rows = None, []
    try:
        for i, name in enumerate(names):
            if app is None:
                (work / f"app{i}").mkdir()
                app = start_app(work / f"app{i}", "--engine", "cosyvoice3", timeout=900)
            row = {"variant": name, **watch_load(app, make_hostile(
                good, work / f"bad-{name}", name), args.watch)}
            if row["frozen"]:
                row["sigterm"] = terminate(app)
                app = None
            state = {}
            if app is not None:
                models = httpx.get(app.url + "/api/v1/models", timeout=5).json()["models"]
                state = next(m for m in models if m["name"] == "cosyvoice3")
            row["state"], row["reason"] = state.get("state"), state.get("reason", "")[:200]
            rows.append(row)
            print(json.dumps(row, ensure_ascii=False), flush=True)
    finally:
        if app is not None:
            stop_app(app)
        shutil.rmtree(work, ignore_errors=True)
    frozen = [r["variant"] for r in rows if r["frozen"]]
    print(f"RESULT hostile_variants={len(rows)} frozen={len(frozen)} "
          f"({', '.join(frozen) or 'none'}); load average {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

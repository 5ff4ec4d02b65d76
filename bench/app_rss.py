"""Peak RSS of the running app after N syntheses through its real HTTP surface, and what
the app costs while nobody asks anything of it.

    .venv/bin/python bench/app_rss.py [--requests 20] [--voice joe] [--idle-s 30]

Starts app.py on a free port (temporary dirs), waits until every model has settled (the
optional Kokoro loads right after the app is ready), reads the process's CPU over
``--idle-s`` seconds of idleness, alternates preset (``--voice``) and cloning requests
through gradio_client, and reads the process's RSS and peak RSS (VmHWM) from /proc.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import SENTENCE_20, machine, real_prompt
from tests.conftest import start_app, stop_app


def proc_status(pid: int) -> dict[str, int]:
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = int(value.split()[0]) * 1024
    return out


def cpu_seconds(pid: int) -> float:
    """The process's user + system CPU so far (``/proc/PID/stat`` fields 14 and 15)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def settled_models(url: str, timeout_s: float = 300.0) -> list[dict]:
    """The models' states once none is LOADING and none changed for 5 s (the optional ones
    load after the app is ready)."""
    import json
    import time
    import urllib.request

    deadline, last, since = time.monotonic() + timeout_s, None, time.monotonic()
    while True:
        with urllib.request.urlopen(url + "/api/v1/models", timeout=30) as r:
            models = json.load(r)["models"]
        states = [(m["name"], m["state"]) for m in models]
        if states != last:
            last, since = states, time.monotonic()
        quiet = time.monotonic() - since >= 5.0
        if (quiet and all(s != "LOADING" for _, s in states)) or time.monotonic() > deadline:
            return models
        time.sleep(0.5)


def main() -> int:
    from gradio_client import Client, handle_file

    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=20)
    ap.add_argument("--voice", default="joe", help="the preset requests' voice")
    ap.add_argument("--idle-s", type=float, default=30.0,
                    help="how long to read the idle app's CPU (0: not read)")
    args = ap.parse_args()
    app = start_app(Path(tempfile.mkdtemp(prefix="bench-rss-")))
    try:
        client = Client(app.url, verbose=False)
        states = settled_models(app.url)
        start = proc_status(app.proc.pid)
        idle0 = cpu_seconds(app.proc.pid)
        time.sleep(args.idle_s)
        idle_cpu = cpu_seconds(app.proc.pid) - idle0
        prompt = handle_file(str(real_prompt()))
        for i in range(args.requests):
            clone = i % 2 == 1
            client.predict("clone" if clone else "preset", SENTENCE_20, args.voice,
                           prompt if clone else None, "", 1.0, None, 1.0, api_name="/generate")
        end = proc_status(app.proc.pid)
    finally:
        stop_app(app)
    mb = 2**20
    print(f"# app RSS on {machine()}, {args.requests} syntheses (half preset {args.voice}, "
          "half clone)")
    print("models: " + ", ".join(f"{m['name']} {m['state']}" for m in states))
    print(f"RSS after start-up (every model settled): {start['VmRSS'] / mb:.0f} MB")
    if args.idle_s > 0:
        print(f"CPU while idle: {idle_cpu:.2f} CPU-s in {args.idle_s:.0f} s "
              f"({100 * idle_cpu / args.idle_s:.1f} % of a core)")
    print(f"RSS after {args.requests} syntheses: {end['VmRSS'] / mb:.0f} MB")
    print(f"peak RSS (VmHWM): {end['VmHWM'] / mb:.0f} MB")
    print(f"RESULT app_rss_start_mb={start['VmRSS'] / mb:.0f} app_rss_end_mb="
          f"{end['VmRSS'] / mb:.0f} app_rss_peak_mb={end['VmHWM'] / mb:.0f}"
          + (f" app_idle_cpu_pct={100 * idle_cpu / args.idle_s:.1f}" if args.idle_s > 0 else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Does any request pay for one-time work? Start the real app, then time the first and
second request of each kind (English preset, Mandarin preset, Joe speaking Chinese,
mixed text) and the start-to-ready time.

    .venv/bin/python bench/first_request.py [--root DIR]

``--root`` runs another checkout's app.py (e.g. a worktree at an older commit) with this
checkout's venv, so two versions are measured on one machine in one run.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import machine  # noqa: E402
from tests.conftest import ROOT, free_port, get_json  # noqa: E402

CASES = [
    ("English preset (joe)", {"text": "The birch canoe slid on the smooth planks.",
                              "voice": "joe", "seed": 1}),
    ("Mandarin preset (baker)", {"text": "今天天气很好，我们一起去公园散步吧。",
                                 "voice": "baker", "seed": 1}),
    ("joe speaking Chinese", {"text": "这本书讲的是一个关于友谊的故事。", "voice": "joe",
                              "seed": 1}),
    ("mixed zh/en (baker)", {"text": "我今天用 Python 写了三个 scripts。", "voice": "baker",
                             "seed": 1}),
]


def post(url: str, body: dict) -> float:
    req = urllib.request.Request(url + "/api/v1/tts", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    t0 = time.perf_counter()
    with urllib.request.urlopen(req, timeout=300) as r:
        r.read()
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", type=Path, default=ROOT, help="checkout whose app.py runs")
    ap.add_argument("--idle", type=float, default=0.0,
                    help="seconds to wait after ready (optional models load then)")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-first-"))
    port = free_port()
    cmd = [sys.executable, str(args.root / "app.py"), "--host", "127.0.0.1", "--port",
           str(port), "--outputs-dir", str(tmp / "o"), "--cache-dir", str(tmp / "c"),
           "--log-dir", str(tmp / "l"), "--pidfile", str(tmp / "app.pid"),
           "--voices-dir", str(tmp / "v")]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=args.root, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        while get_json_safe(url + "/health/ready") != 200:
            if proc.poll() is not None or time.perf_counter() - t0 > 300:
                print("the app did not become ready")
                return 1
            time.sleep(0.25)
        ready = time.perf_counter() - t0
        time.sleep(args.idle)
        print(f"machine: {machine()}\napp: {args.root}\nstart → ready: {ready:.1f} s")
        print(f"{'request':28s} {'first':>8s} {'second':>8s}")
        for name, body in CASES:
            first, second = post(url, body), post(url, body)
            print(f"{name:28s} {first:7.2f}s {second:7.2f}s")
    finally:
        proc.terminate()
        proc.wait(60)
    return 0


def get_json_safe(url: str) -> int:
    try:
        return get_json(url)[0]
    except OSError:
        return 0


if __name__ == "__main__":
    raise SystemExit(main())

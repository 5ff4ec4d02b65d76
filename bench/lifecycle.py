"""Lifecycle figures of the real app, through its real HTTP surface.

    .venv/bin/python bench/lifecycle.py [--requests 300] [--warmup 20] [--restarts 5]
                                        [--skip-rss] [--skip-restarts]

1. RSS growth over N consecutive cloning requests after a warm-up (target ≤ 5 MB):
   prints the curve's start, middle and end (RSS read from /proc every request).
2. Hard restart, Restart button → new process ready (target ≤ 15 s), and soft reload,
   "Reload models" → done (target ≤ 3 s): medians of K, measured interleaved.

The app is started by restart.sh itself (nothing running yet) on a free port with
temporary folders, models preloaded, restart cooldown 0; it is stopped at the end.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import machine, real_prompt  # noqa: E402
from tests.conftest import ROOT, free_port, get_json  # noqa: E402

CLONE_TEXT = "Thank you for calling, your order arrives on Friday."
RSS_TARGET_MB, HARD_TARGET_S, SOFT_TARGET_S = 5.0, 15.0, 3.0


class Instance:
    """An app started by restart.sh in a temporary folder; follows it across restarts."""

    def __init__(self) -> None:
        self.workdir = Path(tempfile.mkdtemp(prefix="bench-lifecycle-"))
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.pidfile = self.workdir / "run" / "app.pid"
        w = self.workdir
        self.args = ["--host", "127.0.0.1", "--port", str(self.port), "--outputs-dir",
                     str(w / "outputs"), "--cache-dir", str(w / "cache"), "--log-dir",
                     str(w / "logs"), "--pidfile", str(self.pidfile),
                     "--restart-cooldown-s", "0"]
        self.env = {**os.environ, "COSYVOICE_PIDFILE": str(self.pidfile)}

    def start(self, timeout: float = 400) -> float:
        t0 = time.perf_counter()
        done = subprocess.run(["bash", str(ROOT / "restart.sh"), "--", *self.args], cwd=ROOT,
                              env=self.env, capture_output=True, text=True, timeout=timeout)
        if done.returncode != 0:
            raise SystemExit(f"app did not start:\n{done.stdout}\n{done.stderr}")
        return time.perf_counter() - t0

    def pid(self) -> int:
        return int(self.pidfile.read_text())

    def rss(self) -> int:
        for line in Path(f"/proc/{self.pid()}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        raise RuntimeError("no VmRSS")

    def wait_new_ready(self, old: int, timeout: float = 300) -> None:
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                status, body = get_json(self.url + "/health/ready", timeout=2)
                if status == 200 and body.get("ready") and body["pid"] != old:
                    return
            except OSError:
                pass
            time.sleep(0.1)
        raise SystemExit(f"no new ready process after {timeout} s")

    def wait_settled(self, timeout: float = 120) -> None:
        """Until every model is loaded (or failed): optional ones load in the background after
        ready, and a soft reload timed during that would measure the contention."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            status, body = get_json(self.url + "/health/ready", timeout=5)
            if status == 200 and all(m["state"] in ("READY", "FAILED") for m in body["models"]):
                return
            time.sleep(0.2)
        raise SystemExit(f"models still loading after {timeout} s")

    def wait_lock_free(self) -> None:
        from cosyvoice.server.admin import restart_running

        while restart_running(self.workdir / "run" / "restart.lock"):
            time.sleep(0.05)

    def stop(self) -> None:
        self.wait_lock_free()  # let a restart in progress finish first
        try:
            pid = self.pid()
        except (OSError, ValueError):
            return
        if str(self.pidfile) in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="ignore"):
            os.kill(pid, signal.SIGTERM)


def bench_rss(inst: Instance, requests: int, warmup: int) -> bool:
    from gradio_client import Client, handle_file

    client = Client(inst.url, verbose=False)
    prompts = [handle_file(str(real_prompt(n))) for n in ("cate_blanch.mp3", "cate_blanch_2.mp3")]

    def clone(i: int) -> None:  # two real prompts in turn: uploads, validation, profiles
        client.predict("clone", CLONE_TEXT, "joe", prompts[i % 2], "", 1.0, 7, 1.0,
                       api_name="/generate")

    for i in range(warmup):
        clone(i)
    curve, t0 = [inst.rss()], time.perf_counter()
    for i in range(requests):
        clone(i)
        curve.append(inst.rss())
    elapsed = time.perf_counter() - t0
    mb = [c / 2**20 for c in curve]
    step = max(len(mb) // 10, 1)
    print(f"\nRSS over {requests} cloning requests after {warmup} warm-up "
          f"({elapsed / requests:.2f} s/request):")
    print("  request : " + " ".join(f"{i:>7d}" for i in range(0, len(mb), step)))
    print("  RSS MB  : " + " ".join(f"{mb[i]:7.1f}" for i in range(0, len(mb), step)))
    k = min(20, max(len(mb) // 3, 1))
    start, middle = statistics.median(mb[:k]), statistics.median(mb[len(mb) // 2 - k // 2:][:k])
    end = statistics.median(mb[-k:])
    growth = end - start
    print(f"  start {start:.1f} MB · middle {middle:.1f} MB · end {end:.1f} MB "
          f"(medians of {k}) → growth {growth:+.1f} MB (target ≤ {RSS_TARGET_MB:g}) "
          f"{'PASS' if growth <= RSS_TARGET_MB else 'FAIL'}")
    print(f"  min {min(mb):.1f} MB · max {max(mb):.1f} MB")
    print(f"RESULT rss_growth_mb={growth:.1f} rss_requests={requests}")
    return growth <= RSS_TARGET_MB


def bench_restarts(inst: Instance, k: int) -> bool:
    from gradio_client import Client

    hard, soft = [], []
    for i in range(k):
        client = Client(inst.url, verbose=False)
        inst.wait_settled()
        t0 = time.perf_counter()
        client.predict("", "en", api_name="/admin_reload")
        soft.append(time.perf_counter() - t0)
        inst.wait_lock_free()
        old = inst.pid()
        t0 = time.perf_counter()
        client.predict("", True, "en", api_name="/admin_restart")
        inst.wait_new_ready(old)
        hard.append(time.perf_counter() - t0)
        print(f"  round {i + 1}: soft reload {soft[-1]:.2f} s · hard restart {hard[-1]:.2f} s")
    h, s = statistics.median(hard), statistics.median(soft)
    print(f"\nhard restart (button → new pid ready): median {h:.2f} s of {k} "
          f"(min {min(hard):.2f}, max {max(hard):.2f}); target ≤ {HARD_TARGET_S:g} s "
          f"{'PASS' if h <= HARD_TARGET_S else 'FAIL'}")
    print(f"soft reload (Reload models → done):     median {s:.2f} s of {k} "
          f"(min {min(soft):.2f}, max {max(soft):.2f}); target ≤ {SOFT_TARGET_S:g} s "
          f"{'PASS' if s <= SOFT_TARGET_S else 'FAIL'}")
    print(f"ratio hard / soft: {h / s:.1f}×")
    print(f"RESULT restart_hard_s={h:.2f} reload_soft_s={s:.2f}")
    return h <= HARD_TARGET_S and s <= SOFT_TARGET_S


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=300)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--restarts", type=int, default=5)
    ap.add_argument("--skip-rss", action="store_true")
    ap.add_argument("--skip-restarts", action="store_true")
    args = ap.parse_args()
    print(f"machine: {machine()} (shared with other jobs: absolute times are noisy)")
    inst = Instance()
    ok = True
    try:
        print(f"cold start via restart.sh (nothing running): {inst.start():.1f} s")
        if not args.skip_rss:
            ok &= bench_rss(inst, args.requests, args.warmup)
        if not args.skip_restarts:
            print(f"\nsoft reload and hard restart, interleaved, {args.restarts} rounds:")
            ok &= bench_restarts(inst, args.restarts)
    finally:
        inst.stop()
    print(f"\nlogs: {inst.workdir / 'logs'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""Restart under load: N REST requests running and queued, then POST /admin/restart.

    .venv/bin/python bench/restart_load.py [--requests 5] [--concurrency 2]
                                           [--drain-timeout-s 60] [--text "..."]
                                           [--restarts 0]

The app is started by restart.sh (temporary folders, ``--concurrency`` slots, a queue big
enough for every request) and warmed with one request, which also gives one synthesis'
time. N requests are fired at ``POST /api/v1/tts`` at once; as soon as the slots are busy
and the rest wait, a restart is requested through ``POST /admin/restart`` (keep outputs).
Every request's answer is counted by outcome:

- ``200``: finished (its audio arrived whole);
- ``503 at once``: refused within 1 s of the drain's start (the first moment
  ``/health/ready`` says "draining"; restart.sh sends SIGTERM a moment after the restart
  request), with its Retry-After;
- ``503 late``: refused later than that (accepted work dropped after waiting);
- anything else (a dropped connection, a 500).

Each refused request's advertised time to ready (its answer's moment + Retry-After) is
compared with the moment the new process first answers ``/health/ready`` (polled every
0.1 s from the restart request on): "short by" > 0 means a client retrying as told would
meet a server not yet ready. ``--restarts K`` first restarts the idle app K times (what
the app learns its Retry-After from). The load average is printed before and after.

It also checks that every refused request succeeds when retried after its Retry-After,
and that no ``.partial-*`` file is left in outputs/.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import io
import os
import sys
import threading
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx  # noqa: E402
import soundfile as sf  # noqa: E402

from bench._common import machine  # noqa: E402
from bench.lifecycle import Instance  # noqa: E402

TEXT = ("The committee met on Tuesday to review the budget. Several members asked for more "
        "time before the vote. The chair agreed to meet again next week, and the minutes "
        "were sent to everyone on Friday morning.")
AT_ONCE_S = 1.0


def _in_flight(url: str) -> int:
    text = httpx.get(url + "/metrics", timeout=5).text
    for line in text.splitlines():
        if line.startswith("cosyvoice_in_flight_requests "):
            return int(float(line.split()[1]))
    return 0


def _watch(url: str, old_pid: int, seen: dict[str, float], timeout: float = 600) -> None:
    """Record (perf_counter) when /health/ready first says "draining" and when a process
    other than ``old_pid`` first says ready."""
    deadline = time.perf_counter() + timeout
    while "ready" not in seen and time.perf_counter() < deadline:
        try:
            r = httpx.get(url + "/health/ready", timeout=2)
            body = r.json()
            if body.get("status") == "draining":
                seen.setdefault("draining", time.perf_counter())
            elif r.status_code == 200 and body.get("ready") and body.get("pid") != old_pid:
                seen["ready"] = time.perf_counter()
        except (httpx.HTTPError, ValueError):
            pass
        time.sleep(0.02 if "draining" not in seen else 0.1)


def _one(url: str, text: str, seed: int) -> tuple[int, float, dict, str]:
    """``(status, finished at (perf_counter), headers, error message or "")``."""
    try:
        r = httpx.post(url + "/api/v1/tts", json={"text": text, "seed": seed}, timeout=600)
    except httpx.HTTPError as e:
        return -1, time.perf_counter(), {}, f"{type(e).__name__}: {e}"
    if r.status_code == 200:
        frames = sf.info(io.BytesIO(r.content)).frames
        return 200, time.perf_counter(), dict(r.headers), "" if frames else "empty audio"
    try:
        message = str(r.json().get("error"))
    except ValueError:
        message = r.text[:200]
    return r.status_code, time.perf_counter(), dict(r.headers), message


def _label(status: int, answered_after_s: float) -> str:
    if status == 503:
        return "503 at once" if answered_after_s <= AT_ONCE_S else "503 late"
    return {200: "200 finished", -1: "connection dropped"}.get(status, f"{status}")


def _load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def _idle_restarts(inst: Instance, k: int) -> None:
    """Restart the idle app K times through the API (what restarts.log learns from)."""
    for i in range(k):
        inst.wait_lock_free()
        old, t0 = inst.pid(), time.perf_counter()
        r = httpx.post(inst.url + "/admin/restart", json={"keep_outputs": True}, timeout=30)
        r.raise_for_status()
        inst.wait_new_ready(old)
        print(f"idle restart {i + 1}: new process ready {time.perf_counter() - t0:.1f} s "
              "after the request")
    inst.wait_lock_free()


def run(args: argparse.Namespace) -> int:
    inst = Instance()
    queue = max(args.requests - args.concurrency, 0) + 2
    inst.args += ["--concurrency", str(args.concurrency), "--queue-size", str(queue),
                  "--drain-timeout-s", str(args.drain_timeout_s)]
    print(f"machine: {machine()} (shared: absolute times are noisy)")
    print(_load())
    print(f"cold start via restart.sh: {inst.start():.1f} s")
    _idle_restarts(inst, args.restarts)
    t0 = time.perf_counter()
    status = _one(inst.url, args.text, 0)[0]
    one = time.perf_counter() - t0
    print(f"warm-up request: {status}, {one:.1f} s (one synthesis alone)")
    try:
        with cf.ThreadPoolExecutor(args.requests) as pool:
            jobs = [pool.submit(_one, inst.url, args.text, i + 1) for i in range(args.requests)]
            deadline = time.time() + 120
            while _in_flight(inst.url) < min(args.concurrency, args.requests):
                if time.time() > deadline:
                    raise SystemExit("the requests never started")
                time.sleep(0.05)
            time.sleep(0.3)  # the rest are queued behind the busy slots by now
            old = inst.pid()
            seen: dict[str, float] = {}
            watcher = threading.Thread(target=_watch, args=(inst.url, old, seen))
            watcher.start()
            t_restart = time.perf_counter()
            r = httpx.post(inst.url + "/admin/restart", json={"keep_outputs": True}, timeout=30)
            print(f"restart requested: {r.status_code} with {args.requests} requests "
                  f"({args.concurrency} running, {args.requests - args.concurrency} queued), "
                  f"drain timeout {args.drain_timeout_s:g} s")
            results = [j.result() for j in jobs]
        t_drain = seen.get("draining", t_restart)
        print(f"drain began {t_drain - t_restart:.1f} s after the restart request")
        counts: Counter[str] = Counter()
        retry = []
        for i, (code, done, headers, message) in enumerate(results):
            after = done - t_restart
            label = _label(code, done - t_drain)
            counts[label] += 1
            extra = f" Retry-After {headers.get('retry-after')}" if code == 503 else ""
            print(f"  request {i + 1}: {label} {after:+.1f} s after the restart request"
                  f"{extra} {message[:140]}")
            if code == 503:
                retry.append((i, float(headers.get("retry-after") or 0), done))
        for i, after_s, done in sorted(retry, key=lambda r: r[2] + r[1]):
            time.sleep(max(done + after_s - time.perf_counter(), 0))
            code = _one(inst.url, args.text, 100 + i)[0]
            print(f"  request {i + 1} retried once, {after_s:g} s (its Retry-After) after its "
                  f"503: {code}")
            counts[f"retry → {code}"] += 1
        watcher.join()
        if "ready" not in seen:
            raise SystemExit("the new process never became ready")
        t_ready = seen["ready"]
        print(f"new process ready {t_ready - t_restart:.1f} s after the restart request")
        for i, after_s, done in retry:
            short = t_ready - (done + after_s)
            print(f"  request {i + 1}: advertised ready {done + after_s - t_restart:.1f} s, "
                  f"actual {t_ready - t_restart:.1f} s after the restart request: Retry-After "
                  f"{'short' if short > 0 else 'long'} by {abs(short):.1f} s")
        if retry:
            worst = max(t_ready - (done + after_s) for _, after_s, done in retry)
            print(f"RESULT retry_after_short_by_s={worst:.1f} (worst; > 0: too early)")
        partial = list((inst.workdir / "outputs").glob(".partial-*"))
        print(f"half-written files in outputs/: {len(partial)}")
        print("RESULT " + " · ".join(f"{k}: {v}" for k, v in sorted(counts.items())))
        print(_load())
    finally:
        inst.stop()
    print(f"logs: {inst.workdir / 'logs'}")
    bad = counts["503 late"] + counts["connection dropped"] + len(partial) + sum(
        v for k, v in counts.items() if k.startswith("retry") and k != "retry → 200")
    return 0 if bad == 0 else 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=5)
    ap.add_argument("--concurrency", type=int, default=2)
    ap.add_argument("--drain-timeout-s", type=float, default=60.0)
    ap.add_argument("--text", default=TEXT)
    ap.add_argument("--restarts", type=int, default=0,
                    help="idle restarts first (what the app learns its Retry-After from)")
    return run(ap.parse_args())


if __name__ == "__main__":
    sys.exit(main())

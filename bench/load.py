"""Load: N concurrent REST clients × M requests of mixed modes against the real app.

    nice -n 5 .venv/bin/python bench/load.py [--clients 8] [--requests 20] [--queue-size 4]

Starts app.py on a free port (temporary dirs; ``--concurrency``/``--queue-size`` passed on)
and runs the clients over ``POST /api/v1/tts``, cycling three modes: preset English (joe),
preset Mandarin (baker) and cloning from a real recording (multipart). A 429/503 must carry
``Retry-After``; the client waits that long (capped) and sends again. Counted: every
answer's status, 5xx other than a clean 503 busy answer, busy answers without
Retry-After, latency of the successful attempt and end to end (with retries), and the
app's RSS sampled every second (start, middle, end, max, and the curve every 10 s).

The queue is smaller than the number of clients by default (4 waiting + 2 running < 8
clients), so the busy path is exercised, not only the happy one.

Last line: ``RESULT load_5xx=… load_busy_without_retry_after=… load_p50_s=… ...``.
"""

from __future__ import annotations

import argparse
import itertools
import math
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx  # noqa: E402

from bench._common import machine, real_prompt  # noqa: E402

EN = "The committee met on Tuesday to review the budget and the plans for next year."
ZH = "今天早上天气很好，我们一起去公园散步。"
CLONE = "Thank you for calling. Your order will arrive on Friday morning."
MAX_WAIT_S = 10.0  # cap on a Retry-After wait


@dataclass
class Attempt:
    mode: str
    status: int           # 0: connection error
    seconds: float
    retry_after: str | None


@dataclass
class Report:
    attempts: list[Attempt] = field(default_factory=list)
    done: list[tuple[str, float, float]] = field(default_factory=list)  # mode, last, e2e
    failed: list[str] = field(default_factory=list)
    rss: list[tuple[float, int]] = field(default_factory=list)  # (t, bytes)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def statuses(self) -> Counter:
        return Counter(a.status for a in self.attempts)

    def server_errors(self) -> int:
        """5xx answers other than a clean busy 503 (with Retry-After)."""
        return sum(1 for a in self.attempts if a.status >= 500
                   and not (a.status == 503 and a.retry_after))

    def busy_without_retry_after(self) -> int:
        return sum(1 for a in self.attempts if a.status in (429, 503) and not a.retry_after)


def _request(client: httpx.Client, url: str, mode: str, prompt: bytes,
             seed: int) -> httpx.Response:
    if mode == "clone":
        return client.post(url, data={"text": CLONE, "mode": "clone", "seed": str(seed)},
                           files={"prompt": ("cate_blanch.mp3", prompt, "audio/mpeg")})
    text, voice = (ZH, "baker") if mode == "zh" else (EN, "joe")
    return client.post(url, json={"text": text, "voice": voice, "seed": seed})


def _one(client: httpx.Client, url: str, mode: str, prompt: bytes, seed: int,
         report: Report, give_up_s: float) -> None:
    """Send until a final answer, honouring Retry-After; record every attempt."""
    t_first = time.perf_counter()
    tries = 0
    while True:
        tries += 1
        t0 = time.perf_counter()
        try:
            r = _request(client, url, mode, prompt, seed)
            status, retry = r.status_code, r.headers.get("Retry-After")
        except httpx.TransportError:
            status, retry = 0, None
        now = time.perf_counter()
        with report.lock:
            report.attempts.append(Attempt(mode, status, now - t0, retry))
        if status == 200 and len(r.content) > 44:
            with report.lock:
                report.done.append((mode, now - t0, now - t_first))
            return
        if status in (429, 503, 0) and now - t_first < give_up_s:
            time.sleep(min(float(retry), MAX_WAIT_S) if retry else 1.0)
            continue
        with report.lock:
            report.failed.append(f"{mode}: {status} after {tries} tries in {now - t_first:.0f} s: "
                                 f"{r.text[:120] if status else 'no answer'}")
        return


def _rss_sampler(pid: int, report: Report, stop: threading.Event) -> None:
    t0 = time.monotonic()
    while not stop.is_set():
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    report.rss.append((time.monotonic() - t0, int(line.split()[1]) * 1024))
        except OSError:
            return
        stop.wait(1.0)


def run_load(url: str, pid: int, clients: int, requests: int, prompt: bytes,
             modes: tuple[str, ...] = ("en", "zh", "clone"),
             give_up_s: float = 300.0) -> Report:
    """``clients`` threads × ``requests`` each against ``url`` (the app's base URL)."""
    report = Report()
    stop = threading.Event()
    sampler = threading.Thread(target=_rss_sampler, args=(pid, report, stop), daemon=True)
    sampler.start()
    tts = url.rstrip("/") + "/api/v1/tts"

    def client_loop(k: int) -> None:
        cycle = itertools.islice(itertools.cycle(modes), k, None)  # clients start staggered
        with httpx.Client(timeout=300) as client:
            for j, mode in zip(range(requests), cycle, strict=False):
                _one(client, tts, mode, prompt, 1000 * k + j, report, give_up_s)

    threads = [threading.Thread(target=client_loop, args=(k,)) for k in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stop.set()
    sampler.join(timeout=5)
    return report


def percentile(xs: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of a non-empty list."""
    s = sorted(xs)
    return s[max(0, min(len(s) - 1, math.ceil(q / 100 * len(s)) - 1))]


def print_report(report: Report, clients: int, requests: int, wall_s: float) -> None:
    mb = 2**20
    last = [d[1] for d in report.done] or [0.0]
    e2e = [d[2] for d in report.done] or [0.0]
    rss = [b for _, b in report.rss] or [0]
    print(f"# load on {machine()}: {clients} clients × {requests} requests "
          f"(preset en, preset zh, clone), {wall_s:.0f} s wall")
    print(f"statuses (0 = connection error): {dict(sorted(report.statuses().items()))}")
    print(f"completed {len(report.done)}/{clients * requests}; failed {len(report.failed)}")
    for f in report.failed[:5]:
        print(f"  failed: {f}")
    print(f"5xx (not clean busy): {report.server_errors()}; busy without Retry-After: "
          f"{report.busy_without_retry_after()}")
    print(f"latency of the successful attempt: p50 {percentile(last, 50):.2f} s, "
          f"p95 {percentile(last, 95):.2f} s; end to end with retries: p50 "
          f"{percentile(e2e, 50):.2f} s, p95 {percentile(e2e, 95):.2f} s")
    for mode in ("en", "zh", "clone"):
        xs = [d[1] for d in report.done if d[0] == mode]
        if xs:
            print(f"  {mode:5} n={len(xs):3} p50 {percentile(xs, 50):.2f} s "
                  f"p95 {percentile(xs, 95):.2f} s")
    mid = rss[len(rss) // 2]
    print(f"RSS MB: start {rss[0] / mb:.0f}, mid {mid / mb:.0f}, end {rss[-1] / mb:.0f}, "
          f"max {max(rss) / mb:.0f}  ({len(rss)} samples, 1/s)")
    curve = " ".join(f"{t:.0f}s:{b / mb:.0f}" for t, b in report.rss[::10])
    print(f"RSS curve (every 10 s): {curve}")
    busy = sum(1 for a in report.attempts if a.status in (429, 503))
    print(f"RESULT load_5xx={report.server_errors()} "
          f"load_busy_without_retry_after={report.busy_without_retry_after()} "
          f"load_failed={len(report.failed)} load_busy_answers={busy} "
          f"load_p50_s={percentile(last, 50):.2f} load_p95_s={percentile(last, 95):.2f} "
          f"load_e2e_p95_s={percentile(e2e, 95):.2f} load_rss_start_mb={rss[0] / mb:.0f} "
          f"load_rss_max_mb={max(rss) / mb:.0f} "
          f"load_rss_growth_mb={(rss[-1] - rss[0]) / mb:.0f}")


def main() -> int:
    from tests.conftest import start_app, stop_app

    ap = argparse.ArgumentParser()
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--requests", type=int, default=20)
    ap.add_argument("--concurrency", type=int, default=2)
    ap.add_argument("--queue-size", type=int, default=4)
    args = ap.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="bench-load-"))
    app = start_app(workdir, "--concurrency", str(args.concurrency),
                    "--queue-size", str(args.queue_size))
    try:
        prompt = real_prompt().read_bytes()
        t0 = time.perf_counter()
        report = run_load(app.url, app.proc.pid, args.clients, args.requests, prompt)
        wall = time.perf_counter() - t0
    finally:
        stop_app(app)
    print_report(report, args.clients, args.requests, wall)
    ok = report.server_errors() == 0 and report.busy_without_retry_after() == 0
    return 0 if ok and not report.failed else 1


if __name__ == "__main__":
    sys.exit(main())

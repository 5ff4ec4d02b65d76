"""A voice fit inside the warm app: its wall and CPU time, the app's RSS while it runs, and
the latency of synthesis requests with and without a fit running.

    nice -n 10 .venv/bin/python bench/fit_serving.py [--budget 240] [--requests 8]
        [--busy-budget 120] [--popsize 0]

Starts app.py on a free port (temporary dirs) and waits until every model has settled, then:

1. *without a fit*: ``--requests`` REST syntheses (``/api/v1/tts``, a Kokoro voice, a
   20-word sentence), one after another with a 2 s pause; their latencies; the app's RSS
   after them is the warm baseline;
2. *a fit alone*: ``POST /api/v1/voices/fit`` of a ~10 s prompt (the two Cate Blanchett
   recordings shipped with gradio, joined) at ``--budget``; its wall time (submit → done),
   the CPU seconds of its provenance (the process's, nothing else runs), generations, the
   scores, the RSS sampled every second (peak minus the warm baseline);
3. *with a fit running*: a second fit (``--busy-budget``) while the same requests run; their
   latencies and the RSS peak.

Timings on a shared machine are provisional: the load average is printed beside them.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import numpy as np
import soundfile as sf

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import SENTENCE_20, machine, real_prompt  # noqa: E402
from bench.app_rss import proc_status, settled_models  # noqa: E402
from tests.conftest import start_app, stop_app  # noqa: E402

MB = 2**20


def ten_second_prompt(folder: Path) -> Path:
    """The two Cate Blanchett clips joined with 0.3 s between them, cut to 10.5 s."""
    parts, sr = [], None
    for name in ("cate_blanch.mp3", "cate_blanch_2.mp3"):
        wav, sr = sf.read(real_prompt(name), dtype="float32", always_2d=True)
        parts += [wav.mean(axis=1), np.zeros(int(0.3 * sr), np.float32)]
    path = folder / "prompt10.wav"
    sf.write(path, np.concatenate(parts)[: int(10.5 * sr)], sr)
    return path


def latencies(url: str, n: int, voice: str) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        r = httpx.post(url + "/api/v1/tts", json={"text": SENTENCE_20, "voice": voice},
                       timeout=600)
        r.raise_for_status()
        out.append(time.perf_counter() - t0)
        time.sleep(2.0)
    return out


class RssSampler:
    """The app's VmRSS every second, in a thread, until stopped."""

    def __init__(self, pid: int) -> None:
        self.pid, self.samples, self._stop = pid, [], threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(1.0):
            self.samples.append(proc_status(self.pid)["VmRSS"])

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        return max(self.samples, default=0)


def run_fit(url: str, prompt: Path, name: str, budget: float) -> tuple[dict, float]:
    """(the finished job, wall seconds from submit to done)."""
    t0 = time.perf_counter()
    with open(prompt, "rb") as f:
        r = httpx.post(url + "/api/v1/voices/fit", data={"name": name, "budget": str(budget)},
                       files={"prompt": ("prompt.wav", f, "audio/wav")}, timeout=300)
    r.raise_for_status()
    job_id = r.json()["id"]
    while True:
        job = httpx.get(f"{url}/api/v1/jobs/{job_id}", timeout=60).json()
        if job["state"] not in ("queued", "running"):
            return job, time.perf_counter() - t0
        time.sleep(1.0)


def stats(xs: list[float]) -> str:
    return (f"median {statistics.median(xs):.2f} s, max {max(xs):.2f} s "
            f"({', '.join(f'{x:.2f}' for x in xs)})")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--budget", type=float, default=240.0)
    ap.add_argument("--busy-budget", type=float, default=120.0)
    ap.add_argument("--requests", type=int, default=8)
    ap.add_argument("--voice", default="af_heart")
    ap.add_argument("--popsize", type=int, default=0, help="--fit-popsize (0: the app's)")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-fit-"))
    prompt = ten_second_prompt(work)
    extra = ["--fit-popsize", str(args.popsize)] if args.popsize else []
    (work / "app").mkdir()
    app = start_app(work / "app", *extra)
    report: dict = {"machine": machine()}
    try:
        settled_models(app.url)
        latencies(app.url, 2, args.voice)  # warm the path
        report["load_before"] = os.getloadavg()
        quiet = latencies(app.url, args.requests, args.voice)
        warm = proc_status(app.proc.pid)["VmRSS"]
        sampler = RssSampler(app.proc.pid)
        alone, wall = run_fit(app.url, prompt, "bench-fit", args.budget)
        peak_alone = sampler.stop()
        report["load_fit"] = os.getloadavg()
        sampler = RssSampler(app.proc.pid)
        box: dict = {}
        fitter = threading.Thread(target=lambda: box.update(
            zip(("job", "wall"), run_fit(app.url, prompt, "bench-fit-2", args.busy_budget))))
        fitter.start()
        time.sleep(20.0)  # the fit is past its setup
        busy = latencies(app.url, args.requests, args.voice)
        fitter.join()
        peak_busy = sampler.stop()
        report["load_busy"] = os.getloadavg()
    finally:
        stop_app(app)
    result = alone["fit"].get("result") or {}
    prog = alone["fit"].get("progress") or {}
    print(f"# a voice fit in the warm app on {report['machine']}")
    print(f"load average before / during the fit / during the busy phase: "
          f"{report['load_before']} / {report['load_fit']} / {report['load_busy']}")
    print(f"prompt: {prompt.name}, {alone['fit'].get('prompt_s')} s after trimming")
    print(f"synthesis latency without a fit: {stats(quiet)}")
    print(f"synthesis latency with a fit running: {stats(busy)}")
    print(f"fit alone: state {alone['state']}, budget {args.budget:.0f} s, wall {wall:.0f} s "
          f"(submit → done), fit seconds {result.get('seconds')}, CPU {result.get('cpu_s')} s, "
          f"{result.get('generations')} generations, {result.get('evaluations')} evaluations, "
          f"popsize {alone['fit']['config'].get('popsize')}")
    print(f"scores: {json.dumps(result.get('scores'))}; last progress {json.dumps(prog)}")
    print(f"RSS: warm {warm / MB:.0f} MB, peak during the fit alone {peak_alone / MB:.0f} MB "
          f"(+{(peak_alone - warm) / MB:.0f} MB), peak with requests {peak_busy / MB:.0f} MB "
          f"(+{(peak_busy - warm) / MB:.0f} MB)")
    busy_job = box.get("job", {})
    print(f"second fit (with requests): state {busy_job.get('state')}, wall "
          f"{box.get('wall', 0):.0f} s, generations "
          f"{(busy_job.get('fit', {}).get('result') or {}).get('generations')}")
    print(f"RESULT fit_wall_s={wall:.0f} fit_cpu_s={result.get('cpu_s')} "
          f"rss_delta_mb={(max(peak_alone, peak_busy) - warm) / MB:.0f} "
          f"latency_quiet_s={statistics.median(quiet):.2f} "
          f"latency_busy_s={statistics.median(busy):.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

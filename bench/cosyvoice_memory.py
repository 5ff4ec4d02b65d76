"""The app's RSS around a CosyVoice folder: before load, after load, after each of N requests,
after unload.

    PYTHONPATH=. .venv/bin/python bench/cosyvoice_memory.py [--folder DIR] [--version 3]
        [--requests 100] [--text "Hello there."] [--gap 0]

Starts app.py (temporary dirs) with ``--engine cosyvoice<version>`` and no folder, so the
engine starts unloaded; reads the process's RSS from /proc once every model has settled
(pre-load), loads ``--folder`` through the admin API (``POST /api/v1/models/<name>/load``),
sends N short preset-voice requests through ``POST /api/v1/tts`` (the folder's first
spk2info voice, a fixed seed) reading RSS after each, then unloads the model. Without
``--folder`` a tiny folder is made by tests/cosyvoice_folder.py; a real-size one comes from
``bench/make_random_cosyvoice.py --size real``. A second load, request and unload follows,
to tell what the first cycle keeps for good (imported libraries) from a per-cycle leak.
Growth over the requests is counted from after the first one (its one-time allocations,
e.g. the frontend's caches, are reported apart); the issue's bar: ≤ 5 MB over 100
requests, unload within 50 MB of pre-load. ``--gap S`` waits S seconds between requests, as a
person clicking Generate does: past 10 s the web framework's idle worker thread has exited and
the next request comes in on a new one (what cosyvoice/lifecycle/compute.py is about).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import machine  # noqa: E402
from bench.app_rss import proc_status, settled_models  # noqa: E402
from tests.conftest import start_app, stop_app  # noqa: E402

MB = 2**20
GROWTH_LIMIT_MB = 5.0
UNLOAD_LIMIT_MB = 50.0


def rss(app) -> float:
    return proc_status(app.proc.pid)["VmRSS"] / MB


def admin(app, name: str, action: str, body: dict | None = None) -> dict:
    r = httpx.post(f"{app.url}/api/v1/models/{name}/{action}", json=body, timeout=600)
    if r.status_code != 200:
        raise SystemExit(f"{action} {name}: HTTP {r.status_code} {r.text}")
    return r.json()


def speak(app, name: str, voice: str, text: str) -> float:
    """One request; its wall seconds."""
    t0 = time.perf_counter()
    r = httpx.post(app.url + "/api/v1/tts", timeout=600, json={
        "text": text, "engine": name, "voice": voice, "seed": 1, "format": "wav"})
    if r.status_code != 200:
        raise SystemExit(f"request failed: HTTP {r.status_code} {r.text}")
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--folder", type=Path, help="a CosyVoice folder (default: a tiny one)")
    ap.add_argument("--version", type=int, choices=(2, 3), default=3)
    ap.add_argument("--requests", type=int, default=100)
    ap.add_argument("--text", default="Hello there.")
    ap.add_argument("--cycles", type=int, choices=(1, 2), default=2,
                    help="2: a second load, request and unload after the first unload")
    ap.add_argument("--gap", type=float, default=0.0,
                    help="seconds between requests (>10: each comes in on a new thread)")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-cv-mem-"))
    folder = args.folder
    if folder is None:
        from tests.cosyvoice_folder import make_folder

        folder = make_folder(work / "folder", args.version, seed=args.version)
    name = f"cosyvoice{args.version}"
    (work / "app").mkdir()
    app = start_app(work / "app", "--engine", name, timeout=900)  # a loaded 2-core VM: slow
    try:
        settled_models(app.url)
        # One offline request first: the request tracker trims the heap when it ends (as after
        # every request), so the pre-load reading is not inflated by start-up's free heap
        # pages that the unload's malloc_trim would then give back (a reading below pre-load).
        httpx.post(app.url + "/api/v1/tts", timeout=600,
                   json={"text": "Hi.", "engine": "offline", "format": "wav"})
        pre = rss(app)
        t0 = time.perf_counter()
        admin(app, name, "load", {"model_dir": str(folder)})
        load_s = time.perf_counter() - t0
        loaded = rss(app)
        voice = next(iter(httpx.get(f"{app.url}/api/v1/engine?name={name}",
                                    timeout=30).json()["voices"]))
        after, seconds = [], []
        for i in range(args.requests):
            time.sleep(args.gap if i else 0.0)
            seconds.append(speak(app, name, voice, args.text))
            after.append(rss(app))
            print(f"request {len(after)}: {after[-1]:.1f} MB, {seconds[-1]:.2f} s",
                  file=sys.stderr, flush=True)
        admin(app, name, "unload")
        unloaded = rss(app)
        # A second load, request and unload: what the first cycle kept for good (imported
        # libraries, first-use caches) against what each cycle keeps (a leak).
        reloaded = unloaded2 = float("nan")
        if args.cycles == 2:
            admin(app, name, "load", {"model_dir": str(folder)})
            reloaded = rss(app)
            speak(app, name, voice, args.text)
            admin(app, name, "unload")
            unloaded2 = rss(app)
    finally:
        stop_app(app)
    # RSS after a request swings by tens of MB with whether the heap was trimmed yet (the
    # tracker trims once idle): the floors (lowest of the first and last ten requests after
    # the first) show growth; the end-to-end difference is printed too.
    window = max(1, min(10, (len(after) - 1) // 2))
    growth = (min(after[-window:]) - min(after[1:1 + window])) if len(after) > 1 else 0.0
    print(f"# CosyVoice{args.version} app RSS on {machine()}")
    print(f"folder: {folder}; {args.requests} requests of {args.text!r} (voice {voice}, "
          f"{args.gap:g} s apart), median {sorted(seconds)[len(seconds) // 2]:.2f} s wall each")
    print(f"RSS before load: {pre:.1f} MB")
    print(f"RSS after load:  {loaded:.1f} MB (+{loaded - pre:.1f} MB, {load_s:.1f} s)")
    print(f"RSS after request 1: {after[0]:.1f} MB (+{after[0] - loaded:.1f} MB first request)")
    marks = sorted({0, 9, 24, 49, len(after) - 1} & set(range(len(after))))
    print("RSS after request " + ", ".join(f"{i + 1}: {after[i]:.1f}" for i in marks) + " MB")
    print(f"growth over requests 2..{len(after)} (floor of the last {window} − floor of "
          f"requests 2..{window + 1}): {growth:+.1f} MB; end to end "
          f"{after[-1] - after[0]:+.1f} MB (max {max(after):.1f}, min {min(after):.1f}; "
          f"bar ≤ {GROWTH_LIMIT_MB:g} MB)")
    print(f"RSS after unload: {unloaded:.1f} MB ({unloaded - pre:+.1f} MB vs pre-load; "
          f"bar within {UNLOAD_LIMIT_MB:g} MB)")
    print(f"second cycle: RSS after load {reloaded:.1f} MB, after 1 request and unload "
          f"{unloaded2:.1f} MB ({unloaded2 - unloaded:+.1f} MB vs the first unload)")
    ok = growth <= GROWTH_LIMIT_MB and abs(unloaded - pre) <= UNLOAD_LIMIT_MB
    print(f"RESULT cv_rss_pre_mb={pre:.1f} cv_rss_loaded_mb={loaded:.1f} "
          f"cv_rss_growth_mb={growth:.1f} cv_rss_unloaded_mb={unloaded:.1f} "
          f"cv_rss_unloaded2_mb={unloaded2:.1f} "
          f"{'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

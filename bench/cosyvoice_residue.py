"""What a CosyVoice load/unload cycle leaves in the process, step by step, in one process.

    PYTHONPATH=. .venv/bin/python bench/cosyvoice_residue.py [--folder DIR] [--version 3]
        [--cycles 2] [--threads K [--compute]]

The app's first unload of a CosyVoice folder ended ~97 MB above its pre-load RSS, and a second
cycle returned to the first unload's level (bench/cosyvoice_memory.py). This splits that
residue: RSS after importing torch (the app has it before any CosyVoice load), after importing
the runtime's modules and libraries alone (transformers, tokenizers, onnxruntime, our runtime),
after load, after one request, after ``close()`` + ``gc.collect()``, and after glibc's
``malloc_trim(0)`` (free heap pages given back to the OS), for each cycle. Without ``--folder``
a tiny folder is made by tests/cosyvoice_folder.py.

``--threads K``: each cycle after the first sends K requests, each from a new thread (as the
web framework's worker threads come and go), with torch's 2 intra-op threads; ``--compute``
sends them through the engines' long-lived compute threads (cosyvoice/lifecycle/compute.py)
instead. The first cycle runs on the main thread either way, so later cycles' rows against
it show what the threads left behind.
"""

from __future__ import annotations

import argparse
import gc
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

MB = 2**20


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def request(synth, text: str) -> None:
    import torch

    with torch.inference_mode():
        wav = list(synth.tts(synth.sft(text, synth.speakers[0]), seed=1))
    del wav


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--folder", type=Path)
    ap.add_argument("--version", type=int, choices=(2, 3), default=3)
    ap.add_argument("--cycles", type=int, default=2)
    ap.add_argument("--text", default="Hi.")
    ap.add_argument("--threads", type=int, default=0,
                    help="requests per cycle after the first, each from a new thread")
    ap.add_argument("--compute", action="store_true",
                    help="--threads' requests run through ComputeThreads")
    args = ap.parse_args()
    import torch

    from cosyvoice.lifecycle import resources

    torch.set_num_threads(2 if args.threads else 1)
    folder = args.folder
    if folder is None:  # made in another process: making it imports the runtime here
        folder = Path(tempfile.mkdtemp(prefix="cv-residue-")) / "folder"
        subprocess.run([sys.executable, "-c", "import sys; from pathlib import Path; from "
                        "tests.cosyvoice_folder import make_folder; make_folder(Path(sys.argv[1]),"
                        " int(sys.argv[2]), seed=int(sys.argv[2]))", str(folder),
                        str(args.version)], check=True, cwd=ROOT)
    gc.collect()
    resources.trim_heap()
    rows = [("torch imported (the app's baseline has it)", rss_mb())]
    import onnxruntime  # noqa: F401
    import tokenizers  # noqa: F401
    import transformers  # noqa: F401

    rows.append(("+ transformers, tokenizers, onnxruntime imported", rss_mb()))
    from cosyvoice.lifecycle.compute import ComputeThreads
    from cosyvoice.runtime.synthesis import CosyVoiceSynth

    gc.collect()
    resources.trim_heap()
    rows.append(("+ cosyvoice.runtime.synthesis imported (all runtime modules)", rss_mb()))
    pool = ComputeThreads() if args.compute else None  # one for the run, as the app has
    for cycle in range(1, args.cycles + 1):
        synth = CosyVoiceSynth.load(folder, args.version)
        rows.append((f"cycle {cycle}: loaded", rss_mb()))
        if cycle == 1 or not args.threads:
            request(synth, args.text)
            rows.append((f"cycle {cycle}: after one request", rss_mb()))
        else:
            for _ in range(args.threads):
                thread = threading.Thread(
                    target=pool.call if pool else request,
                    args=(request, synth, args.text) if pool else (synth, args.text))
                thread.start()
                thread.join()
            via = "through ComputeThreads" if pool else "directly"
            rows.append((f"cycle {cycle}: after {args.threads} requests from new threads, "
                         f"{via}", rss_mb()))
        synth.close()
        del synth
        gc.collect()
        rows.append((f"cycle {cycle}: closed + gc.collect()", rss_mb()))
        resources.trim_heap()
        rows.append((f"cycle {cycle}: + malloc_trim(0)", rss_mb()))
    base = rows[0][1]
    print(f"# CosyVoice{args.version} load/unload residue, one process; folder {folder}")
    print("| step | RSS MB | vs torch baseline |\n| --- | --- | --- |")
    for what, mb in rows:
        print(f"| {what} | {mb:.1f} | {mb - base:+.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

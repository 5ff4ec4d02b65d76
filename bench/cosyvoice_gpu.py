"""Every GPU figure issue #26 asks of the CosyVoice engine, in one command (runs on CPU too).

    PYTHONPATH=. python3 bench/cosyvoice_gpu.py --device cuda [--folder DIR]
        [--dtypes float32,float16] [--requests 50] [--levels 1,2,4] [--rounds 2]
        [--parts memory,oom,concurrency,restart] [--app]
    PYTHONPATH=. .venv/bin/python bench/cosyvoice_gpu.py --device cpu --size tiny   # the CPU run
    bash bench/device_gpu.sh      # on a lent GPU machine (bench/README.md), wheels carried

Two modes. **Standalone** (the default; bench/cosyvoice_gpu_standalone.py): only the CosyVoice
runtime, a ModelManager and the CosyVoice engine in this process (no gradio, FastAPI or offline
models), so that it runs where only torch, transformers, tokenizers and onnxruntime are
installed; part 4 is then restart.sh's wait for GPU memory (deploy/wait_gpu_free.py) run
against a stand-in CUDA process that writes a pidfile, held and then stopped with SIGTERM.
**--app**: the whole app as below (bootstrap's services; part 4 a real restart.sh restart),
for a machine with the project's full .venv. What follows describes --app; standalone measures
the same figures the same way through the engine directly.

Without ``--folder`` a CosyVoice3 folder with random weights is made first by our own code
(``tests/cosyvoice_folder.py``, no oracle): ``--size real`` (default on CUDA) the released
sizes, ``--size tiny`` the test one. For each dtype (CUDA: float32 and float16; CPU: float32),
through the app's own services in this process (bootstrap: ModelManager, Synthesizer, request
tracker — the idle trim runs as in the app):

1. **memory**: process RSS and ``torch.cuda.memory_allocated/reserved`` before the load, after
   it, after each of ``--requests`` clone requests (``"Hi."``, the same seeded request), after
   the unload; flat = the allocated readings after requests 2..N within 1 MB, unload = back to
   the pre-load allocated reading (CPU: RSS floors, as bench/cosyvoice_memory.py);
2. **OOM** (CUDA only): free GPU memory filled with side tensors, one request — it must end in
   the app's ModelError (HTTP 503) with the out-of-memory message, not a crash; the side
   tensors freed, the same request must succeed;
3. **concurrency**: at 1, 2 and 4 concurrent requests (a SynthesisGate of that size, each
   client ``--rounds`` requests through ``Synthesizer.stream``): throughput (audio-s per
   wall-s), RTF and first-chunk latency (medians), the model instance (one for all requests),
   peak RSS and peak allocated GPU memory;

then, once (the first dtype), 4. **restart**: the app started by restart.sh with
``--engine cosyvoice3 --model-dir FOLDER --device D``, restarted by restart.sh; the seconds
to /health/ready and to the engine READY, and restart.log's lines about the wait for the old
process's GPU memory (on CPU restart.sh says it has no GPU and sleeps instead).

Prints one ``RESULT`` line per dtype and a last ``RESULT`` line; exit 1 when a bar fails.
Keep it under ~8 minutes on an H100: the defaults are sized for that (a real-size folder is
about a minute to make; each request decodes at most 40 tokens).
"""

from __future__ import annotations

import argparse
import gc
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import psutil  # noqa: E402
import torch  # noqa: E402

from bench._common import machine, real_prompt  # noqa: E402
from bench.cosyvoice_gpu_standalone import fmt, memory_verdict, reading  # noqa: E402

MB = 2**20
ENGINE = "cosyvoice3"
TEXT = "Hi."  # clone mode: the length rule counts the text alone, so ≤ 40 tokens a request
PROMPT_TEXT = "And the award goes to someone who has been there for a long time."


def make_services(folder: Path, device: str, dtype: str, work: Path):
    from cosyvoice.bootstrap import build
    from cosyvoice.settings import Settings

    settings = Settings(outputs_dir=work / "outputs", cache_dir=work / "cache",
                        log_dir=work / "logs", pidfile=work / "app.pid",
                        voices_dir=work / "voices", engine=ENGINE, model_dir=str(folder),
                        cosyvoice_dtype=dtype, device=device)
    settings.ensure_dirs()
    services = build(settings, device)
    services.manager.load_all(required_only=True)  # the offline stack, VAD: the baseline
    return services


def clone_request(seed: int = 1):
    from cosyvoice.pipeline import SynthesisRequest

    return SynthesisRequest(text=TEXT, mode="clone", engine=ENGINE, seed=seed,
                            prompt_path=str(real_prompt()), prompt_text=PROMPT_TEXT)


# ---- 1. memory -------------------------------------------------------------------------
def bench_memory(services, device: str, requests: int) -> tuple[bool, dict]:
    from cosyvoice.lifecycle import resources

    manager, synth = services.manager, services.synth
    synth.validate_prompt(Path(real_prompt()))  # the prompt's validation cache, not the model
    # Warm-up, as the standalone mode's cycle: one request before the baseline, so that the
    # process's one-time costs (lazy imports, thread pools, the allocator's first arenas) are
    # not read as growth. Without it a quiet CPU run grew +5.9 MB over requests 2..5, all of it
    # by request 3, then flat (2026-12-07).
    synth.synthesize(clone_request())
    manager.unload(ENGINE)
    resources.free_memory()
    pre = reading(device)
    t0 = time.perf_counter()
    manager.load(ENGINE)
    load_s = time.perf_counter() - t0
    loaded = reading(device)
    print(f"  before load: {fmt(pre)}")
    print(f"  after load ({load_s:.1f} s): {fmt(loaded)}")
    after, seconds = [], []
    for i in range(requests):
        t0, cpu0 = time.perf_counter(), time.process_time()
        synth.synthesize(clone_request())
        seconds.append(time.perf_counter() - t0)
        after.append(reading(device))
        print(f"  after request {i + 1}: {fmt(after[-1])} ({seconds[-1]:.2f} s wall, "
              f"{time.process_time() - cpu0:.2f} s process CPU)", flush=True)
    report = manager.unload(ENGINE)
    unloaded = reading(device)
    print(f"  after unload: {fmt(unloaded)} (manager: {report})")
    return memory_verdict(pre, loaded, after, unloaded, requests, load_s, seconds)


# ---- 2. out of memory ------------------------------------------------------------------
def bench_oom(services, device: str) -> bool:
    from cosyvoice.errors import ModelError

    if not device.startswith("cuda"):
        print("  skipped: CUDA only (a CPU request does not run out of device memory)")
        return True
    synth = services.synth
    services.manager.load(ENGINE)
    side: list[torch.Tensor] = []
    for size in (1024 * MB, 64 * MB, 4 * MB):  # fill what is free, coarse to fine
        while True:
            try:
                side.append(torch.empty(size, dtype=torch.uint8, device=device))
            except torch.OutOfMemoryError:
                break
    free, total = torch.cuda.mem_get_info(device)
    print(f"  side tensors: {sum(t.numel() for t in side) / MB:.0f} MB; free now "
          f"{free / MB:.0f} of {total / MB:.0f} MB")
    try:
        synth.synthesize(clone_request())
        refused, message = False, "the request succeeded with the GPU full"
    except ModelError as e:
        refused, message = True, f"ModelError (HTTP {e.http_status}): {e}"
    except Exception as e:  # the failure this checks for
        refused, message = False, f"{type(e).__name__} (not a clear 503): {e}"
    print(f"  request with the GPU full: {message}")
    side.clear()
    gc.collect()
    torch.cuda.empty_cache()
    try:
        result = synth.synthesize(clone_request())
        usable = len(result.wav) > 0
        print(f"  side tensors freed, same request: {len(result.wav) / result.sample_rate:.2f} s "
              f"of audio → usable")
    except Exception as e:
        usable = False
        print(f"  side tensors freed, same request FAILED: {type(e).__name__}: {e}")
    ok = refused and usable
    print(f"  → {'PASS' if ok else 'FAIL'} (503 while full, usable afterwards); "
          f"{fmt(reading(device))}")
    return ok


# ---- 3. concurrency --------------------------------------------------------------------
@dataclass
class Run:
    audio_s: float
    seconds: float
    first_chunk_s: float
    model: int


@dataclass
class Level:
    runs: list[Run] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def _client(services, gate, rounds: int, seed: int, level: Level) -> None:
    for r in range(rounds):
        t0 = time.perf_counter()
        first, audio = None, 0.0
        try:
            with gate.slot():
                model = id(services.manager.get(ENGINE))
                for chunk in services.synth.stream(clone_request(seed * 100 + r)):
                    first = time.perf_counter() - t0 if first is None else first
                    audio += len(chunk.wav) / chunk.sample_rate
        except Exception as e:
            with level.lock:
                level.errors.append(f"{type(e).__name__}: {e}")
            continue
        with level.lock:
            level.runs.append(Run(audio, time.perf_counter() - t0, first or 0.0, model))


def _peak_rss(stop: threading.Event, peak: list[float]) -> None:
    proc = psutil.Process()
    while not stop.wait(0.05):
        peak[0] = max(peak[0], proc.memory_info().rss / MB)


def bench_concurrency(services, device: str, levels: list[int], rounds: int
                      ) -> tuple[bool, dict]:
    from cosyvoice.lifecycle.gate import SynthesisGate

    services.manager.load(ENGINE)
    services.synth.synthesize(clone_request())  # warm: first-call costs out of the figures
    ok, figures = True, {}
    print("  | concurrency | requests | audio-s per wall-s | RTF median | first chunk median "
          "(s) | models | peak RSS MB | peak allocated MB |")
    print("  | --- | --- | --- | --- | --- | --- | --- | --- |")
    for c in levels:
        gate = SynthesisGate(c, queue_size=c * rounds, tracker=services.synth.tracker)
        level, stop, peak = Level(), threading.Event(), [0.0]
        if device.startswith("cuda"):
            torch.cuda.reset_peak_memory_stats(device)
        sampler = threading.Thread(target=_peak_rss, args=(stop, peak), daemon=True)
        sampler.start()
        cpu0, t0 = time.process_time(), time.perf_counter()
        clients = [threading.Thread(target=_client, args=(services, gate, rounds, i, level))
                   for i in range(c)]
        for t in clients:
            t.start()
        for t in clients:
            t.join()
        wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
        stop.set()
        sampler.join()
        runs = level.runs
        audio = sum(r.audio_s for r in runs)
        rtf = statistics.median(r.seconds / max(r.audio_s, 1e-6) for r in runs) if runs else 0
        first = statistics.median(r.first_chunk_s for r in runs) if runs else 0
        models = len({r.model for r in runs})
        alloc = (f"{torch.cuda.max_memory_allocated(device) / MB:.0f}"
                 if device.startswith("cuda") else "—")
        print(f"  | {c} | {len(runs)} | {audio / wall:.3f} | {rtf:.2f} | {first:.2f} | "
              f"{models} | {peak[0]:.0f} | {alloc} |")
        print(f"    ({wall:.1f} s wall, {cpu:.1f} s process CPU; errors: "
              f"{level.errors or 'none'})")
        ok &= not level.errors and models == 1
        figures[c] = {"throughput": audio / wall, "rtf": rtf, "first_chunk_s": first,
                      "peak_rss_mb": peak[0]}
    return ok, figures


# ---- 4. restart ------------------------------------------------------------------------
def bench_restart(folder: Path, device: str, dtype: str) -> tuple[bool, dict]:
    from bench.lifecycle import Instance
    from tests.conftest import get_json

    inst = Instance()
    inst.env["READY_TIMEOUT"] = "900"  # restart.sh's wait for ready (a loaded CPU is slow)
    inst.args += ["--device", device, "--engine", ENGINE, "--model-dir", str(folder),
                  "--cosyvoice-dtype", dtype]

    def engine_ready(timeout: float = 900) -> float:
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < timeout:
            try:
                _, body = get_json(inst.url + "/api/v1/engines", timeout=5)
                state = {e["name"]: e["state"] for e in body.get("engines", [])}.get(ENGINE)
                if state in ("READY", "FAILED"):
                    return state == "READY"
            except OSError:
                pass
            time.sleep(0.2)
        return False

    try:
        t0 = time.perf_counter()
        inst.start(timeout=1000)
        start_ready = time.perf_counter() - t0
        if not engine_ready():
            print("  the engine did not become READY after the first start")
            return False, {}
        start_engine = time.perf_counter() - t0
        print(f"  first start (nothing running): /health/ready {start_ready:.1f} s, engine "
              f"READY {start_engine:.1f} s")
        old = inst.pid()
        t0 = time.perf_counter()
        done = subprocess.run(["bash", str(ROOT / "restart.sh"), "--keep-outputs", "--reason",
                               "bench"], cwd=ROOT, env=inst.env, capture_output=True,
                              text=True, timeout=900)
        ready_s = time.perf_counter() - t0
        ok = done.returncode == 0 and inst.pid() != old and engine_ready()
        engine_s = time.perf_counter() - t0
        print(f"  restart.sh: exit {done.returncode}; to /health/ready {ready_s:.1f} s, to the "
              f"engine READY {engine_s:.1f} s (pid {old} → {inst.pid()})")
        log = inst.workdir / "logs" / "restart.log"
        lines = log.read_text(encoding="utf-8", errors="replace").splitlines() \
            if log.is_file() else []
        gpu = [ln for ln in lines if "GPU" in ln]
        print("  restart.log on the GPU wait: " + (" | ".join(gpu[-3:]) or "(no line)"))
        return ok, {"restart_ready_s": ready_s, "restart_engine_s": engine_s}
    finally:
        inst.stop()


# ---- main ------------------------------------------------------------------------------
def make_folder(size: str, work: Path) -> Path:
    from tests.cosyvoice_folder import make_folder as make

    t0 = time.perf_counter()
    folder = make(work / f"cosyvoice3-{size}", 3, seed=3, size=size)
    print(f"made a {size} CosyVoice3 folder with random weights in "
          f"{time.perf_counter() - t0:.0f} s: {folder}")
    return folder


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="cuda", help="cpu | cuda | cuda:N")
    ap.add_argument("--folder", type=Path, help="a CosyVoice3 folder (default: made here)")
    ap.add_argument("--size", choices=("tiny", "real"),
                    help="the folder made without --folder (default: real on CUDA, tiny on CPU)")
    ap.add_argument("--dtypes", help="comma-separated (default: float32,float16 on CUDA, "
                                     "float32 on CPU)")
    ap.add_argument("--requests", type=int, default=50)
    ap.add_argument("--levels", default="1,2,4")
    ap.add_argument("--rounds", type=int, default=2, help="requests per client and level")
    ap.add_argument("--parts", default="memory,oom,concurrency,restart",
                    help="which of memory,oom,concurrency,restart to run")
    ap.add_argument("--app", action="store_true",
                    help="through the whole app (bootstrap, restart.sh) instead of the "
                         "standalone engine (needs gradio, FastAPI and the offline models)")
    args = ap.parse_args()
    parts = set(args.parts.split(","))
    cuda = args.device.startswith("cuda")
    if cuda and not torch.cuda.is_available():
        raise SystemExit(f"--device {args.device}: no CUDA GPU is usable here; use --device cpu")
    dtypes = (args.dtypes or ("float32,float16" if cuda else "float32")).split(",")
    levels = [int(x) for x in args.levels.split(",")]
    print(f"# CosyVoice3 engine lifecycle on {args.device}, {'app' if args.app else 'standalone'}"
          + (f" ({torch.cuda.get_device_name(args.device)})" if cuda else "")
          + f"; {machine()}; torch {torch.__version__}")
    if not cuda:
        print("CUDA-only parts (allocated/reserved readings, the provoked OOM, restart.sh's "
              "wait for GPU memory) are skipped: --device cpu")
    work = Path(tempfile.mkdtemp(prefix="bench-cv-gpu-"))
    folder = args.folder or make_folder(args.size or ("real" if cuda else "tiny"), work)
    if not args.app:
        from bench.cosyvoice_gpu_standalone import run

        ok = run(folder, args.device, dtypes, parts, args.requests, levels, args.rounds, work)
        print(f"\nRESULT cosyvoice_gpu {'PASS' if ok else 'FAIL'}")
        return 0 if ok else 1
    results, ok = {}, True
    for dtype in dtypes if parts - {"restart"} else ():
        print(f"\n## {dtype}")
        services = make_services(folder, args.device, dtype, work / dtype)
        good, good_c, mem, conc = True, True, {}, {}
        if "memory" in parts:
            print("1. memory")
            good, mem = bench_memory(services, args.device, args.requests)
        if "oom" in parts:
            print("2. out of memory")
            good &= bench_oom(services, args.device)
        if "concurrency" in parts:
            print("3. concurrency")
            good_c, conc = bench_concurrency(services, args.device, levels, args.rounds)
        services.manager.unload_all()
        del services
        gc.collect()
        ok &= good and good_c
        results[dtype] = (mem, conc)
        print(f"RESULT dtype={dtype} " + " ".join(f"{k}={v:.2f}" for k, v in mem.items())
              + " " + " ".join(f"c{c}_{k}={v:.3f}" for c, f in conc.items() for k, v in f.items())
              + f" {'PASS' if good and good_c else 'FAIL'}")
    if "restart" in parts:
        print(f"\n## 4. restart via restart.sh ({dtypes[0]})")
        good, restart = bench_restart(folder, args.device, dtypes[0])
        ok &= good
        print("RESULT " + " ".join(f"{k}={v:.1f}" for k, v in restart.items())
              + f" {'PASS' if good else 'FAIL'}")
    print(f"\nRESULT cosyvoice_gpu {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""bench/cosyvoice_gpu.py's standalone mode: issue #26's GPU figures with only the CosyVoice
runtime, the ModelManager and the CosyVoice engine in this process — no gradio, no FastAPI, no
offline engine or its models — so that it runs on a lent GPU machine that has torch,
transformers, tokenizers and onnxruntime and gets the few other packages as carried wheels
(bench/device_wheels.sh).

The engine is driven as the app drives it: one ``ModelManager`` holding the ``cosyvoice3``
model spec (the app's own, with its dtype), ``CosyVoiceEngine.synthesize`` on an
``EngineRequest`` made by the app's text frontend (``plan_text``), every request inside the
app's ``call_with_oom_retry`` (the CUDA OOM → ``ModelError``, HTTP 503, mapping) and followed
by the app's idle trim (``resources.trim_idle``). The prompt is a seeded synthetic 4-s voiced
signal made here (no audio file travels; with random weights the prompt's content changes
nothing but its length).
"""

from __future__ import annotations

import gc
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import psutil
import torch

ROOT = Path(__file__).resolve().parent.parent
MB = 2**20
ENGINE = "cosyvoice3"
TEXT = "Hi."  # the length rule counts the text alone, so ≤ 40 tokens a request
PROMPT_TEXT = "And the award goes to someone who has been there for a long time."
PROMPT_SR, PROMPT_S = 24000, 4.0
FLAT_MB = 1.0  # allocated GPU memory after requests 2..N: spread allowed
RSS_GROWTH_MB = 5.0  # CPU: the bar over the requests
UNLOAD_RSS_MB = 50.0
HOLD_MB = 1024  # the GPU-wait check's stand-in app holds this much


def reading(device: str) -> dict[str, float]:
    """RSS, and on CUDA the caching allocator's allocated / reserved bytes, in MB."""
    out = {"rss": psutil.Process().memory_info().rss / MB}
    if device.startswith("cuda"):
        torch.cuda.synchronize(device)
        out["alloc"] = torch.cuda.memory_allocated(device) / MB
        out["reserved"] = torch.cuda.memory_reserved(device) / MB
    return out


def fmt(r: dict[str, float]) -> str:
    text = f"RSS {r['rss']:.1f} MB"
    if "alloc" in r:
        text += f", allocated {r['alloc']:.1f} MB, reserved {r['reserved']:.1f} MB"
    return text


def synthetic_prompt():
    """A validated-prompt stand-in: 4 s of a voiced signal (harmonics of a gliding F0 under a
    syllable-rate envelope, a little noise), peak 0.9, at 24 kHz."""
    from cosyvoice.speaker.validation import PromptAudio

    rng = np.random.default_rng(7)
    t = np.arange(int(PROMPT_SR * PROMPT_S)) / PROMPT_SR
    f0 = 140 + 30 * np.sin(2 * np.pi * 0.7 * t)
    phase = 2 * np.pi * np.cumsum(f0) / PROMPT_SR
    voiced = sum(np.sin(k * phase) / k for k in range(1, 12))
    envelope = np.clip(np.sin(2 * np.pi * 4 * t), 0, None) ** 0.5
    wav = voiced * envelope + 0.01 * rng.standard_normal(t.size)
    wav = (0.9 * wav / np.abs(wav).max()).astype(np.float32)
    return PromptAudio(wav, PROMPT_SR, PROMPT_S, PROMPT_S, PROMPT_SR)


class Bench:
    """The one manager + engine of a dtype, and the requests the parts send."""

    def __init__(self, folder: Path, device: str, dtype: str) -> None:
        from cosyvoice.engine.cosyvoice.engine import CosyVoiceEngine, model_spec
        from cosyvoice.lifecycle.manager import ModelManager

        self.device = device
        self.manager = ModelManager(device, [model_spec(3, str(folder), dtype)])
        self.engine = CosyVoiceEngine(self.manager, 3)
        self.prompt = synthetic_prompt()

    def request(self, seed: int = 1, stream: bool = False):
        from cosyvoice.engine.base import EngineRequest
        from cosyvoice.frontend.plan import plan_text

        return EngineRequest(mode="clone", sentences=plan_text(TEXT, 200, "en"), voice="",
                             seed=seed, prompt=self.prompt, prompt_text=PROMPT_TEXT,
                             stream=stream)

    def synthesize(self, seed: int = 1) -> np.ndarray:
        """One whole request as the app runs it: OOM retried once, then ModelError (503);
        the idle trim afterwards."""
        from cosyvoice.lifecycle import resources
        from cosyvoice.lifecycle.oom import call_with_oom_retry

        def run() -> np.ndarray:
            chunks = [c.wav for c in self.engine.synthesize(self.request(seed))]
            return np.concatenate(chunks) if chunks else np.zeros(0, np.float32)

        try:
            return call_with_oom_retry(run)
        finally:
            resources.trim_idle()


# ---- 1. memory -------------------------------------------------------------------------
def bench_memory(b: Bench, requests: int, warm: bool) -> tuple[bool, dict]:
    """``warm``: first one load · request · unload cycle, so that the process's one-time costs
    (lazy imports of the frontend and of transformers' generation code, thread pools) are in
    the pre-load baseline, as in an app that has served before (once per process is enough)."""
    from cosyvoice.lifecycle import resources

    device = b.device
    if warm:
        t0 = time.perf_counter()
        b.manager.load(ENGINE)
        b.synthesize()
        b.manager.unload(ENGINE)
        print(f"  warm-up cycle (load, one request, unload): {time.perf_counter() - t0:.1f} s")
    resources.free_memory()
    pre = reading(device)
    t0 = time.perf_counter()
    b.manager.load(ENGINE)
    load_s = time.perf_counter() - t0
    loaded = reading(device)
    print(f"  before load: {fmt(pre)}")
    print(f"  after load ({load_s:.1f} s): {fmt(loaded)}")
    after, seconds, audio = [], [], 0.0
    for i in range(requests):
        t0, cpu0 = time.perf_counter(), time.process_time()
        wav = b.synthesize()
        seconds.append(time.perf_counter() - t0)
        audio = len(wav) / PROMPT_SR
        after.append(reading(device))
        print(f"  after request {i + 1}: {fmt(after[-1])} ({seconds[-1]:.2f} s wall, "
              f"{time.process_time() - cpu0:.2f} s process CPU, {audio:.2f} s audio)",
              flush=True)
    report = b.manager.unload(ENGINE)
    unloaded = reading(device)
    print(f"  after unload: {fmt(unloaded)} (manager: {report})")
    return memory_verdict(pre, loaded, after, unloaded, requests, load_s, seconds)


def memory_verdict(pre: dict, loaded: dict, after: list[dict], unloaded: dict, requests: int,
                   load_s: float, seconds: list[float]) -> tuple[bool, dict]:
    """Print the memory part's bars (GPU: allocated flat over requests 2..N and back to the
    pre-load reading after unload; CPU: RSS growth and unload residue) → ``(ok, figures)``.
    Shared by both modes of bench/cosyvoice_gpu.py."""
    ok, figures = True, {"load_s": load_s, "request_s": statistics.median(seconds)}
    if "alloc" in pre:
        tail = [r["alloc"] for r in after[1:]] or [after[0]["alloc"]]
        spread, back = max(tail) - min(tail), unloaded["alloc"] - pre["alloc"]
        print(f"  allocated after requests 2..{requests}: spread {spread:.2f} MB (flat: ≤ "
              f"{FLAT_MB:g}) → {'PASS' if spread <= FLAT_MB else 'FAIL'}; reserved after "
              f"each request min {min(r['reserved'] for r in after):.1f} / max "
              f"{max(r['reserved'] for r in after):.1f} MB")
        print(f"  allocated after unload − before load: {back:+.2f} MB (≤ {FLAT_MB:g}) → "
              f"{'PASS' if abs(back) <= FLAT_MB else 'FAIL'}; reserved after unload "
              f"{unloaded['reserved']:.1f} MB")
        ok = spread <= FLAT_MB and abs(back) <= FLAT_MB
        figures.update(alloc_loaded_mb=loaded["alloc"] - pre["alloc"], alloc_spread_mb=spread,
                       alloc_unload_mb=back)
    window = max(1, min(10, (len(after) - 1) // 2))
    growth = (min(r["rss"] for r in after[-window:])
              - min(r["rss"] for r in after[1:1 + window])) if len(after) > 1 else 0.0
    back_rss = unloaded["rss"] - pre["rss"]
    print(f"  RSS: +{loaded['rss'] - pre['rss']:.1f} MB at load; growth over requests "
          f"2..{requests} (floor of the last {window} − floor of the first {window}) "
          f"{growth:+.1f} MB (≤ {RSS_GROWTH_MB:g}); after unload {back_rss:+.1f} MB vs "
          f"before load (≤ +{UNLOAD_RSS_MB:g}; below it is memory the unload's heap trim gave "
          "back)")
    if "alloc" not in pre:  # on CPU the RSS is the memory that counts
        ok = growth <= RSS_GROWTH_MB and back_rss <= UNLOAD_RSS_MB
    figures.update(rss_loaded_mb=loaded["rss"] - pre["rss"], rss_growth_mb=growth,
                   rss_unload_mb=back_rss)
    return ok, figures


# ---- 2. out of memory ------------------------------------------------------------------
def fill_gpu(device: str) -> list[torch.Tensor]:
    """Side tensors over every free byte the allocator can get (its cache emptied first, so
    that a request needs new device memory), coarse to fine."""
    torch.cuda.empty_cache()
    side: list[torch.Tensor] = []
    for size in (1024 * MB, 64 * MB, 2 * MB):
        while True:
            try:
                side.append(torch.empty(size, dtype=torch.uint8, device=device))
            except torch.OutOfMemoryError:
                break
    return side


def bench_oom(b: Bench) -> bool:
    from cosyvoice.errors import ModelError

    device = b.device
    if not device.startswith("cuda"):
        print("  skipped: CUDA only (a CPU request does not run out of device memory)")
        return True
    b.manager.load(ENGINE)
    b.synthesize()  # warm, so that the OOM below is the request's, not a first-call cost
    side = fill_gpu(device)
    free, total = torch.cuda.mem_get_info(device)
    print(f"  side tensors: {sum(t.numel() for t in side) / MB:.0f} MB; free now "
          f"{free / MB:.0f} of {total / MB:.0f} MB; {fmt(reading(device))}")
    status = None
    try:
        b.synthesize()
        message = "the request succeeded with the GPU full"
    except ModelError as e:
        status = e.http_status
        message = f"ModelError, http_status {e.http_status}: {e}"
    except Exception as e:  # the failure this checks for
        message = f"{type(e).__name__} (not the app's 503 error): {e}"
    print(f"  request with the GPU full: {message}")
    side.clear()
    gc.collect()
    torch.cuda.empty_cache()
    try:
        wav = b.synthesize()
        usable = len(wav) > 0
        print(f"  side tensors freed, same request: {len(wav) / PROMPT_SR:.2f} s of audio → "
              f"{'usable' if usable else 'EMPTY'}")
    except Exception as e:
        usable = False
        print(f"  side tensors freed, same request FAILED: {type(e).__name__}: {e}")
    ok = status == 503 and usable
    print(f"  → {'PASS' if ok else 'FAIL'} (503 while full, usable afterwards); "
          f"{fmt(reading(device))}")
    return ok


# ---- 3. concurrency --------------------------------------------------------------------
@dataclass
class Level:
    runs: list[tuple[float, float, float, int]] = field(default_factory=list)  # audio, s, 1st, id
    errors: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def _client(b: Bench, rounds: int, seed: int, level: Level, start: threading.Barrier) -> None:
    start.wait()
    for r in range(rounds):
        t0, first, audio = time.perf_counter(), None, 0.0
        try:
            model = id(b.manager.get(ENGINE))
            for chunk in b.engine.synthesize(b.request(seed * 100 + r, stream=True)):
                if first is None and len(chunk.wav):
                    first = time.perf_counter() - t0
                audio += len(chunk.wav) / PROMPT_SR
        except Exception as e:
            with level.lock:
                level.errors.append(f"{type(e).__name__}: {e}")
            continue
        with level.lock:
            level.runs.append((audio, time.perf_counter() - t0, first or 0.0, model))


def _peak_rss(stop: threading.Event, peak: list[float]) -> None:
    proc = psutil.Process()
    while not stop.wait(0.05):
        peak[0] = max(peak[0], proc.memory_info().rss / MB)


def bench_concurrency(b: Bench, levels: list[int], rounds: int) -> tuple[bool, dict]:
    """``c`` threads at once, each ``rounds`` streamed requests, all on the one loaded synth."""
    device = b.device
    b.manager.load(ENGINE)
    b.synthesize()  # warm: first-call costs out of the figures
    ok, figures = True, {}
    print("  | concurrency | requests | audio-s per wall-s | RTF median | first chunk median "
          "(s) | models | peak RSS MB | peak allocated MB |")
    print("  | --- | --- | --- | --- | --- | --- | --- | --- |")
    for c in levels:
        level, stop, peak = Level(), threading.Event(), [0.0]
        if device.startswith("cuda"):
            torch.cuda.reset_peak_memory_stats(device)
        sampler = threading.Thread(target=_peak_rss, args=(stop, peak), daemon=True)
        sampler.start()
        start = threading.Barrier(c + 1)
        clients = [threading.Thread(target=_client, args=(b, rounds, i, level, start))
                   for i in range(c)]
        for t in clients:
            t.start()
        start.wait()
        cpu0, t0 = time.process_time(), time.perf_counter()
        for t in clients:
            t.join()
        wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
        stop.set()
        sampler.join()
        runs = level.runs
        audio = sum(r[0] for r in runs)
        rtf = statistics.median(r[1] / max(r[0], 1e-6) for r in runs) if runs else 0.0
        first = statistics.median(r[2] for r in runs) if runs else 0.0
        models = len({r[3] for r in runs})
        alloc = (f"{torch.cuda.max_memory_allocated(device) / MB:.0f}"
                 if device.startswith("cuda") else "—")
        print(f"  | {c} | {len(runs)} | {audio / wall:.3f} | {rtf:.2f} | {first:.3f} | "
              f"{models} | {peak[0]:.0f} | {alloc} |")
        print(f"    ({wall:.1f} s wall, {cpu:.1f} s process CPU; errors: "
              f"{level.errors or 'none'})", flush=True)
        ok &= not level.errors and models == 1 and len(runs) == c * rounds
        figures[c] = {"throughput": audio / wall, "rtf": rtf, "first_chunk_s": first}
    return ok, figures


# ---- 4. restart.sh's wait for GPU memory -------------------------------------------------
HOLDER = """
import os, signal, sys, time
import torch
pidfile, mb = sys.argv[1], int(sys.argv[2])
held = None
if torch.cuda.is_available():
    held = torch.empty(mb * 2**20, dtype=torch.uint8, device="cuda")
    torch.cuda.synchronize()
stop = []
signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
with open(pidfile + ".tmp", "w") as f:
    f.write(str(os.getpid()))
os.replace(pidfile + ".tmp", pidfile)
print("holding", 0 if held is None else held.numel() // 2**20, "MB", flush=True)
while not stop:
    time.sleep(0.05)
time.sleep(0.5)  # the app's drain and shutdown, shortened
"""


def nvidia_smi() -> str:
    """nvidia-smi's used memory and compute processes, one line (or why not)."""
    try:
        gpu = subprocess.run(["nvidia-smi", "--query-gpu=memory.used,memory.total",
                              "--format=csv,noheader"], capture_output=True, text=True,
                             timeout=20).stdout.strip()
        apps = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory",
                               "--format=csv,noheader"], capture_output=True, text=True,
                              timeout=20).stdout.strip()
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"nvidia-smi: {type(e).__name__}"
    return f"nvidia-smi used/total: {gpu or '?'}; compute apps: {apps or 'none'}".replace(
        "\n", ", ")


def wait_free(pid: int, timeout: float) -> tuple[int, str, float]:
    """deploy/wait_gpu_free.py (what restart.sh runs) against ``pid``: exit status, its line,
    seconds."""
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, str(ROOT / "deploy" / "wait_gpu_free.py"),
                           str(pid), str(timeout)], capture_output=True, text=True,
                          timeout=timeout + 60)
    return done.returncode, (done.stdout + done.stderr).strip(), time.perf_counter() - t0


def bench_gpu_wait(work: Path) -> tuple[bool, dict]:
    """A stand-in app (a CUDA process holding HOLD_MB, writing its pidfile) stopped with
    SIGTERM as restart.sh stops the app, and restart.sh's wait for its GPU memory run against
    it: first while it runs (it must see the memory held: exit 1 after 1 s), then after the
    SIGTERM (exit 0 once freed), timed."""
    pidfile = work / "holder.pid"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(pidfile), str(HOLD_MB)],
                              stdout=subprocess.PIPE, text=True)
    try:
        line = holder.stdout.readline().strip() if holder.stdout else ""
        if not pidfile.is_file():
            print(f"  → FAIL: the stand-in app did not start (exit {holder.wait()}); {line}")
            return False, {}
        pid = int(pidfile.read_text())
        print(f"  stand-in app pid {pid} (pidfile {pidfile}): {line}")
        print(f"  while it runs: {nvidia_smi()}")
        rc_held, out_held, _ = wait_free(pid, 1)
        print(f"  wait while it runs (1 s limit): exit {rc_held}: {out_held or '(no line)'}")
        if rc_held == 3:
            print("  no NVIDIA GPU here (no NVML): restart.sh sleeps NO_GPU_SLEEP instead")
        t0 = time.perf_counter()
        os.kill(pid, signal.SIGTERM)
        rc, out, seconds = wait_free(pid, 60)
        exited = holder.wait(timeout=30)
        print(f"  SIGTERM → wait: exit {rc} after {seconds:.2f} s ({time.perf_counter() - t0:.2f}"
              f" s since the SIGTERM; stand-in exit status {exited}): {out or '(no line)'}")
        print(f"  after the wait: {nvidia_smi()}")
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
    gpu = rc_held != 3
    ok = (rc_held == 1 and rc == 0) if gpu else rc == 3
    print(f"  → {'PASS' if ok else 'FAIL'} ("
          + ("seen held, then freed" if gpu else "no GPU: the no-GPU branch") + ")")
    return ok, {"gpu_wait_s": seconds} if gpu else {}


# ---- the run ---------------------------------------------------------------------------
def third_party_modules() -> list[str]:
    """The top-level third-party modules this process imported (what a device must have:
    bench/device_wheels.sh carries those its image lacks)."""
    ours = {"cosyvoice", "bench", "tests", "__main__", "__mp_main__"}
    return sorted({m.split(".")[0] for m in list(sys.modules)} - set(sys.stdlib_module_names)
                  - ours - {m for m in list(sys.modules) if m.startswith("_")})


def run(folder: Path, device: str, dtypes: list[str], parts: set[str], requests: int,
        levels: list[int], rounds: int, work: Path) -> bool:
    ok = True
    for n, dtype in enumerate(dtypes if parts - {"restart"} else ()):
        print(f"\n## {dtype} (standalone: the CosyVoice engine alone in this process)")
        b = Bench(folder, device, dtype)
        good, mem, conc = True, {}, {}
        if "memory" in parts:
            print("1. memory")
            good, mem = bench_memory(b, requests, warm=n == 0)
        if "oom" in parts:
            print("2. out of memory")
            good &= bench_oom(b)
        if "concurrency" in parts:
            print("3. concurrency (threads sharing the one loaded synth, streamed requests)")
            good_c, conc = bench_concurrency(b, levels, rounds)
            good &= good_c
        b.manager.unload_all()
        del b
        gc.collect()
        ok &= good
        print(f"RESULT dtype={dtype} " + " ".join(f"{k}={v:.2f}" for k, v in mem.items())
              + " " + " ".join(f"c{c}_{k}={v:.3f}" for c, f in conc.items() for k, v in f.items())
              + f" {'PASS' if good else 'FAIL'}", flush=True)
    if "restart" in parts:
        print("\n## 4. restart.sh's wait for a CUDA process's GPU memory")
        good, figures = bench_gpu_wait(work)
        ok &= good
        print("RESULT gpu_wait " + "".join(f"{k}={v:.2f} " for k, v in figures.items())
              + ("PASS" if good else "FAIL"))
    print("\nthird-party modules imported: " + " ".join(third_party_modules()))
    return ok

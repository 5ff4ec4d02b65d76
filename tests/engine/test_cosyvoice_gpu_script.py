"""bench/cosyvoice_gpu.py — the one-command GPU check of issue #26 — run the CPU way (standalone,
tiny folder, few requests), so that the script a GPU session runs cannot rot between GPU
sessions: every part runs, the CUDA-only ones say why they are skipped, every bar passes on
CPU, and the standalone mode imports none of the app's server or offline-engine stack (the
device machine has none of it: bench/device_wheels.sh carries only what the engine needs)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT

# Never on the device image and not carried: the standalone mode must not import them.
APP_ONLY = {"gradio", "fastapi", "starlette", "uvicorn", "kokoro", "piper", "silero_vad",
            "resemblyzer", "faster_whisper"}


def test_the_gpu_script_runs_on_cpu_standalone(cv_folder_v3):
    done = subprocess.run(
        [sys.executable, "bench/cosyvoice_gpu.py", "--device", "cpu", "--folder",
         str(cv_folder_v3), "--requests", "3", "--levels", "1,2", "--rounds", "1"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
        # one OpenMP thread: the tiny model is all thread sync on 2 busy cores otherwise
        env={**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"})
    out = done.stdout
    assert done.returncode == 0, out[-3000:] + done.stderr[-3000:]
    assert "lifecycle on cpu, standalone" in out
    assert "CUDA-only parts" in out and "skipped: CUDA only" in out
    assert "warm-up cycle" in out
    assert "after request 3: RSS" in out and "after unload: RSS" in out
    assert "| 2 | 2 |" in out  # concurrency 2: two requests, one row
    assert "wait while it runs (1 s limit): exit 3" in out  # no NVML here: the no-GPU branch
    assert "RESULT gpu_wait PASS" in out
    modules = set(out.split("third-party modules imported:")[1].split("\n")[0].split())
    assert {"torch", "transformers", "onnxruntime"} <= modules
    assert not modules & APP_ONLY, modules & APP_ONLY
    assert out.rstrip().endswith("RESULT cosyvoice_gpu PASS")


@pytest.mark.slow
def test_the_gpu_script_runs_on_cpu_through_the_app(cv_folder_v3):
    """--app: the same parts through the whole app (bootstrap's services, restart.sh)."""
    done = subprocess.run(
        [sys.executable, "bench/cosyvoice_gpu.py", "--app", "--device", "cpu", "--folder",
         str(cv_folder_v3), "--requests", "3", "--levels", "1,2", "--rounds", "1"],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True,
        text=True, timeout=900)
    out = done.stdout
    assert done.returncode == 0, out[-3000:] + done.stderr[-3000:]
    assert "lifecycle on cpu, app" in out and "skipped: CUDA only" in out
    assert "after request 3: RSS" in out and "after unload: RSS" in out
    assert "| 2 | 2 |" in out
    assert "restart.sh: exit 0" in out and "no NVIDIA GPU here" in out
    assert out.rstrip().endswith("RESULT cosyvoice_gpu PASS")

"""bench/cosyvoice_gpu.py — the one-command GPU check of issue #26 — run the CPU way (tiny folder,
few requests), so that the script a GPU session runs cannot rot between GPU sessions: every
part runs, the CUDA-only ones say why they are skipped, and every bar passes on CPU."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.slow


def test_the_gpu_script_runs_on_cpu(cv_folder_v3):
    done = subprocess.run(
        [sys.executable, "bench/cosyvoice_gpu.py", "--device", "cpu", "--folder",
         str(cv_folder_v3), "--requests", "3", "--levels", "1,2", "--rounds", "1"],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True,
        text=True, timeout=900)
    out = done.stdout
    assert done.returncode == 0, out[-3000:] + done.stderr[-3000:]
    assert "CUDA-only parts" in out and "skipped: CUDA only" in out
    assert "after request 3: RSS" in out and "after unload: RSS" in out
    assert "| 2 | 2 |" in out  # concurrency 2: two requests, one row
    assert "restart.sh: exit 0" in out and "no NVIDIA GPU here" in out
    assert out.rstrip().endswith("RESULT cosyvoice_gpu PASS")

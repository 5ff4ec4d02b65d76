#!/usr/bin/env bash
# Set up everything the tests need, then run them:  bash test.sh [pytest args]
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$HERE"
bash run.sh --setup-only
# The reference implementation (test oracle) in its own venv, for the CosyVoice parity tests:
# made in the background (~18 s, most of it the check that the reference imports) while the
# steps below run; waited for before the tests.
bash tests/oracle/setup_oracle_env.sh &
oracle_setup=$!
# The browser tests drive the system Chromium (Playwright's own downloads need a network);
# gradio's streaming audio output (UI stream checkbox) needs ffmpeg + ffprobe.
if ! command -v chromium >/dev/null 2>&1 || ! command -v ffprobe >/dev/null 2>&1; then
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium ffmpeg
  else
    echo "test.sh: chromium is missing; install it (apt-get install chromium) as root" >&2
  fi
fi
PY="$HERE/.venv/bin/python"
# The dev requirements, and Ray Serve for the scale-out smoke test
# (tests/serving/test_ray_smoke.py), in one install run (one resolve instead of two).
bash run.sh --install requirements-dev.txt requirements-ray.txt
"$PY" -m ruff check .
# The project's own bytecode, once: where PYTHONDONTWRITEBYTECODE is set (this workplace sets
# it) Python reads .pyc files but never writes them, so every app, CLI and worker process
# would compile every project module it imports again.
"$PY" -m compileall -q -j 0 app.py cosyvoice tests bench >/dev/null
wait "$oracle_setup"
echo "[test.sh] set up in ${SECONDS} s"
# The suite runs two workers, their apps, command lines and browsers on the machine's cores
# at once. torch's OpenMP threads spin while they wait (libgomp's default), burning the
# cores the other processes need: with passive waiting, three files on 2 workers took 76 s
# instead of 118 s (71 instead of 132 CPU-s, 2 Zen 4 cores; bench/README.md). Only the tests
# run so: the app itself keeps the default (it runs alone; spinning keeps its latency).
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-PASSIVE}"
# Two worker processes, each taking whole files (a file's app and models start once per
# worker), the heaviest files first (tests/file_weights.txt, tests/conftest.py): much of the
# suite waits on app starts, subprocesses and the browser, so one process leaves a core idle;
# three were slower (README "Tests"). TEST_WORKERS=0 runs everything in this process; pytest
# arguments given to test.sh come last and win.
"$PY" -m pytest -n "${TEST_WORKERS:-2}" --dist loadfile --no-loadscope-reorder --durations=30 "$@"

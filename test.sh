#!/usr/bin/env bash
# Set up everything the tests need, then run them:  bash test.sh [pytest args]
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$HERE"
bash run.sh --setup-only
PY="$HERE/.venv/bin/python"
"$PY" -m pip install -q -r requirements-dev.txt
"$PY" -m ruff check .
"$PY" -m pytest "$@"

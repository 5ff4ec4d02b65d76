#!/usr/bin/env bash
# Make .venv-oracle at the repo root: the reference implementation's own imports, pinned in
# tests/oracle/requirements-oracle.txt, over the project venv's packages. Used only by the parity
# tests (tests/oracle/harness.py runs the oracle in a subprocess with this interpreter).
# Idempotent: a stamp holds the hash of the pins and of this script; a second run is a no-op.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
PROJECT_PY="$ROOT/.venv/bin/python"
ENV="$ROOT/.venv-oracle"
PINS="$ROOT/tests/oracle/requirements-oracle.txt"
STAMP="$ENV/.oracle-stamp"
# The reference lives outside the repo: shared/oracles/cosyvoice in a folder above, or
# $COSYVOICE_ORACLE. Without it the parity tests skip with a warning.
ORACLE_DIR="${COSYVOICE_ORACLE:-}"
if [ -z "$ORACLE_DIR" ]; then
  d="$ROOT"
  while [ "$d" != "/" ]; do
    if [ -d "$d/shared/oracles/cosyvoice/cosyvoice" ]; then ORACLE_DIR="$d/shared/oracles/cosyvoice"; break; fi
    d="$(dirname "$d")"
  done
elif [ ! -d "$ORACLE_DIR/cosyvoice" ]; then
  echo "setup_oracle_env.sh: COSYVOICE_ORACLE=$ORACLE_DIR holds no cosyvoice/ package" >&2
  exit 1
fi
if [ -z "$ORACLE_DIR" ]; then
  # Not an error even in CI: a clone with no shared/ beside it cannot run the parity tests,
  # and says so loudly; where the reference is present, a failure to build is an error.
  echo "setup_oracle_env.sh: WARNING: no shared/oracles/cosyvoice above $ROOT (set COSYVOICE_ORACLE); the CosyVoice parity tests will skip" >&2
  exit 0
fi
WANT="$(cat "$PINS" "${BASH_SOURCE[0]}" | sha256sum | cut -d' ' -f1)"
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANT" ] && [ -x "$ENV/bin/python" ]; then
  exit 0
fi
if [ ! -x "$PROJECT_PY" ]; then
  echo "setup_oracle_env.sh: $PROJECT_PY is missing; run 'bash run.sh --setup-only' first" >&2
  exit 1
fi
rm -rf "$ENV"
"$PROJECT_PY" -m venv --system-site-packages "$ENV"
# A venv made from a venv's interpreter sees the base interpreter's packages, not the venv's:
# a .pth line puts the project venv's site-packages after the oracle's own.
ORACLE_SITE="$("$ENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
"$PROJECT_PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' > "$ORACLE_SITE/project-venv.pth"
bash "$ROOT/deploy/pip_install.sh" "$ENV/bin/python" --no-deps -r "$PINS" 2>&1 \
  | grep -v "is ignored: it is neither a file nor a directory" || true
"$ENV/bin/python" -m pip show -q torchaudio >/dev/null  # fail here if the install did not happen
rm -rf "$ORACLE_SITE/torchaudio/lib"  # compiled for torch 2.11; without it torchaudio is pure Python
# Smoke test: the oracle's model modules import (stubs on the path as the harness puts them).
if ! out="$(cd / && PYTHONPATH="$ORACLE_DIR:$ROOT/tests/oracle/stubs" "$ENV/bin/python" -P -W ignore -c \
  'import cosyvoice.llm.llm, cosyvoice.flow.flow, cosyvoice.flow.DiT.dit, cosyvoice.hifigan.generator, cosyvoice.cli.frontend, torchaudio.compliance.kaldi' 2>&1)"; then
  echo "$out" >&2
  echo "setup_oracle_env.sh: the oracle does not import in $ENV" >&2
  exit 1
fi
echo "$WANT" > "$STAMP"

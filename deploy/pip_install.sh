#!/usr/bin/env bash
# pip_install.sh PYTHON ARGS...: `PYTHON -m pip install -q ARGS`, done by uv where the project
# venv has it (run.sh's setup installs it first): uv resolves, downloads and compiles in
# parallel, so a fresh machine's torch, requirements and weight packages took 49 s against
# pip's 96 s (2 cores, empty caches, bench/README.md). uv gets the indexes, find-links,
# constraints and certificate of pip's own configuration (`pip config list`, PIP_* variables
# included) and chooses across indexes as pip does. It compiles the bytecode as it installs,
# as pip does: where PYTHONDONTWRITEBYTECODE is set (this workplace sets it), a venv without
# .pyc files compiles every module it imports in every process (a CI run took 27 min 29 s
# instead of 24 min). Where uv is missing or fails, pip installs.
set -euo pipefail
PY="$1"; shift
UV="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/.venv/bin/uv"

if [ -x "$UV" ]; then
  config="$("$PY" -m pip config list 2>/dev/null || true)"
  args=()
  while read -r key values; do
    for value in $values; do
      if [ "$key" = constraint ]; then args+=(-c "$value"); else args+=("--$key" "$value"); fi
    done
  done < <(sed -n "s/^[^.]*\.\(index-url\|extra-index-url\|find-links\|constraint\)='\(.*\)'\$/\1 \2/p" \
             <<< "$config" | sort -u)
  cert="$(sed -n "s/^[^.]*\.cert='\(.*\)'\$/\1/p" <<< "$config" | head -1)"
  if SSL_CERT_FILE="${SSL_CERT_FILE:-$cert}" "$UV" pip install -q --compile-bytecode --python "$PY" \
      --index-strategy unsafe-best-match "${args[@]}" "$@"; then
    exit 0
  fi
  echo "pip_install.sh: uv could not install ($*); pip tries" >&2
fi
exec "$PY" -m pip install -q "$@"

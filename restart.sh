#!/usr/bin/env bash
# Restart CosyVoice WebUI. Minimal version until the lifecycle issue lands:
# stop by pidfile (SIGTERM, then SIGKILL after a deadline), then start with run.sh.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PIDFILE="${COSYVOICE_PIDFILE:-$HERE/run/app.pid}"
if [ -f "$PIDFILE" ]; then
  pid="$(tr -dc '0-9' < "$PIDFILE")"
  if [ -n "$pid" ] && tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -qF "$HERE/app.py"; then
    kill -TERM "$pid"
    for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
  fi
fi
exec bash "$HERE/run.sh" "$@"

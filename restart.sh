#!/usr/bin/env bash
# Restart CosyVoice WebUI: the product card's "pkill app.py, sleep while VRAM frees, clear
# outputs, relaunch with nohup", done so that it can only ever touch this install's app.
#
#   bash restart.sh [--keep-outputs] [--reason R] [-- APP ARGS]
#
# 1. find the app by its pidfile and check that the pid's command line runs this install's
#    app.py (fallback: a process running $HERE/app.py whose pidfile is ours; never a bare
#    "app.py" pattern that could hit another install)
# 2. SIGTERM (plus SIGCONT, so a stopped process can drain), wait for the drain, SIGKILL
#    after STOP_TIMEOUT
# 3. wait until NVML no longer lists the old pid on any GPU (GPU_FREE_TIMEOUT;
#    deploy/wait_gpu_free.py); without a GPU, a short fixed sleep (NO_GPU_SLEEP)
# 4. clear the cache dir and the outputs dir (KEEP_OUTPUTS=1 or --keep-outputs keeps the
#    generated audio)
# 5. relaunch through run.sh (nohup) with the old process's arguments (or APP ARGS after
#    --), and wait for /health/ready
# 6. append to <run dir>/restarts.log: start time, reason, old pid, seconds from SIGTERM
#    to the old process gone, and from then until the new one is ready (what a drain's
#    Retry-After learns from)
# Safe when nothing runs: it just starts the app. One restart at a time (a lock file).
# Exit status: 0 ready; 1 the new app did not come up; 2 the old app would not stop;
#              75 another restart is already running.
# Environment: COSYVOICE_PIDFILE, COSYVOICE_OUTPUTS_DIR, COSYVOICE_CACHE_DIR,
#   COSYVOICE_LOG_DIR, COSYVOICE_PORT, COSYVOICE_DRAIN_TIMEOUT_S (the app's settings; the
#   old process's own flags and COSYVOICE_* environment win over defaults), KEEP_OUTPUTS,
#   STOP_TIMEOUT (s, drain timeout + 15), GPU_FREE_TIMEOUT (s, 60), NO_GPU_SLEEP (s, 0.5),
#   READY_TIMEOUT (s, 300, used by run.sh). Everything is logged to <log dir>/restart.log.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
APP="$HERE/app.py"
PY="$HERE/.venv/bin/python"
[ -x "$PY" ] || PY="$(command -v python3)"
DEFAULT_PIDFILE="$HERE/run/app.pid"
PIDFILE="$(realpath -m "${COSYVOICE_PIDFILE:-$DEFAULT_PIDFILE}")"
RUN_DIR="$(dirname "$PIDFILE")"
KEEP="${KEEP_OUTPUTS:-0}"
REASON="manual"
EXPLICIT_ARGS=0
ARGS=()

while [ $# -gt 0 ]; do
  case "$1" in
    --keep-outputs) KEEP=1 ;;
    --reason) REASON="${2:?--reason needs a value}"; shift ;;
    --reason=*) REASON="${1#--reason=}" ;;
    --) shift; ARGS=("$@"); EXPLICIT_ARGS=1; break ;;
    -h|--help) sed -n '2,28p' "$0"; exit 0 ;;
    *) printf 'restart.sh: unknown option %s (app arguments go after --)\n' "$1" >&2; exit 64 ;;
  esac
  shift
done

# ---- which process is ours ------------------------------------------------------------

proc_state() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1; }

# 0 when pid runs this install's app.py (by absolute path, or relative from $HERE) and is
# not a zombie.
is_our_app() {
  local pid="$1" arg cwd
  [ -r "/proc/$pid/cmdline" ] || return 1
  [ "$(proc_state "$pid")" != "Z" ] || return 1
  cwd="$(readlink "/proc/$pid/cwd" 2>/dev/null || true)"
  while IFS= read -r -d '' arg; do
    [ "$arg" = "$APP" ] && return 0
    case "$arg" in app.py|./app.py) [ "$cwd" = "$HERE" ] && return 0 ;; esac
  done < "/proc/$pid/cmdline"
  return 1
}

# The arguments after app.py on pid's command line, NUL-separated.
app_args_of() {
  local pid="$1" arg found=0
  while IFS= read -r -d '' arg; do
    if [ "$found" = 1 ]; then printf '%s\0' "$arg"
    elif [ "$arg" = "$APP" ] || [ "$arg" = app.py ] || [ "$arg" = ./app.py ]; then found=1
    fi
  done < "/proc/$pid/cmdline"
}

# Value of --NAME in the given argument list (last one wins, like argparse).
arg_value() {
  local name="$1" prev="" a value=""
  shift
  for a in "$@"; do
    [ "$prev" = "--$name" ] && value="$a"
    case "$a" in "--$name="*) value="${a#--"$name"=}" ;; esac
    prev="$a"
  done
  printf '%s' "$value"
}

# The pidfile a running app uses: its --pidfile flag, else its environment, else default.
pidfile_of() {
  local pid="$1" value
  local args=()
  mapfile -d '' args < <(app_args_of "$pid")
  value="$(arg_value pidfile "${args[@]}")"
  if [ -z "$value" ]; then
    value="$(tr '\0' '\n' < "/proc/$pid/environ" 2>/dev/null \
             | sed -n 's/^COSYVOICE_PIDFILE=//p' | tail -n 1)"
  fi
  (cd "$(readlink "/proc/$pid/cwd" 2>/dev/null || echo "$HERE")" \
    && realpath -m "${value:-$DEFAULT_PIDFILE}")
}

find_pid() {
  local pid
  if [ -f "$PIDFILE" ]; then
    pid="$(tr -dc '0-9' < "$PIDFILE")"
    if [ -n "$pid" ] && is_our_app "$pid"; then echo "$pid"; return 0; fi
  fi
  # Pidfile missing or stale: look for this install's app.py that uses our pidfile.
  local pattern; pattern="$(printf '%s' "$APP" | sed 's/[][\.*^$+?(){}|]/\\&/g')"
  for pid in $(pgrep -f -- "$pattern( |$)" || true); do
    is_our_app "$pid" || continue
    [ "$(pidfile_of "$pid")" = "$PIDFILE" ] && { echo "$pid"; return 0; }
  done
  return 1
}

OLD_PID="$(find_pid || true)"
OLD_ARGS=()
if [ -n "$OLD_PID" ]; then
  mapfile -d '' OLD_ARGS < <(app_args_of "$OLD_PID")
  # Start the new process in the old one's COSYVOICE_* environment (ours wins).
  while IFS= read -r -d '' kv; do
    case "$kv" in
      COSYVOICE_*=*) name="${kv%%=*}"; [ -n "${!name+x}" ] || export "$kv" ;;
    esac
  done < "/proc/$OLD_PID/environ" 2>/dev/null || true
fi
[ "$EXPLICIT_ARGS" = 1 ] || ARGS=("${OLD_ARGS[@]}")

setting() {  # NAME ENVVAR DEFAULT: flag in ARGS > environment > default
  local v; v="$(arg_value "$1" "${ARGS[@]}")"
  [ -n "$v" ] || v="${!2:-$3}"
  printf '%s' "$v"
}
OUTPUTS_DIR="$(setting outputs-dir COSYVOICE_OUTPUTS_DIR "$HERE/outputs")"
CACHE_DIR="$(setting cache-dir COSYVOICE_CACHE_DIR "$HERE/cache")"
LOG_DIR="$(setting log-dir COSYVOICE_LOG_DIR "$HERE/logs")"
DRAIN_TIMEOUT="$(setting drain-timeout-s COSYVOICE_DRAIN_TIMEOUT_S 30)"
STOP_TIMEOUT="${STOP_TIMEOUT:-$(awk -v d="$DRAIN_TIMEOUT" 'BEGIN { printf "%d", d + 15 }')}"
GPU_FREE_TIMEOUT="${GPU_FREE_TIMEOUT:-60}"
NO_GPU_SLEEP="${NO_GPU_SLEEP:-0.5}"

# ---- logging: everything to restart.log (and to the terminal when there is one) ----------

mkdir -p "$LOG_DIR" "$RUN_DIR"
LOG="$(realpath -m "$LOG_DIR/restart.log")"
if [ "$(readlink -f "/proc/$$/fd/1" 2>/dev/null)" != "$LOG" ]; then
  exec > >(tee -a "$LOG") 2>&1
fi
log() { printf '[restart.sh %s] %s\n' "$(date '+%F %T')" "$*"; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }  # seconds since $1

exec 9>"$RUN_DIR/restart.lock"
if ! flock -n 9; then
  log "another restart is already running (lock $RUN_DIR/restart.lock); leaving it to finish"
  exit 75
fi

# ---- stop ---------------------------------------------------------------------------------

wait_gone() {  # pid seconds → 0 once the process has exited (zombies count as gone)
  local pid="$1" limit="$2" t0=$SECONDS
  while is_our_app "$pid"; do
    (( SECONDS - t0 >= limit )) && return 1
    sleep 0.2
  done
}

stop_app() {
  local pid="$1"
  log "stopping pid $pid: SIGTERM, drain (stop deadline ${STOP_TIMEOUT} s)"
  T_TERM="$(now)"
  kill -TERM "$pid" 2>/dev/null || true
  kill -CONT "$pid" 2>/dev/null || true  # a stopped (SIGSTOP) process must run to drain
  if wait_gone "$pid" "$STOP_TIMEOUT"; then
    log "pid $pid exited after $(( SECONDS - T0 )) s"
    return 0
  fi
  log "pid $pid still running after ${STOP_TIMEOUT} s: SIGKILL"
  kill -KILL "$pid" 2>/dev/null || true
  wait_gone "$pid" 10
}

wait_gpu_free() {
  local pid="$1" rc=0
  "$PY" "$HERE/deploy/wait_gpu_free.py" "$pid" "$GPU_FREE_TIMEOUT" || rc=$?
  case "$rc" in
    0) ;;
    3) log "no NVIDIA GPU here: sleeping ${NO_GPU_SLEEP} s instead of watching GPU memory"
       sleep "$NO_GPU_SLEEP" ;;
    *) log "warning: GPU memory of pid $pid not released in time; starting anyway" ;;
  esac
}

# ---- clear --------------------------------------------------------------------------------

clear_dir() {  # DIR WHAT: delete DIR's contents (not .gitkeep / README.md), keep DIR
  local dir="$1" what="$2" real n
  [ -d "$dir" ] || return 0
  real="$(realpath "$dir")"
  case "$real" in
    /|/home|/root|/tmp|/usr|/etc|/var|"$HOME"|"$HERE")
      log "refusing to clear $what: $real is not a data folder"; return 0 ;;
  esac
  n="$(find "$real" -mindepth 1 -maxdepth 1 ! -name .gitkeep ! -name README.md | wc -l)"
  find "$real" -mindepth 1 -maxdepth 1 ! -name .gitkeep ! -name README.md \
    -exec rm -rf -- {} +
  log "cleared $what $real ($n entries)"
}

# ---- main ---------------------------------------------------------------------------------

T0=$SECONDS
T_START="$(date +%s)"
STOP_S=-
log "restart ($REASON) for $APP, pidfile $PIDFILE"
if [ -n "$OLD_PID" ]; then
  if ! stop_app "$OLD_PID"; then
    log "error: pid $OLD_PID did not exit even after SIGKILL; not starting a second copy"
    exit 2
  fi
  STOP_S="$(since "$T_TERM")"
fi
T_GONE="$(now)"  # from here on, nothing answers until the new process is ready
if [ -n "$OLD_PID" ]; then
  wait_gpu_free "$OLD_PID"
else
  log "the app is not running; starting it"
fi

clear_dir "$CACHE_DIR" "cache"
if [ "$KEEP" = 1 ]; then
  log "keeping generated audio in $OUTPUTS_DIR"
else
  clear_dir "$OUTPUTS_DIR" "outputs"
fi

export COSYVOICE_PIDFILE="$PIDFILE" COSYVOICE_LOG_DIR="$LOG_DIR"
log "starting: run.sh -- ${ARGS[*]}"
rc=0
bash "$HERE/run.sh" -- "${ARGS[@]}" 9>&- || rc=$?
RELAUNCH_S=-
[ "$rc" != 0 ] || RELAUNCH_S="$(since "$T_GONE")"
# One line per restart (cosyvoice/lifecycle/restarts.py reads it): when, why, the old pid,
# SIGTERM → gone, gone → new ready. A drain's Retry-After learns from the last ones.
printf '%s %s %s %s %s\n' "$T_START" "$REASON" "${OLD_PID:--}" "$STOP_S" "$RELAUNCH_S" \
  >> "$RUN_DIR/restarts.log"
exec 9>&-  # release the restart lock: the new app may be restarted again from here on
if [ "$rc" != 0 ]; then
  log "error: the new app did not become ready; see $LOG_DIR/app.log and $LOG_DIR/cosyvoice.log"
  exit 1
fi
NEW_PID="$(tr -dc '0-9' < "$PIDFILE" 2>/dev/null || true)"
log "restart done in $(( SECONDS - T0 )) s (stop ${STOP_S} s, then ${RELAUNCH_S} s to ready):" \
    "pid ${OLD_PID:-none} -> ${NEW_PID:-?}, ready"

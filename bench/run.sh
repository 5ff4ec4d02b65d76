#!/usr/bin/env bash
# Run the benchmarks someone runs again (speed, memory, lifecycle, parity) and the evaluation
# harness's smoke run, and print one table of figures vs targets.
#
#   bash bench/run.sh [--quick] [--only vocoder_parity,load,eval,...]
#
# Each script present in bench/ runs once, under `nice -n 5`, with its output kept in
# bench/out/run/<name>.log (exit status in <name>.rc); a missing script is skipped with a
# note. `eval` is `python -m bench eval --quick` (its full run takes long: run it alone;
# bench/README.md). bench/collect.py then reads every `RESULT key=value` line and prints the
# table (metric, value, target, PASS/FAIL) with the date, commit and machine; it is also
# saved as bench/out/run/table.md. --quick passes small run counts (figures indicative only).
# Exit status: 0 when every row passes and every script ran.
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(dirname "$HERE")"
PY="${PYTHON:-$ROOT/.venv/bin/python}"
OUT="$HERE/out/run"
SCRIPTS=(vocoder_parity vocoder_int8 vocoder_memory app_rss lifecycle load streaming ttfb eval)
QUICK=0
ONLY=""
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) QUICK=1 ;;
    --only) ONLY="$2"; shift ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "bench/run.sh: unknown argument $1 (use --quick, --only a,b)" >&2; exit 2 ;;
  esac
  shift
done

# The prompts (bench/prompts.py) and the harness's cloning cases (bench/heldout.py) read real
# and synthetic voices from these Debian packages; without them those are skipped (and the
# figures cover fewer voices).
BENCH_DEBS=(alsa-utils asterisk-core-sounds-en-wav festival festvox-kallpc16k festvox-kdlpc16k
            festvox-us-slt-hts festvox-italp16k festvox-ca-ona-hts)
missing=()
for deb in "${BENCH_DEBS[@]}"; do
  dpkg -s "$deb" >/dev/null 2>&1 || missing+=("$deb")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "bench/run.sh: installing ${missing[*]} (prompt voices)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" \
      >/dev/null 2>&1 || { apt-get update >/dev/null 2>&1 && \
      DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" \
      >/dev/null 2>&1; } || echo "bench/run.sh: apt-get failed; those prompts will be skipped" >&2
  else
    echo "bench/run.sh: missing ${missing[*]}; as root: apt-get install ${missing[*]}" >&2
  fi
fi

quick_args() {  # small run counts per script; scripts with their own --quick get it
  case "$1" in
    ttfb) echo "--runs 1" ;;
    vocoder_parity) echo "--reps 2 --seconds 2" ;;
    vocoder_int8) echo "--reps 1" ;;
    vocoder_memory) echo "--requests 8" ;;
    app_rss) echo "--requests 4" ;;
    lifecycle) echo "--requests 20 --warmup 2 --restarts 1" ;;
    load) echo "--clients 4 --requests 3" ;;
    *) grep -q -- '"--quick"' "$HERE/$1.py" && echo "--quick" ;;
  esac
}

command_of() {  # what runs for a name: bench/<name>.py, or the harness
  if [ "$1" = eval ]; then echo "-m bench eval --quick"; else echo "bench/$1.py"; fi
}

mkdir -p "$OUT"
rm -f "$OUT"/*.log "$OUT"/*.rc
LOGS=()
SKIPPED=()
for name in "${SCRIPTS[@]}"; do
  if [ -n "$ONLY" ] && [[ ",$ONLY," != *",$name,"* ]]; then continue; fi
  if [ "$name" != eval ] && [ ! -f "$HERE/$name.py" ]; then
    echo "[bench] $name: bench/$name.py not present, skipped"
    SKIPPED+=("$name")
    continue
  fi
  args=""
  [ "$QUICK" = 1 ] && [ "$name" != eval ] && args="$(quick_args "$name")"
  echo "[bench] $name ${args:+($args)} ..."
  t0=$(date +%s)
  # shellcheck disable=SC2086,SC2046  # args and the command are word lists on purpose
  (cd "$ROOT" && PYTHONPATH="$ROOT" nice -n 5 "$PY" $(command_of "$name") $args) \
    >"$OUT/$name.log" 2>&1
  echo $? >"$OUT/$name.rc"
  echo "[bench] $name: exit $(cat "$OUT/$name.rc") in $(( $(date +%s) - t0 )) s; log $OUT/$name.log"
  LOGS+=("$OUT/$name.log")
done
echo
skipped="$(IFS=,; echo "${SKIPPED[*]}")"
quick_flag=()
[ "$QUICK" = 1 ] && quick_flag=(--quick)
"$PY" "$HERE/collect.py" "${quick_flag[@]}" --skipped "$skipped" "${LOGS[@]}" | tee "$OUT/table.md"
exit "${PIPESTATUS[0]}"

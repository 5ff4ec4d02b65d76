#!/usr/bin/env bash
# Issue #26's GPU check on a lent GPU machine, in one command (bench/README.md):
#
#   bash bench/device_wheels.sh                                   # here, once: fills .whl/
#   run(command="bash bench/device_gpu.sh", carry=[".whl"], timeout_s=600)   # the device tool
#
# Installs the carried wheels into /tmp/site, prints the machine and library versions, and
# runs bench/cosyvoice_gpu.py standalone on CUDA (real-size random CosyVoice3 folder made
# there; float32 and float16; memory, OOM, concurrency 1/2/4, restart.sh's GPU wait), with
# its output tee'd to $OUT/gpu.log (it comes back with the reply). Extra arguments go to
# cosyvoice_gpu.py. Stops it after BENCH_TIMEOUT_S (540) so that the log still comes back.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
LOG="${OUT:-/tmp}/gpu.log"
if ! ls .whl/*.whl >/dev/null 2>&1; then
  echo "device_gpu.sh: no wheels in .whl/: run bash bench/device_wheels.sh first and carry .whl" \
    | tee "$LOG"
  exit 2
fi
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl || exit 2
export PYTHONPATH="/tmp/site:$PWD" PYTHONUNBUFFERED=1
{
  echo "# $(date -u '+%F %T') UTC on $(hostname)"
  nvidia-smi --query-gpu=name,memory.used,memory.total,driver_version --format=csv
  python3 -c 'import sys, torch, transformers, tokenizers, onnxruntime, numpy, librosa
print("python", sys.version.split()[0], "| torch", torch.__version__, "| cuda",
      torch.cuda.is_available(), torch.version.cuda, "| transformers", transformers.__version__,
      "| tokenizers", tokenizers.__version__, "| onnxruntime", onnxruntime.__version__,
      "| numpy", numpy.__version__, "| librosa", librosa.__version__)'
} 2>&1 | tee "$LOG"
timeout --signal=INT --kill-after=20 "${BENCH_TIMEOUT_S:-540}" \
  python3 bench/cosyvoice_gpu.py --device cuda "$@" 2>&1 | tee -a "$LOG"
rc="${PIPESTATUS[0]}"
echo "device_gpu.sh: bench/cosyvoice_gpu.py exit $rc" | tee -a "$LOG"
exit "$rc"

#!/usr/bin/env bash
# The wheels bench/cosyvoice_gpu.py's standalone mode needs on a lent GPU machine, into .whl/.
#
#   bash bench/device_wheels.sh        # here, in the repo the device tool sends; then
#   run(command="bash bench/device_gpu.sh", carry=[".whl"])     # see bench/README.md
#
# The device image (/work/.library/device/KINDS.md) has python3 3.12 with torch, transformers,
# tokenizers, onnxruntime, numpy, scipy, numba, joblib, msgpack, lazy-loader, pyyaml, psutil,
# nvidia-ml-py ... but nothing can be fetched there. The standalone mode's import closure
# (sys.modules after `bench/cosyvoice_gpu.py --device cpu --size tiny`, docs/cosyvoice-runtime.md)
# lacks exactly these there: soundfile (+ cffi) and soxr (cosyvoice.audio.io), librosa (+ pooch,
# platformdirs, decorator; cosyvoice.runtime.features and the frontend), cn2an (+ proces; the
# Mandarin normalizer the text frontend imports). Versions: requirements.txt's pins, else the
# ones .venv runs. py3.12 manylinux x86-64 wheels, no dependencies resolved (--no-deps).
# Fails when they come to more than LIMIT_MB (60; a device call carries 64 MiB in all).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
LIMIT_MB="${LIMIT_MB:-60}"
WHEELS=(soundfile==0.14.0 cffi==2.1.1 soxr==1.1.0 librosa==0.11.0 pooch==1.9.0
        platformdirs==4.14.9 decorator==5.3.2 cn2an==0.5.24 proces==0.1.7)
PLATFORMS=(--platform manylinux1_x86_64 --platform manylinux2014_x86_64)
for n in $(seq 17 39); do PLATFORMS+=(--platform "manylinux_2_${n}_x86_64"); done

exclude="$(git rev-parse --git-common-dir)/info/exclude"
mkdir -p "$(dirname "$exclude")"
grep -qxF '/.whl/' "$exclude" 2>/dev/null || echo '/.whl/' >> "$exclude"  # never committed
rm -rf .whl
mkdir .whl
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
  --implementation cp "${PLATFORMS[@]}" -d .whl "${WHEELS[@]}"
ls -l .whl
bytes="$(du -cb .whl/*.whl | tail -n 1 | cut -f1)"
mb="$(awk -v b="$bytes" 'BEGIN { printf "%.1f", b / 1048576 }')"
echo "device wheels: $(ls .whl | wc -l) files, ${mb} MiB in .whl (limit ${LIMIT_MB} MiB)"
if awk -v b="$bytes" -v l="$LIMIT_MB" 'BEGIN { exit !(b > l * 1048576) }'; then
  echo "device_wheels.sh: ${mb} MiB is over ${LIMIT_MB} MiB: a device call carries 64 MiB" >&2
  exit 1
fi

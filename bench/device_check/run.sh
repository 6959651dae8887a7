#!/usr/bin/env bash
# Device check for issues 4, 10, 11 and 12, one call on a lent GPU machine: the gpu-marked
# tests, then check.py's parts (bench/device_check/check.py says what each measures):
#   fingerprint  CPU/GPU parity on >= 100k random and real documents (str, UTF-8, batches),
#                GPU pair verification equal to the CPU's (issue 10), a fair CPU baseline,
#                device-resident and end-to-end benchmarks at 1M documents, verified pairs per
#                second (issues 4, 10 and 12; CHECKS=fingerprint is sized to finish within 5
#                minutes on an H200 with cold compiles: pytest <= 130 s, check.py <= 160 s; never
#                run on a GPU yet: both limits are estimates) -> device_check.json
#   join         the exact radius join at 1M and 10M codes (128-bit radius 18, 64-bit radius 3),
#                kNN of 10k queries against 10M codes, the 1M pair sets compared with the CPU
#                join (issue 11; never run on a GPU yet: its time is a guess, limits below)
#                -> device_check_join.json
# CHECKS picks the parts (default: both). Each JSON is rewritten after every section, with each
# failing section's error recorded, so a run cut short still leaves the finished sections.
# Commit the JSON under bench/results/ with the machine named (e.g. device_check_join_h200.json).
#
# Here first: bash bench/device_check/prepare.sh
# Then the device tool: run(command="CHECKS=join bash bench/device_check/run.sh",
#                           carry=[".whl", ".corpus"], timeout_s=420)
#                   or run(command="CHECKS=fingerprint bash bench/device_check/run.sh",
#                           carry=[".whl", ".corpus"], timeout_s=330)
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-bench/results/tmp}"
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
# compile caches in a folder that is certainly writable (NVRTC cubins, Numba's compiled loops)
CACHES="$(mktemp -d /tmp/gsh-caches.XXXXXX)"
export CUPY_CACHE_DIR="$CACHES/cupy" NUMBA_CACHE_DIR="$CACHES/numba"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH="/tmp/site:$PWD"
# versions first, so that an import failure below is explained by the first lines of the log
python3 - <<'PY' 2>&1 | tee "$OUT/versions.txt"
import importlib
for name in ("numpy", "numba", "scipy", "faiss", "cupy", "pyarrow"):
    try:
        print(name, importlib.import_module(name).__version__)
    except Exception as error:
        print(name, "import failed:", type(error).__name__, error)
try:
    import cupy
    print("nvrtc", cupy.cuda.nvrtc.getVersion(), "cuda runtime", cupy.cuda.runtime.runtimeGetVersion())
except Exception as error:
    print("nvrtc unknown:", type(error).__name__, error)
PY
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem \
    --format=csv > "$OUT/nvidia-smi.csv" 2>&1
CHECKS="${CHECKS:-fingerprint join}"
timeout 130 python3 -m pytest -m gpu tests/gpu/test_parity.py tests/gpu/test_join_device.py \
    tests/gpu/test_verify_device.py -q -p no:cacheprovider 2>&1 | tee "$OUT/pytest_gpu.log"
tests_rc=${PIPESTATUS[0]}
check_rc=0
if [[ " $CHECKS " == *" fingerprint "* ]]; then
    timeout 160 python3 bench/device_check/check.py --only fingerprint \
        --corpus .corpus/pypi_summaries.txt.gz --out "$OUT" --tests-rc "$tests_rc" 2>&1 \
        | tee "$OUT/check.log"
    check_rc=$((check_rc | PIPESTATUS[0]))
fi
if [[ " $CHECKS " == *" join "* ]]; then
    timeout 300 python3 bench/device_check/check.py --only join --json-name \
        device_check_join.json --out "$OUT" --tests-rc "$tests_rc" 2>&1 | tee "$OUT/check_join.log"
    check_rc=$((check_rc | PIPESTATUS[0]))
fi
echo "gpu tests exit code ${tests_rc}, device check exit code ${check_rc}"
[ "$tests_rc" -eq 0 ] && [ "$check_rc" -eq 0 ]

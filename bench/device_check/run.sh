#!/usr/bin/env bash
# Device check for issue 4, one call on a lent GPU machine (under 5 minutes on an H200):
# the gpu-marked tests, CPU/GPU parity on >= 100k random and real documents, and benchmarks
# at 1M documents (bench/device_check/check.py says which). Results go to $OUT: commit
# device_check.json under bench/results/ with the machine named (e.g. device_check_h200.json).
#
# Here first: bash bench/device_check/prepare.sh
# Then the device tool: run(command="bash bench/device_check/run.sh", carry=[".whl", ".corpus"],
#                           timeout_s=420)
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-bench/results/tmp}"
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH="/tmp/site:$PWD"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem \
    --format=csv > "$OUT/nvidia-smi.csv" 2>&1
timeout 110 python3 -m pytest -m gpu tests/test_parity.py -q -p no:cacheprovider 2>&1 \
    | tee "$OUT/pytest_gpu.log"
tests_rc=${PIPESTATUS[0]}
timeout 170 python3 bench/device_check/check.py --corpus .corpus/pypi_summaries.txt.gz \
    --out "$OUT" --tests-rc "$tests_rc" 2>&1 | tee "$OUT/check.log"
check_rc=${PIPESTATUS[0]}
echo "gpu tests exit code ${tests_rc}, device check exit code ${check_rc}"
[ "$tests_rc" -eq 0 ] && [ "$check_rc" -eq 0 ]

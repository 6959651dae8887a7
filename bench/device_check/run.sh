#!/usr/bin/env bash
# The device check in one command (README.md beside this file gives the device tool's call):
# pip installs the carried wheels (at most 15 s), then check.py runs its groups in order, each
# under its cap, within 465 s (its own budget 460 s): 480 s in all. Results: $OUT/device_check.json (rewritten after
# every section), $OUT/check.log (this command's whole output; its first line names a missing
# carry or a failed import), $OUT/pytest_gpu.log.
#
#   CHECKS=dry   a dry run on a machine without a GPU, at small sizes (tests/test_device_check.py)
#   PYTHON=path  the interpreter (default python3)
#   CORPUS=path  the corpus (default .corpus/pypi_summaries.txt.gz, staged by prepare.sh)
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-bench/results/tmp}"
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
python="${PYTHON:-python3}"
dry=()
if [ "${CHECKS:-all}" = dry ]; then
    dry=(--dry-run)
else  # a fresh machine: compile caches in a folder that is certainly writable
    caches="$(mktemp -d /tmp/gsh-caches.XXXXXX)"
    export CUPY_CACHE_DIR="$caches/cupy" NUMBA_CACHE_DIR="$caches/numba"
fi
site="$(mktemp -d /tmp/gsh-site.XXXXXX)"
export PIP_LOG="$site.pip.log" PIP_RC="no wheel carried in .whl"
: > "$PIP_LOG"
trap 'rm -rf "$site" "$PIP_LOG"' EXIT
if compgen -G ".whl/*.whl" > /dev/null; then  # check.py's first line reports the outcome
    timeout 15 "$python" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
        --upgrade --target "$site" .whl/*.whl > "$PIP_LOG" 2>&1
    export PIP_RC=$?
fi
export PYTHONPATH="$site:$PWD${PYTHONPATH:+:$PYTHONPATH}"
timeout -s KILL 465 "$python" bench/device_check/check.py --out "$OUT" \
    --corpus "${CORPUS:-.corpus/pypi_summaries.txt.gz}" "${dry[@]}" 2>&1 | tee "$OUT/check.log"
exit "${PIPESTATUS[0]}"

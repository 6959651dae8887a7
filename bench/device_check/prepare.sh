#!/usr/bin/env bash
# Stage what run.sh needs on the device machine, which reaches no registry and no ../shared:
# the faiss-cpu and orjson wheels (for the device image's Python 3.12) in .whl/, the corpus in
# .corpus/ and the compiled CPU loops built for Python 3.12 beside this interpreter's in
# gpusimhash/_cpu/, all ignored by git. Run here, in the repository, before launching run.sh on the device.
#   usage: bash bench/device_check/prepare.sh [path/to/pypi_summaries.txt.gz]
set -euo pipefail
cd "$(dirname "$0")/../.."
corpus="${1:-../shared/data/pypi_summaries.txt.gz}"
# pinned (importing faiss here to ask its version has failed before); FAISS_VERSION and
# ORJSON_VERSION override
faiss_version="${FAISS_VERSION:-1.15.1}"
orjson_version="${ORJSON_VERSION:-3.13.0}"
mkdir -p .whl .corpus
rm -f .whl/faiss_cpu-*.whl .whl/orjson-*.whl
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -d .whl "faiss-cpu==${faiss_version}" "orjson==${orjson_version}"
cp "$corpus" .corpus/pypi_summaries.txt.gz
# the compiled CPU loops for the device's Python (PY312 names an interpreter of that version)
py312="${PY312:-python3.12}"
builder="$(mktemp -d /tmp/gsh-build312.XXXXXX)"
trap 'rm -rf "$builder"' EXIT
"$py312" -m venv "$builder"
"$builder/bin/python" -m pip install -q "cython>=3.0" "setuptools>=68" "hatchling>=1.24"
"$builder/bin/python" -c "import hatch_build; hatch_build.build_loops('.')"
ls gpusimhash/_cpu/*.cpython-312-*.so > /dev/null
du -sh .whl .corpus

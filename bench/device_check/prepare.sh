#!/usr/bin/env bash
# Stage what run.sh needs on the device machine, which reaches no registry and no ../shared:
# the faiss-cpu wheel (for the device image's Python 3.12) in .whl/ and the corpus in .corpus/,
# both ignored by git. Run here, in the repository, before launching run.sh on the device.
#   usage: bash bench/device_check/prepare.sh [path/to/pypi_summaries.txt.gz]
set -euo pipefail
cd "$(dirname "$0")/../.."
corpus="${1:-../shared/data/pypi_summaries.txt.gz}"
# pinned (importing faiss here to ask its version has failed before); FAISS_VERSION overrides
faiss_version="${FAISS_VERSION:-1.15.1}"
mkdir -p .whl .corpus
rm -f .whl/faiss_cpu-*.whl
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -d .whl "faiss-cpu==${faiss_version}"
cp "$corpus" .corpus/pypi_summaries.txt.gz
du -sh .whl .corpus

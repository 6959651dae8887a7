"""Device check: CPU/GPU parity on >= 100k random and real documents, and 1M-document benchmarks.

Run by run.sh on a machine with a CUDA device (``--cpu-only`` runs the CPU half anywhere, to
check the script itself). Runs in sections; the JSON (``--json-name`` in ``--out``) is rewritten
after every section, and a section that raises is recorded under ``errors`` (its message and
traceback) while the next one runs. Prints a table last.

Figures (all measured in this one run, on this machine), ``--only fingerprint`` (issues 12 and
10; fingerprints.py and verification.py say how): GPU pair verification equal to the CPU's bit
for bit (first), a fair CPU baseline (warmed single-threaded workers, one per core, and one
process with all cores), bit-for-bit parity, the accumulation kernels against the copy
bandwidth, device-resident UTF-8 to codes on PyPI-size and 1 KB documents, end to end from
host UTF-8, str and CSR input with the GPU/CPU ratios, and verified pairs per second against
the CPU loop on all cores (last).

``--only join`` (issue 11; joins.py says how): the exact radius join on the device at 128-bit
radius 18 and 64-bit radius 3 over ``--join-medium`` (1M) and ``--join-codes`` (10M) clustered
codes, kNN of 10k queries (k = 10) against ``--join-codes`` codes checked against FAISS, and the
1M joins' pair sets compared with the CPU join's."""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from gpusimhash.features import FeatureBatch

ALPHABET = list("abcdefghijklmnop ABCDEF  .,_-\n\t0123") + list("éİßΣς日本𝐀😀\u00a0\u2028")


def random_texts(rng: np.random.Generator, n_docs: int) -> list[str]:
    """Random unicode texts (astral characters, empty documents, a few long ones)."""
    lengths = rng.integers(0, 80, n_docs)
    lengths[rng.random(n_docs) < 0.001] = 20_000
    pool = rng.choice(ALPHABET, size=int(lengths.sum()))
    ends = np.cumsum(lengths)
    return ["".join(pool[end - length : end]) for end, length in zip(ends, lengths, strict=True)]


def random_batch(rng: np.random.Generator, n_docs: int, weighted: bool) -> FeatureBatch:
    """Random feature batch (zipf-ish states, 0 to 40 entries per document)."""
    offsets = np.zeros(n_docs + 1, dtype=np.int64)
    np.cumsum(rng.integers(0, 41, n_docs), out=offsets[1:])
    states = (rng.zipf(1.3, offsets[-1]) % 2**32).astype(np.uint32) * np.uint32(2654435761)
    weights = rng.normal(size=offsets[-1]) if weighted else None
    return FeatureBatch(states, offsets, weights)


def load_corpus(path: Path, n_docs: int) -> list[str]:
    """The first ``n_docs`` lines of the corpus, repeated if it is shorter."""
    with gzip.open(path, "rt", encoding="utf-8") as stream:
        lines = stream.read().splitlines()
    repeats = -(-n_docs // len(lines))
    return (lines * repeats)[:n_docs]


def synthetic_csr(rng: np.random.Generator, n_docs: int, n_features: int):
    """A CSR matrix with about 20 non-zeros per row and its vocabulary."""
    per_row = rng.integers(1, 40, n_docs)
    indptr = np.zeros(n_docs + 1, dtype=np.int64)
    np.cumsum(per_row, out=indptr[1:])
    indices = (rng.zipf(1.2, indptr[-1]) % n_features).astype(np.int32)
    data = rng.random(indptr[-1]) * 5
    matrix = sp.csr_matrix((data, indices, indptr), shape=(n_docs, n_features))
    matrix.sum_duplicates()
    return matrix, [f"feature{i}" for i in range(n_features)]


class Report:
    """The check's JSON, rewritten after every section; a failing section is recorded."""

    def __init__(self, path: Path, result: dict) -> None:
        self.path = path
        self.result = result
        self.result.setdefault("errors", {})
        self.result.setdefault("section_seconds", {})
        self.write()

    def write(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_suffix(".tmp")
        temporary.write_text(json.dumps(self.result, indent=2, default=str) + "\n")
        temporary.replace(self.path)

    def section(self, name: str, function: Callable[[], Any]) -> Any:
        """Run one section, store its value under ``name`` (or its error), write the JSON."""
        print(f"--- section {name}", flush=True)
        start = time.perf_counter()
        value = None
        try:
            value = function()
            self.result[name] = value
        except Exception as error:  # noqa: BLE001 - recorded; the next section still runs
            self.result["errors"][name] = {
                "error": f"{type(error).__name__}: {error}",
                "traceback": traceback.format_exc(limit=8),
            }
            print(f"section {name} failed: {type(error).__name__}: {error}", flush=True)
        self.result["section_seconds"][name] = time.perf_counter() - start
        self.write()
        return value


def fingerprint_sections(args: argparse.Namespace, report: Report) -> None:
    """The fingerprinting parity and benchmarks (issues 4 and 12), fingerprints.py's sections."""
    import fingerprints
    import verification

    rng = np.random.default_rng(0)
    real = load_corpus(args.corpus, args.docs)
    report.result["docs"] = args.docs
    verify_rng = np.random.default_rng(10)
    if not args.cpu_only:  # cheap and about correctness: first
        report.section(
            "verify_parity", lambda: verification.parity(real[: args.parity_docs], verify_rng)
        )
    csr, vocabulary = synthetic_csr(rng, args.docs, 200_000)
    for name, function in fingerprints.sections(
        real,
        csr,
        vocabulary,
        workers=args.workers,
        parity_docs=args.parity_docs,
        cpu_only=args.cpu_only,
        random_texts=lambda n: random_texts(rng, n),
        random_batch=lambda n, weighted: random_batch(rng, n, weighted),
    ):
        report.section(name, function)
    if not args.cpu_only:
        report.section(
            "verify_bench", lambda: verification.bench(real, verify_rng, args.verify_pairs)
        )
    print(f"\n{'fingerprint section':32s} {'seconds':>8s}")
    for name, seconds in report.result["section_seconds"].items():
        print(f"{name:32s} {seconds:8.1f}")
    for key in ("cpu_baseline", "end_to_end"):
        print(f"{key}: {report.result.get(key)}")
    for record in report.result.get("device_text") or []:
        print(
            f"device text {record['documents']:15s} {record['featurizer']:12s} "
            f"{record['docs_per_s'] / 1e6:8.1f} M docs/s {record['bytes_per_s'] / 1e9:6.2f} GB/s"
        )
    for r in report.result.get("accumulate") or []:
        print(
            f"accumulate bits={r['bits']} weighted={r['weighted']}: {r['ms']:.3f} ms, "
            f"{r['fraction_of_copy_bandwidth']:.2f} of copy bandwidth"
        )
    for key in ("parity", "verify_parity"):
        records = report.result.get(key) or []
        bad = [r for r in records if not r["identical"]]
        print(f"{key}: {len(records) - len(bad)} identical, {len(bad)} differing")
    print(f"verify_bench: {report.result.get('verify_bench')}")
    for name, error in report.result["errors"].items():
        print(f"{name:32s} ERROR {error['error']}")


def join_sections(args: argparse.Namespace, report: Report) -> None:
    """The GPU radius join and kNN (issue 11)."""
    import joins

    report.result["join_settings"] = {
        "codes": args.join_codes,
        "medium": args.join_medium,
        "repeats": args.join_repeats,
        "cpu_join_limit_s": args.cpu_join_limit,
    }
    for name, function in joins.sections(
        np.random.default_rng(11),
        big=args.join_codes,
        medium=args.join_medium,
        repeats=args.join_repeats,
        cpu_limit_s=args.cpu_join_limit,
    ):
        report.section(name, function)
    print(f"\n{'join section':40s} {'seconds':>10s}  result")
    for name in report.result["section_seconds"]:
        value = report.result.get(name)
        if isinstance(value, dict):
            brief = {
                k: value[k]
                for k in (
                    "seconds",
                    "unique_pairs",
                    "identical_to_faiss",
                    "pairs_identical",
                    "cpu_seconds",
                )
                if k in value
            }
            print(f"{name:40s} {report.result['section_seconds'][name]:10.3f}  {brief}")
    for name, error in report.result["errors"].items():
        print(f"{name:40s} ERROR {error['error']}")


def numba_version() -> str:
    """Numba's version, or the import error (the CPU path cannot run without it)."""
    try:
        import numba
    except Exception as error:  # noqa: BLE001 - recorded, and the sections say the rest
        return f"import failed: {type(error).__name__}: {error}"
    return str(numba.__version__)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", type=Path, help="pypi_summaries.txt.gz (fingerprint part)")
    parser.add_argument("--out", type=Path, required=True, help="folder for the JSON")
    parser.add_argument("--json-name", default="device_check.json")
    parser.add_argument("--only", choices=("all", "fingerprint", "join"), default="all")
    parser.add_argument("--docs", type=int, default=1_000_000, help="documents per benchmark")
    parser.add_argument("--parity-docs", type=int, default=100_000)
    parser.add_argument("--verify-pairs", type=int, default=10_000_000, help="pairs, verify_bench")
    parser.add_argument("--workers", type=int, default=None, help="CPU processes (all cores)")
    parser.add_argument("--tests-rc", type=int, default=None, help="exit code of the GPU tests")
    parser.add_argument("--cpu-only", action="store_true", help="skip everything on the GPU")
    parser.add_argument("--join-codes", type=int, default=10_000_000, help="codes, big joins")
    parser.add_argument("--join-medium", type=int, default=1_000_000, help="codes, 1M joins")
    parser.add_argument("--join-repeats", type=int, default=3, help="timed runs per figure")
    parser.add_argument(
        "--cpu-join-limit", type=float, default=90.0, help="seconds per CPU join compared"
    )
    args = parser.parse_args()
    if args.workers is None:
        affinity = getattr(os, "sched_getaffinity", None)
        args.workers = len(affinity(0)) if affinity else os.cpu_count() or 1
    if args.only != "join" and args.corpus is None:
        parser.error("--corpus is needed for the fingerprint part")
    result: dict = {
        "machine": {
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "python": sys.version,
            "numpy": np.__version__,
            "numba": numba_version(),
        },
        "gpu_tests_exit_code": args.tests_rc,
        "only": args.only,
    }
    report = Report(args.out / args.json_name, result)
    if not args.cpu_only:

        def gpu_info() -> dict[str, Any]:
            import cupy

            props = cupy.cuda.runtime.getDeviceProperties(0)
            result["machine"]["gpu"] = props["name"].decode()
            result["machine"]["cupy"] = cupy.__version__
            result["machine"]["cuda_runtime"] = cupy.cuda.runtime.runtimeGetVersion()
            result["machine"]["nvrtc"] = cupy.cuda.nvrtc.getVersion()
            return dict(result["machine"])

        report.section("machine", gpu_info)
    if args.only in ("all", "fingerprint"):
        fingerprint_sections(args, report)
    if args.only in ("all", "join") and not args.cpu_only:
        join_sections(args, report)
    sys.exit(1 if report.result["errors"] else 0)


if __name__ == "__main__":
    main()

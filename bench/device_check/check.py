"""Device check: CPU/GPU parity on >= 100k random and real documents, and 1M-document benchmarks.

Run by run.sh on a machine with a CUDA device (``--cpu-only`` runs the CPU half anywhere, to
check the script itself). Runs in sections; the JSON (``--json-name`` in ``--out``) is rewritten
after every section, and a section that raises is recorded under ``errors`` (its message and
traceback) while the next one runs. Prints a table last.

Figures (all measured in this one run, on this machine), ``--only fingerprint``:
- copy_bandwidth: a large device-to-device copy, bytes read plus bytes written per second;
- accumulate: the accumulation kernels on device-resident features (1M documents): features/s,
  the bytes they must move (inputs read once, codes written once) per second, and that as a
  fraction of the copy bandwidth (the issue's goal: at least 0.5);
- end to end from host text and from a host CSR matrix: documents/s, host input to host codes;
- the same jobs through the CPU path on all this machine's cores (one process per core), and
  the GPU/CPU ratio (the issue's goal for text: at least 50).

``--only join`` (issue 11; joins.py says how): the exact radius join on the device at 128-bit
radius 18 and 64-bit radius 3 over ``--join-medium`` (1M) and ``--join-codes`` (10M) clustered
codes, kNN of 10k queries (k = 10) against ``--join-codes`` codes checked against FAISS, and the
1M joins' pair sets compared with the CPU join's."""

from __future__ import annotations

import argparse
import gzip
import json
import multiprocessing
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

from gpusimhash import _cpu, fingerprint
from gpusimhash.features import FeatureBatch
from gpusimhash.text import TextFeaturizer

FEATURIZERS = {
    "word1-count": lambda: TextFeaturizer(),
    "word2-binary": lambda: TextFeaturizer("word", 2, "binary"),
    "char3-logtf": lambda: TextFeaturizer("char", 3, "logtf"),
    "word1-tfidf": lambda: TextFeaturizer(weighting="tfidf"),
}
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


def featurizer(name: str, fit_on: list[str]) -> TextFeaturizer:
    made = FEATURIZERS[name]()
    return made.fit(fit_on) if made.weighting == "tfidf" else made


# ---- CPU path on every core ----------------------------------------------------------------


def _cpu_text_job(args):
    texts, config, bits = args
    return fingerprint(
        texts, bits=bits, device="cpu", featurizer=TextFeaturizer.from_config(config)
    )


def _cpu_csr_job(args):
    matrix, vocabulary, bits = args
    return fingerprint(matrix, vocabulary=vocabulary, bits=bits, device="cpu")


def cpu_parallel(jobs, function, workers: int) -> float:
    """Seconds to run the jobs on a pool of ``workers`` processes (pool start excluded)."""
    context = multiprocessing.get_context("fork")
    with context.Pool(workers) as pool:
        pool.map(abs, range(workers))  # start the workers first
        start = time.perf_counter()
        pool.map(function, jobs, chunksize=1)
        return time.perf_counter() - start


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


# ---- GPU -----------------------------------------------------------------------------------


def gpu_seconds(function, repeat: int = 10) -> float:
    """Median GPU time of ``function()`` in seconds (cupyx.profiler.benchmark, after warm-up)."""
    from cupyx.profiler import benchmark

    result = benchmark(function, n_repeat=repeat, n_warmup=2)
    return float(np.median(result.gpu_times[0]))


def wall_seconds(function) -> float:
    """Wall seconds of ``function()``, the device synchronized at the end."""
    import cupy

    cupy.cuda.Device().synchronize()
    start = time.perf_counter()
    function()
    cupy.cuda.Device().synchronize()
    return time.perf_counter() - start


def copy_bandwidth() -> float:
    """Device-to-device copy bandwidth, bytes read plus written per second."""
    import cupy

    source = cupy.random.randint(0, 255, 2**31, dtype=cupy.uint8)
    target = cupy.empty_like(source)
    seconds = gpu_seconds(lambda: cupy.copyto(target, source), repeat=20)
    return 2 * source.nbytes / seconds


def parity(texts_by_name: dict[str, list[str]], rng: np.random.Generator) -> list[dict]:
    """Compare GPU and CPU codes exactly; one record per comparison."""
    from gpusimhash import _gpu

    records = []
    for corpus, texts in texts_by_name.items():
        for name in FEATURIZERS:
            made = featurizer(name, texts[:10_000])
            for bits in (64, 256):
                gpu = _gpu.fingerprint_text(texts, made, bits=bits, seed=bits).get()
                cpu = _cpu.fingerprint_batch(made.transform(texts), bits=bits, seed=bits)
                records.append(_record(f"text/{corpus}/{name}", bits, gpu, cpu))
    for weighted in (False, True):
        batch = random_batch(rng, 100_000, weighted)
        for bits in (64, 1024):
            gpu = _gpu.fingerprint_batch(batch, bits=bits, seed=7).get()
            cpu = _cpu.fingerprint_batch(batch, bits=bits, seed=7)
            records.append(_record(f"batch/random/weighted={weighted}", bits, gpu, cpu))
    return records


def _record(what: str, bits: int, gpu: np.ndarray, cpu: np.ndarray) -> dict:
    same = gpu.shape == cpu.shape and bool((gpu == cpu).all())
    differing = int((gpu != cpu).any(axis=1).sum()) if gpu.shape == cpu.shape else -1
    print(f"parity {what} bits={bits}: {'identical' if same else f'{differing} rows differ'}")
    return {
        "what": what,
        "bits": bits,
        "docs": int(cpu.shape[0]),
        "identical": same,
        "rows_differing": differing,
    }


def accumulate_bench(texts: list[str], bandwidth: float) -> list[dict]:
    """Accumulation kernels on device-resident features of the real documents."""
    import cupy

    from gpusimhash import _gpu

    engine = _gpu.device_engine()
    code_points, doc_starts = (cupy.asarray(a) for a in _gpu.encode_texts(texts))
    states, offsets, _ = engine.text_batch(code_points, doc_starts, TextFeaturizer())
    plan = engine.plan_tasks(offsets)
    n_docs, nnz = offsets.size - 1, states.size
    weights = cupy.random.standard_normal(nnz)
    records = []
    for weighted in (False, True):
        for bits in (64, 256):
            used = weights if weighted else None

            def run(used=used, bits=bits):
                return engine.accumulate(states, offsets, used, plan, bits=bits, seed=1)

            seconds = gpu_seconds(run)
            moved = nnz * (4 + (8 if weighted else 0)) + (n_docs + 1) * 8 + n_docs * bits // 8
            moved += sum(int(a.nbytes) for a in plan.values())
            records.append(
                {
                    "docs": n_docs,
                    "features": nnz,
                    "bits": bits,
                    "weighted": weighted,
                    "ms": seconds * 1e3,
                    "features_per_s": nnz / seconds,
                    "bytes": moved,
                    "bytes_per_s": moved / seconds,
                    "fraction_of_copy_bandwidth": moved / seconds / bandwidth,
                }
            )
    return records


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
    """The fingerprinting parity and benchmarks (issue 4)."""
    rng = np.random.default_rng(0)
    real = load_corpus(args.corpus, args.docs)
    report.result["docs"] = args.docs
    timings: dict[str, float] = {}
    report.result["end_to_end"] = timings
    csr, vocabulary = synthetic_csr(rng, args.docs, 200_000)

    def cpu() -> dict[str, float]:
        # the CPU path on every core
        config = TextFeaturizer().to_config()
        pieces = np.array_split(np.arange(args.docs), args.workers * 4)
        text_jobs = [(real[p[0] : p[-1] + 1], config, 64) for p in pieces if p.size]
        timings["cpu_text_s"] = cpu_parallel(text_jobs, _cpu_text_job, args.workers)
        csr_jobs = [(csr[p[0] : p[-1] + 1], vocabulary, 64) for p in pieces if p.size]
        timings["cpu_csr_s"] = cpu_parallel(csr_jobs, _cpu_csr_job, args.workers)
        print(
            f"CPU ({args.workers} processes): text {timings['cpu_text_s']:.2f} s, "
            f"CSR {timings['cpu_csr_s']:.2f} s"
        )
        return dict(timings)

    report.section("cpu_fingerprint", cpu)
    if args.cpu_only:
        return
    from gpusimhash import _gpu

    def warm_up() -> bool:
        _gpu.fingerprint_text(real[:1000], TextFeaturizer(), bits=64, seed=0)  # compile
        _gpu.fingerprint_batch(random_batch(rng, 1000, True), bits=64, seed=0)
        return True

    report.section("fingerprint_warm_up", warm_up)

    def parity_section() -> list[dict]:
        texts = {"random": random_texts(rng, args.parity_docs), "real": real[: args.parity_docs]}
        return parity(texts, rng)

    report.section("parity", parity_section)
    bandwidth = report.section("copy_bandwidth_bytes_per_s", copy_bandwidth)
    if bandwidth:
        report.section("accumulate", lambda: accumulate_bench(real, bandwidth))

    def end_to_end() -> dict[str, float]:
        timings["gpu_text_s"] = wall_seconds(
            lambda: _gpu.fingerprint_text(real, TextFeaturizer(), bits=64, seed=0).get()
        )
        timings["gpu_char3_text_s"] = wall_seconds(
            lambda: _gpu.fingerprint_text(real, TextFeaturizer("char", 3), bits=64, seed=0).get()
        )
        timings["gpu_csr_s"] = wall_seconds(
            lambda: fingerprint(
                csr, vocabulary=vocabulary, bits=64, device="gpu", batch_size=args.docs
            )
        )
        if "cpu_text_s" in timings:
            timings["gpu_over_cpu_text"] = timings["cpu_text_s"] / timings["gpu_text_s"]
            timings["gpu_over_cpu_csr"] = timings["cpu_csr_s"] / timings["gpu_csr_s"]
        return dict(timings)

    report.section("end_to_end", end_to_end)
    print(f"\n{'figure':44s} value")
    for key, value in timings.items():
        per_s = f"  ({args.docs / value:,.0f} docs/s)" if key.endswith("_s") else ""
        print(f"{key:44s} {value:10.3f}{per_s}")
    if bandwidth:
        print(f"{'copy bandwidth (GB/s)':44s} {bandwidth / 1e9:10.1f}")
        for r in report.result.get("accumulate", []):
            label = f"accumulate bits={r['bits']} weighted={r['weighted']}"
            print(
                f"{label:44s} {r['ms']:8.3f} ms  {r['features_per_s'] / 1e9:.2f} G feat/s  "
                f"{r['fraction_of_copy_bandwidth']:.2f} of copy bw"
            )
    records = report.result.get("parity", [])
    bad = [r for r in records if not r["identical"]]
    print(f"parity: {len(records) - len(bad)} identical, {len(bad)} differing")


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", type=Path, help="pypi_summaries.txt.gz (fingerprint part)")
    parser.add_argument("--out", type=Path, required=True, help="folder for the JSON")
    parser.add_argument("--json-name", default="device_check.json")
    parser.add_argument("--only", choices=("all", "fingerprint", "join"), default="all")
    parser.add_argument("--docs", type=int, default=1_000_000, help="documents per benchmark")
    parser.add_argument("--parity-docs", type=int, default=100_000)
    parser.add_argument("--workers", type=int, default=os.cpu_count())
    parser.add_argument("--tests-rc", type=int, default=None, help="exit code of the GPU tests")
    parser.add_argument("--cpu-only", action="store_true", help="skip everything on the GPU")
    parser.add_argument("--join-codes", type=int, default=10_000_000, help="codes, big joins")
    parser.add_argument("--join-medium", type=int, default=1_000_000, help="codes, 1M joins")
    parser.add_argument("--join-repeats", type=int, default=3, help="timed runs per figure")
    parser.add_argument(
        "--cpu-join-limit", type=float, default=90.0, help="seconds per CPU join compared"
    )
    args = parser.parse_args()
    if args.only != "join" and args.corpus is None:
        parser.error("--corpus is needed for the fingerprint part")
    result: dict = {
        "machine": {
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "python": sys.version,
            "numpy": np.__version__,
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
            return dict(result["machine"])

        report.section("machine", gpu_info)
    if args.only in ("all", "fingerprint"):
        fingerprint_sections(args, report)
    if args.only in ("all", "join") and not args.cpu_only:
        join_sections(args, report)
    sys.exit(1 if report.result["errors"] else 0)


if __name__ == "__main__":
    main()

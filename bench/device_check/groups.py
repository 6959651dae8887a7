"""The device check's groups of sections, each run in its own process by check.py, in order.

A group's sections share its inputs; a process per group means a time cap can kill a stuck
group without losing the others, and a sticky CUDA error cannot poison the next group. A
section's needs (``gpu``, ``corpus``, ``faiss``) are checked against the environment
section; in a dry run the harnesses that compare with the CPU run against the CPU stand-in
(``sides.py``) and the GPU-only sections are recorded as skipped.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
from report import Report

ROOT = Path(__file__).resolve().parents[2]
PYTEST_TARGETS = ("tests",)  # every gpu-marked test, wherever it lives


@dataclass(frozen=True)
class Sizes:
    """How big each part is: the device's sizes, or a dry run's."""

    docs: int = 1_000_000
    long_docs: int = 100_000
    parity_docs: int = 100_000
    verify_parity_pairs: int = 1_000_000
    verify_pairs: int = 10_000_000
    csr_features: int = 200_000
    join_medium: int = 1_000_000
    join_big: int = 10_000_000
    knn_stored: int = 10_000_000
    knn_queries: int = 10_000
    knn_check: int = 200
    repeats: int = 3
    cpu_join_limit_s: float = 25.0
    baseline_limit_s: float = 40.0
    warm_limit_s: float = 50.0


DRY_RUN = Sizes(
    docs=3_000,
    long_docs=300,
    parity_docs=400,
    verify_parity_pairs=5_000,
    verify_pairs=20_000,
    csr_features=2_000,
    join_medium=3_000,
    join_big=6_000,
    knn_stored=4_000,
    knn_queries=200,
    knn_check=50,
    repeats=1,
    baseline_limit_s=90.0,
    warm_limit_s=90.0,
)


@dataclass(frozen=True)
class Run:
    """What a group needs to know: the sizes, the corpus, the output folder, dry or not."""

    sizes: Sizes
    corpus: Path
    out: Path
    dry_run: bool
    workers: int

    def harness_needs(self, *needs: str) -> tuple[str, ...]:
        """Needs of a section comparing a side with the CPU: no GPU in a dry run."""
        return needs if self.dry_run else ("gpu", *needs)

    def settings(self) -> dict[str, Any]:
        return {**asdict(self.sizes), "dry_run": self.dry_run, "workers": self.workers}


def _real(run: Run, n: int, report: Report) -> list[str]:
    from inputs import load_corpus

    if report.missing(("corpus",)):
        raise RuntimeError("no corpus")
    return load_corpus(run.corpus, n)


def environment(run: Run, report: Report) -> None:
    import environment as env

    report.section("environment", lambda: env.probe(run.corpus, run.dry_run))
    report.section("cpu_compile_warm_up", lambda: env.warm_cpu(run.sizes.warm_limit_s))


def parity(run: Run, report: Report) -> None:
    """The parity probe's cost, then bit-for-bit parity of fingerprints and verification."""
    import fingerprints
    import sides
    import verification
    from inputs import random_batch, random_texts

    rng = np.random.default_rng(0)
    side = sides.side(run.dry_run)
    n = run.sizes.parity_docs
    have_corpus = report.missing(("corpus",)) is None
    real = _real(run, n, report) if have_corpus else []
    batches = [random_batch(rng, n, False), random_batch(rng, n, True)]

    def gpu_probe() -> dict[str, Any]:
        sys.path.insert(0, str(ROOT / "bench"))
        import bench_gpu_probe

        from gpusimhash._gpu import probe

        families = tuple(f for f in probe.FAMILIES if f != "knn" or not report.missing(["faiss"]))
        rows = bench_gpu_probe.timed(probe.gpu_device(), families)
        return {"rows": rows, "passed": not any(row["failures"] for row in rows)}

    report.section("gpu_probe", gpu_probe, needs=("gpu",))
    texts = real or random_texts(rng, 2000)
    report.section("fingerprint_warm_up", lambda: fingerprints.warm_up(texts, batches), ("gpu",))

    def parity_section() -> list[dict]:
        corpora = {"random": random_texts(rng, n)}
        if real:
            corpora["real"] = real
        return fingerprints.parity(side, corpora, batches)

    report.section("parity", parity_section, needs=run.harness_needs())
    report.section(
        "verify_parity",
        lambda: verification.parity(side, real, run.sizes.verify_parity_pairs),
        needs=run.harness_needs("corpus"),
    )


def _joins(run: Run) -> Any:
    import joins
    import sides

    sizes = run.sizes
    return joins.Joins(
        sides.side(run.dry_run), np.random.default_rng(11), sizes.repeats, sizes.cpu_join_limit_s
    )


def join_medium_knn(run: Run, report: Report) -> None:
    """The 1M joins against the CPU join, then kNN against 10M codes checked with FAISS."""
    joins, sizes = _joins(run), run.sizes
    needs = run.harness_needs()
    faiss = report.missing(["faiss"]) is None
    report.section(
        "join_gpu_128_r18_medium", joins.join("m128", sizes.join_medium, 128, 18, 8), needs
    )
    report.section("join_gpu_64_r3_medium", joins.join("m64", sizes.join_medium, 64, 3, 2), needs)
    report.section("join_cpu_compare_128_r18_medium", joins.compare("m128", 18), needs)
    report.section("join_cpu_compare_64_r3_medium", joins.compare("m64", 3), needs)
    knn = joins.knn(64, sizes.knn_stored, sizes.knn_queries, sizes.knn_check, faiss)
    report.section("knn_gpu_64_k10", knn, needs)


def benchmarks(run: Run, report: Report) -> None:
    """GPU-only figures on 1M documents (the CPU baselines come last, in their own group)."""
    import fingerprints
    import verification
    from inputs import synthetic_csr

    from gpusimhash.utf8 import Utf8Texts

    sizes = run.sizes
    needs = ("gpu", "corpus")
    if report.missing(needs):
        real: list[str] = []
    else:
        real = _real(run, sizes.docs, report)
    utf8 = Utf8Texts.from_strings(real)
    csr, vocabulary = synthetic_csr(np.random.default_rng(1), sizes.docs, sizes.csr_features)
    results: dict[str, Any] = {}

    def bandwidth() -> float:
        results["bandwidth"] = fingerprints.copy_bandwidth()
        return results["bandwidth"]

    def device_text() -> list[dict]:
        long = Utf8Texts.from_strings(fingerprints.long_documents(real, sizes.long_docs))
        return fingerprints.device_text(utf8, long)

    report.section("copy_bandwidth_bytes_per_s", bandwidth, needs=("gpu",))
    report.section(
        "accumulate", lambda: fingerprints.accumulate_bench(utf8, results["bandwidth"]), needs
    )
    report.section("device_text", device_text, needs)
    report.section(
        "end_to_end_gpu", lambda: fingerprints.end_to_end_gpu(real, utf8, csr, vocabulary), needs
    )
    report.section(
        "verify_bench_gpu", lambda: verification.bench_gpu(real, sizes.verify_pairs), needs
    )


def join_big(run: Run, report: Report) -> None:
    """The 10M joins and kNN at 128 bits: GPU only."""
    joins, sizes = _joins(run), run.sizes
    faiss = report.missing(["faiss"]) is None
    big = sizes.join_big
    report.section("join_gpu_128_r18_big", joins.join("b128", big, 128, 18, 8), ("gpu",))
    report.section("join_gpu_64_r3_big", joins.join("b64", big, 64, 3, 2), ("gpu",))
    knn = joins.knn(128, sizes.knn_stored, sizes.knn_queries, sizes.knn_check, faiss)
    report.section("knn_gpu_128_k10", knn, ("gpu",))


def ratios(result: dict[str, Any]) -> dict[str, Any]:
    """CPU seconds over GPU seconds of the same work, from the stored figures."""
    pairs = (
        ("utf8_text", "cpu_baseline", "text_s", "end_to_end_gpu", "utf8_s"),
        ("csr_public_call", "cpu_baseline", "csr_api_s", "end_to_end_gpu", "csr_api_s"),
        ("csr_gather_and_fingerprint", "cpu_baseline", "csr_kernel_s", "end_to_end_gpu", "csr_kernel_s"),
        ("verify_where_each_side_works", "verify_bench_cpu", "cpu_s", "verify_bench_gpu", "resident_s"),
        ("verify_from_host_memory", "verify_bench_cpu", "cpu_s", "verify_bench_gpu", "from_host_s"),
    )  # fmt: skip
    out: dict[str, Any] = {}
    for name, cpu_section, cpu_key, gpu_section, gpu_key in pairs:
        cpu, gpu = result.get(cpu_section), result.get(gpu_section)
        if isinstance(cpu, dict) and isinstance(gpu, dict) and cpu_key in cpu and gpu_key in gpu:
            out[f"gpu_over_cpu_{name}"] = cpu[cpu_key] / gpu[gpu_key]
        else:
            out[f"gpu_over_cpu_{name}"] = (
                f"missing: {cpu_section}.{cpu_key} or {gpu_section}.{gpu_key}"
            )
    return out


def cpu_baselines(run: Run, report: Report) -> None:
    """The CPU sides of the benchmarks under a hard cap, then the ratios."""
    import fingerprints
    import verification
    from inputs import synthetic_csr

    from gpusimhash.utf8 import Utf8Texts

    sizes = run.sizes
    real = [] if report.missing(("corpus",)) else _real(run, sizes.docs, report)
    # first, so that the baseline's workers start after Numba's threads have (spawned, safe)
    report.section(
        "verify_bench_cpu", lambda: verification.bench_cpu(real, sizes.verify_pairs), ("corpus",)
    )
    csr, vocabulary = synthetic_csr(np.random.default_rng(1), sizes.docs, sizes.csr_features)
    report.section(
        "cpu_baseline",
        lambda: fingerprints.cpu_baseline(
            Utf8Texts.from_strings(real), csr, vocabulary, run.workers, sizes.baseline_limit_s
        ),
        ("corpus",),
    )
    report.section("ratios", lambda: ratios(report.result))


def pytest_gpu(run: Run, report: Report, cap_s: float) -> None:
    """The gpu-marked tests with the time left (their log in ``pytest_gpu.log``)."""

    def tests() -> dict[str, Any]:
        log = run.out / "pytest_gpu.log"
        command = [
            sys.executable,
            "-m",
            "pytest",
            "-m",
            "gpu",
            *PYTEST_TARGETS,
            "-v",
            "--durations=15",
            "-p",
            "no:cacheprovider",
            "--continue-on-collection-errors",
        ]
        if run.dry_run:  # collected (imports, markers), not run: the GPU parts are skipped
            command.append("--collect-only")
        limit = max(5.0, cap_s - 10)
        with log.open("w") as stream:
            try:
                done = subprocess.run(
                    command,
                    cwd=ROOT,
                    stdout=stream,
                    stderr=subprocess.STDOUT,
                    timeout=limit,
                    check=False,
                )
                code: Any = done.returncode
            except subprocess.TimeoutExpired:
                code = f"killed after {limit:.0f} s"
        lines = log.read_text().splitlines()
        print("\n".join(lines[-15:]), flush=True)
        return {"exit_code": code, "limit_s": limit, "last_line": lines[-1] if lines else ""}

    report.section("pytest_gpu", tests)


GROUPS: dict[str, Callable[..., None]] = {
    "environment": environment,
    "parity": parity,
    "join_medium_knn": join_medium_knn,
    "benchmarks": benchmarks,
    "join_big": join_big,
    "cpu_baselines": cpu_baselines,
    "pytest": pytest_gpu,
}


def cpu_count() -> int:
    """Cores this process may use."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1

"""Device-check sections of the GPU radius join and kNN, run by check.py.

Data: clustered codes, random centres each copied a few times with a few random bits flipped,
rows shuffled, so every join finds real pairs at the radii named (128-bit radius 18, 64-bit
radius 3). Each section returns one JSON-safe record.

Timings are wall seconds on device-resident codes (input on the device, distinct-code index and
pairs left there), best of ``repeats`` after a warm-up run that also compiles the kernels (a
dry run times the CPU stand-in instead: ``side``). The CPU comparisons run the CPU join in a
spawned process under a time limit: a warm-up join on 2,000 codes first (compiled loops
loaded outside the timing), then the timed join, a second one when the first took under a
third of the limit, best of those. kNN is checked against FAISS ``IndexBinaryFlat`` on
``check_queries`` queries, timed after a warm-up search (its thread pool started); both sides
are given in seconds per query.
"""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Callable
from typing import Any

import numpy as np


def clustered_codes(
    rng: np.random.Generator, n: int, bits: int, *, copies: int, flips: int
) -> np.ndarray:
    """``n`` codes: ``copies`` noisy copies of random centres, ``flips`` random bits each."""
    width = bits // 8
    centres = rng.integers(0, 256, (-(-n // copies), width), dtype=np.uint8)
    codes = np.repeat(centres, copies, axis=0)[:n]
    rows = np.arange(n)
    for _ in range(flips):  # a repeated position flips back: at most `flips` bits differ
        position = rng.integers(0, bits, n)
        codes[rows, position // 8] ^= (1 << (position % 8)).astype(np.uint8)
    return codes[rng.permutation(n)]


def _cpu_groups(
    codes: np.ndarray, radius: int, limit_s: float
) -> tuple[list[float], np.ndarray, np.ndarray]:
    """The CPU join, warmed on a small input (run in a spawned process)."""
    from gpusimhash import near_duplicate_groups

    near_duplicate_groups(codes[:2000], max_distance=radius, device="cpu")
    times, groups = [], None
    while not times or (len(times) < 2 and times[0] < limit_s / 3):
        start = time.perf_counter()
        groups = near_duplicate_groups(codes, max_distance=radius, device="cpu")
        times.append(time.perf_counter() - start)
    return times, groups.inverse, groups.unique_pairs


def cpu_compare(
    codes: np.ndarray, radius: int, inverse: np.ndarray, unique_pairs: np.ndarray, limit_s: float
) -> dict[str, Any]:
    """Compare the device join's result with the CPU join's, exactly, within ``limit_s``."""
    context = multiprocessing.get_context("spawn")
    with context.Pool(1) as pool:
        pending = pool.apply_async(_cpu_groups, (codes, radius, limit_s))
        try:
            times, cpu_inverse, cpu_pairs = pending.get(timeout=limit_s)
        except multiprocessing.TimeoutError:
            pool.terminate()
            raise RuntimeError(f"the CPU join took more than {limit_s} s") from None
    record = {
        "cpu_seconds": min(times),
        "cpu_seconds_all": times,
        "inverse_identical": bool(np.array_equal(inverse, cpu_inverse)),
        "pairs_identical": bool(np.array_equal(unique_pairs, cpu_pairs)),
        "cpu_unique_pairs": int(cpu_pairs.shape[0]),
    }
    print(f"cpu compare radius {radius}: {record}", flush=True)
    return record


def knn_check(
    side: Any,
    stored: np.ndarray,
    queries: np.ndarray,
    k: int,
    repeats: int,
    check_queries: int,
    faiss_available: bool,
) -> dict[str, Any]:
    """Time ``side``'s kNN; check ``check_queries`` queries against FAISS IndexBinaryFlat."""
    record, distances, positions = side.knn(stored, queries, k, repeats)
    record.update(
        side=side.name,
        stored=int(stored.shape[0]),
        queries=int(queries.shape[0]),
        bits=int(stored.shape[1] * 8),
        k=k,
        seconds_per_query=record["seconds"] / queries.shape[0],
        checked_queries=check_queries,
    )
    if not faiss_available:
        record["identical_to_faiss"] = "not checked: faiss is not importable"
        return record
    import faiss

    index = faiss.IndexBinaryFlat(stored.shape[1] * 8)
    index.add(stored)
    index.search(queries[:10], k)  # warm: the thread pool starts here
    start = time.perf_counter()
    faiss_distances, faiss_positions = index.search(queries[:check_queries], k)
    faiss_seconds = time.perf_counter() - start
    record.update(
        identical_to_faiss=bool(
            np.array_equal(distances[:check_queries], faiss_distances)
            and np.array_equal(positions[:check_queries], faiss_positions)
        ),
        faiss_cpu_seconds_per_query=faiss_seconds / check_queries,
        faiss_threads=faiss.omp_get_max_threads(),
    )
    record["per_query_ratio"] = record["faiss_cpu_seconds_per_query"] / record["seconds_per_query"]
    print(f"knn: {record}", flush=True)
    return record


class Joins:
    """The join and kNN sections' data and results, kept between sections of one process."""

    def __init__(self, side: Any, rng: np.random.Generator, repeats: int, cpu_limit_s: float):
        self.side = side
        self.rng = rng
        self.repeats = repeats
        self.cpu_limit_s = cpu_limit_s
        self.data: dict[str, np.ndarray] = {}
        self.results: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def codes(self, name: str, n: int, bits: int, flips: int) -> np.ndarray:
        if name not in self.data:
            self.data[name] = clustered_codes(self.rng, n, bits, copies=4, flips=flips)
        return self.data[name]

    def join(self, name: str, n: int, bits: int, radius: int, flips: int) -> Callable[[], Any]:
        def run() -> dict[str, Any]:
            codes = self.codes(name, n, bits, flips)
            record, inverse, unique_pairs = self.side.join(codes, radius, self.repeats)
            self.results[name] = (inverse, unique_pairs)
            record.update(
                side=self.side.name,
                codes=n,
                bits=bits,
                radius=radius,
                distinct_codes=int(inverse.max()) + 1 if inverse.size else 0,
                unique_pairs=int(unique_pairs.shape[0]),
            )
            print(f"join {name}: {record}", flush=True)
            return record

        return run

    def compare(self, name: str, radius: int) -> Callable[[], Any]:
        def run() -> dict[str, Any]:
            if name not in self.results:
                raise RuntimeError("no GPU join result to compare: its section did not finish")
            inverse, unique_pairs = self.results[name]
            return cpu_compare(self.data[name], radius, inverse, unique_pairs, self.cpu_limit_s)

        return run

    def knn(
        self, bits: int, stored_n: int, queries_n: int, check: int, faiss_available: bool
    ) -> Callable[[], Any]:
        def run() -> dict[str, Any]:
            stored = self.codes(f"knn{bits}", stored_n, bits, 8)
            queries = clustered_codes(self.rng, queries_n, bits, copies=1, flips=0)
            queries[::2] = stored[self.rng.integers(0, stored.shape[0], (queries_n + 1) // 2)]
            return knn_check(self.side, stored, queries, 10, self.repeats, check, faiss_available)

        return run

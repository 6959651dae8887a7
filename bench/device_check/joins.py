"""Device-check sections of the GPU radius join and kNN (issue 11), run by check.py.

Data: clustered codes, random centres each copied a few times with a few random bits flipped,
rows shuffled, so every join finds real pairs at the radii the issue names (128-bit radius 18,
64-bit radius 3). Each section returns one JSON-safe record; check.py records an error in place
of a section that raises and rewrites the JSON after every section.

Timings are wall seconds on device-resident codes (input on the device, distinct-code index and
pairs left on the device), best of ``repeats`` after a warm-up run that also compiles the
kernels. The CPU comparisons run the CPU join in a spawned process with a time limit, so a slow
CPU path cannot eat the device time.
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


def _host(array: Any) -> np.ndarray:
    """A device array copied to the host (NumPy passes through)."""
    return np.asarray(array.get() if hasattr(array, "get") else array)


def _synchronized(function: Callable[[], Any]) -> tuple[float, Any]:
    """Wall seconds of ``function()``, the device synchronized before and after."""
    import cupy

    cupy.cuda.Device().synchronize()
    start = time.perf_counter()
    result = function()
    cupy.cuda.Device().synchronize()
    return time.perf_counter() - start, result


def gpu_join(codes: np.ndarray, radius: int, repeats: int) -> tuple[dict[str, Any], Any, Any]:
    """Time the device join of host ``codes`` copied to the device first.

    Returns
    -------
    record : dict
    inverse, unique_pairs : ndarray
        The result, copied to the host (for the CPU comparison).
    """
    import cupy

    from gpusimhash._gpu import join as gpu_join_module

    engine = gpu_join_module.device_join()
    device_codes = cupy.asarray(codes)
    warm_up, _ = _synchronized(lambda: engine.groups(device_codes, radius))
    times = []
    for _ in range(repeats):
        seconds, (inverse, unique_pairs) = _synchronized(
            lambda: engine.groups(device_codes, radius)
        )
        times.append(seconds)
    stats = engine.stats
    plan = stats.plan
    record = {
        "codes": int(codes.shape[0]),
        "bits": int(codes.shape[1] * 8),
        "radius": radius,
        "distinct_codes": int(inverse.max()) + 1 if inverse.size else 0,
        "unique_pairs": int(unique_pairs.shape[0]),
        "seconds": min(times),
        "seconds_all": times,
        "first_call_seconds": warm_up,
        "plan": None
        if plan is None
        else {"bounds": list(plan.bounds), "block_radius": plan.block_radius},
        "launches": dict(stats.launches),
        "reruns": stats.reruns,
        "big_bucket_pairs": stats.big_bucket_pairs,
    }
    print(
        f"gpu join {record['codes']:,} codes {record['bits']} bits radius {radius}: "
        f"{record['seconds']:.4f} s, {record['unique_pairs']:,} pairs, plan {record['plan']}"
    )
    return record, _host(inverse), _host(unique_pairs)


def _cpu_groups(codes: np.ndarray, radius: int) -> tuple[float, np.ndarray, np.ndarray]:
    """The CPU join (run in a spawned process)."""
    from gpusimhash import near_duplicate_groups

    start = time.perf_counter()
    groups = near_duplicate_groups(codes, max_distance=radius, device="cpu")
    return time.perf_counter() - start, groups.inverse, groups.unique_pairs


def cpu_compare(
    codes: np.ndarray, radius: int, inverse: np.ndarray, unique_pairs: np.ndarray, limit_s: float
) -> dict[str, Any]:
    """Compare the device join's result with the CPU join's, exactly, within ``limit_s``."""
    context = multiprocessing.get_context("spawn")
    with context.Pool(1) as pool:
        pending = pool.apply_async(_cpu_groups, (codes, radius))
        try:
            seconds, cpu_inverse, cpu_pairs = pending.get(timeout=limit_s)
        except multiprocessing.TimeoutError:
            pool.terminate()
            return {"error": f"the CPU join took more than {limit_s} s"}
    record = {
        "cpu_seconds": seconds,
        "inverse_identical": bool(np.array_equal(inverse, cpu_inverse)),
        "pairs_identical": bool(np.array_equal(unique_pairs, cpu_pairs)),
        "cpu_unique_pairs": int(cpu_pairs.shape[0]),
    }
    print(f"cpu compare radius {radius}: {record}")
    return record


def gpu_knn(
    stored: np.ndarray, queries: np.ndarray, k: int, repeats: int, check_queries: int
) -> dict[str, Any]:
    """Time device kNN; check ``check_queries`` queries against FAISS IndexBinaryFlat."""
    import cupy
    import faiss

    from gpusimhash._gpu import knn as gpu_knn_module

    engine = gpu_knn_module.device_knn()
    device_stored, device_queries = cupy.asarray(stored), cupy.asarray(queries)
    warm_up, _ = _synchronized(lambda: engine.knn(device_stored, device_queries[:100], k))
    times = []
    for _ in range(repeats):
        seconds, (distances, positions) = _synchronized(
            lambda: engine.knn(device_stored, device_queries, k)
        )
        times.append(seconds)
    index = faiss.IndexBinaryFlat(stored.shape[1] * 8)
    index.add(stored)
    start = time.perf_counter()
    faiss_distances, faiss_positions = index.search(queries[:check_queries], k)
    faiss_seconds = time.perf_counter() - start
    record = {
        "stored": int(stored.shape[0]),
        "queries": int(queries.shape[0]),
        "bits": int(stored.shape[1] * 8),
        "k": k,
        "seconds": min(times),
        "seconds_all": times,
        "first_call_seconds": warm_up,
        "checked_queries": check_queries,
        "identical_to_faiss": bool(
            np.array_equal(_host(distances[:check_queries]), faiss_distances)
            and np.array_equal(_host(positions[:check_queries]), faiss_positions)
        ),
        "faiss_cpu_seconds_for_checked_queries": faiss_seconds,
    }
    print(f"gpu knn: {record}")
    return record


def sections(
    rng: np.random.Generator, *, big: int, medium: int, repeats: int, cpu_limit_s: float
) -> list[tuple[str, Callable[[], Any]]]:
    """The join and kNN sections, in the order they run (CPU comparisons last).

    Parameters
    ----------
    rng : Generator
        Seeded generator for the data.
    big, medium : int
        Codes in the large (10M) and medium (1M) joins.
    repeats : int
        Timed runs per figure (after one warm-up).
    cpu_limit_s : float
        Time limit of each CPU join.

    Returns
    -------
    list of (name, function)
        ``function()`` returns the section's record.
    """
    data: dict[str, np.ndarray] = {}
    results: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def codes(name: str, n: int, bits: int, flips: int) -> np.ndarray:
        if name not in data:
            data[name] = clustered_codes(rng, n, bits, copies=4, flips=flips)
        return data[name]

    def join(name: str, n: int, bits: int, radius: int, flips: int) -> Callable[[], Any]:
        def run() -> dict[str, Any]:
            record, inverse, unique_pairs = gpu_join(codes(name, n, bits, flips), radius, repeats)
            results[name] = (inverse, unique_pairs)
            return record

        return run

    def compare(name: str, radius: int) -> Callable[[], Any]:
        def run() -> dict[str, Any]:
            if name not in results:
                raise RuntimeError("no GPU join result to compare: its section did not finish")
            inverse, unique_pairs = results[name]
            return cpu_compare(data[name], radius, inverse, unique_pairs, cpu_limit_s)

        return run

    def knn(bits: int, k: int) -> Callable[[], Any]:
        def run() -> dict[str, Any]:
            stored = codes(f"knn{bits}", big, bits, 8)
            queries = clustered_codes(rng, 10_000, bits, copies=1, flips=0)
            queries[::2] = stored[rng.integers(0, stored.shape[0], 5_000)]
            return gpu_knn(stored, queries, k, repeats, check_queries=200)

        return run

    return [
        ("join_gpu_128_r18_medium", join("m128", medium, 128, 18, 8)),
        ("join_gpu_64_r3_medium", join("m64", medium, 64, 3, 2)),
        ("join_gpu_128_r18_big", join("b128", big, 128, 18, 8)),
        ("join_gpu_64_r3_big", join("b64", big, 64, 3, 2)),
        ("knn_gpu_64_k10", knn(64, 10)),
        ("knn_gpu_128_k10", knn(128, 10)),
        ("join_cpu_compare_64_r3_medium", compare("m64", 3)),
        ("join_cpu_compare_128_r18_medium", compare("m128", 18)),
    ]

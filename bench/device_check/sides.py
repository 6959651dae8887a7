"""The side the device check compares with the CPU: the GPU, or in a dry run a CPU stand-in.

The parity, verification, join and kNN harnesses call one of these two with the same methods,
host arrays in and out. ``Gpu`` runs CuPy and the compiled kernels; ``CpuStandIn`` answers with
the CPU path, so that a dry run exercises every harness (inputs, CPU answers, comparisons,
records) on a machine without a GPU, and its records say so (``side``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from gpusimhash._cpu._fingerprint import fingerprint_batch as cpu_fingerprint_batch
from gpusimhash.features import FeatureBatch
from gpusimhash.text import TextFeaturizer
from gpusimhash.utf8 import Utf8Texts

Features = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def _host(array: Any) -> np.ndarray:
    get = getattr(array, "get", None)
    return np.asarray(get() if callable(get) else array)


class Gpu:
    """The GPU: CuPy, the compiled kernels, the device join."""

    name = "gpu"

    def synchronized(self, function: Callable[[], Any]) -> tuple[float, Any]:
        """Wall seconds of ``function()``, the device synchronized before and after."""
        import cupy

        cupy.cuda.Device().synchronize()
        start = time.perf_counter()
        result = function()
        cupy.cuda.Device().synchronize()
        return time.perf_counter() - start, result

    def fingerprint_text(
        self, texts: Sequence[str] | Utf8Texts, featurizer: TextFeaturizer, bits: int, seed: int
    ) -> np.ndarray:
        from gpusimhash import _gpu

        return _host(_gpu.fingerprint_text(texts, featurizer, bits=bits, seed=seed))

    def fingerprint_batch(self, batch: FeatureBatch, bits: int, seed: int) -> np.ndarray:
        from gpusimhash import _gpu

        return _host(_gpu.fingerprint_batch(batch, bits=bits, seed=seed))

    def back_to_back(self, batches: Sequence[FeatureBatch], bits: int, seed: int) -> list[Any]:
        """``fingerprint_device`` on host batches, one call after the other, then the copies."""
        from gpusimhash import fingerprint_device

        codes = [fingerprint_device(batch, bits=bits, seed=seed) for batch in batches]
        return [_host(c) for c in codes]

    def pair_similarities(
        self, features: Features, left: np.ndarray, right: np.ndarray
    ) -> tuple[np.ndarray, ...]:
        from gpusimhash._gpu import verify

        return verify.pair_similarities(*features, left, right)

    def join(self, codes: np.ndarray, radius: int, repeats: int) -> tuple[dict[str, Any], Any, Any]:
        """Best of ``repeats`` after a warm-up, on device-resident codes; host results."""
        import cupy

        from gpusimhash._gpu import join as gpu_join

        engine = gpu_join.device_join()
        device_codes = cupy.asarray(codes)
        first, _ = self.synchronized(lambda: engine.groups(device_codes, radius))
        times, result = [], None
        for _ in range(repeats):
            seconds, result = self.synchronized(lambda: engine.groups(device_codes, radius))
            times.append(seconds)
        stats, plan = engine.stats, engine.stats.plan
        record = {
            "seconds": min(times),
            "seconds_all": times,
            "first_call_seconds": first,
            "plan": None
            if plan is None
            else {"bounds": list(plan.bounds), "block_radius": plan.block_radius},
            "launches": dict(stats.launches),
            "reruns": stats.reruns,
            "big_bucket_pairs": stats.big_bucket_pairs,
        }
        inverse, unique_pairs = result
        return record, _host(inverse), _host(unique_pairs)

    def knn(
        self, stored: np.ndarray, queries: np.ndarray, k: int, repeats: int
    ) -> tuple[dict[str, Any], np.ndarray, np.ndarray]:
        """Best of ``repeats`` after a warm-up (100 queries), device-resident; host results."""
        import cupy

        from gpusimhash._gpu import knn as gpu_knn

        engine = gpu_knn.device_knn()
        device_stored, device_queries = cupy.asarray(stored), cupy.asarray(queries)
        first, _ = self.synchronized(lambda: engine.knn(device_stored, device_queries[:100], k))
        times, result = [], None
        for _ in range(repeats):
            seconds, result = self.synchronized(
                lambda: engine.knn(device_stored, device_queries, k)
            )
            times.append(seconds)
        distances, positions = result
        record = {"seconds": min(times), "seconds_all": times, "first_call_seconds": first}
        return record, _host(distances), _host(positions)


class CpuStandIn:
    """The CPU path where the GPU would be (a dry run): same methods, CPU answers."""

    name = "cpu stand-in (dry run: no GPU)"

    def synchronized(self, function: Callable[[], Any]) -> tuple[float, Any]:
        start = time.perf_counter()
        result = function()
        return time.perf_counter() - start, result

    def fingerprint_text(
        self, texts: Sequence[str] | Utf8Texts, featurizer: TextFeaturizer, bits: int, seed: int
    ) -> np.ndarray:
        return cpu_fingerprint_batch(featurizer.transform(texts), bits=bits, seed=seed)

    def fingerprint_batch(self, batch: FeatureBatch, bits: int, seed: int) -> np.ndarray:
        return cpu_fingerprint_batch(batch, bits=bits, seed=seed)

    def back_to_back(self, batches: Sequence[FeatureBatch], bits: int, seed: int) -> list[Any]:
        return [cpu_fingerprint_batch(batch, bits=bits, seed=seed) for batch in batches]

    def pair_similarities(
        self, features: Features, left: np.ndarray, right: np.ndarray
    ) -> tuple[np.ndarray, ...]:
        from gpusimhash._cpu._verify_loops import pair_similarities

        return pair_similarities(*features, left, right)

    def join(self, codes: np.ndarray, radius: int, repeats: int) -> tuple[dict[str, Any], Any, Any]:
        from gpusimhash import near_duplicate_groups

        times, groups = [], None
        for _ in range(repeats):
            seconds, groups = self.synchronized(
                lambda: near_duplicate_groups(codes, max_distance=radius, device="cpu")
            )
            times.append(seconds)
        return {"seconds": min(times), "seconds_all": times}, groups.inverse, groups.unique_pairs

    def knn(
        self, stored: np.ndarray, queries: np.ndarray, k: int, repeats: int
    ) -> tuple[dict[str, Any], np.ndarray, np.ndarray]:
        import faiss

        index = faiss.IndexBinaryFlat(stored.shape[1] * 8)
        index.add(stored)
        seconds, (distances, positions) = self.synchronized(lambda: index.search(queries, k))
        return {"seconds": seconds}, distances.astype(np.int32), positions.astype(np.int64)


def side(dry_run: bool) -> Gpu | CpuStandIn:
    """The GPU, or the CPU stand-in in a dry run."""
    return CpuStandIn() if dry_run else Gpu()

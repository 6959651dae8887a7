"""The radius join and kNN on a real GPU (CuPy), against the CPU join and FAISS: exact equality.

Skipped without CuPy and a CUDA device (``pytest -m gpu`` on a GPU machine; run.sh in
bench/device_check runs them). The emulated tests (test_join_emulated.py) cover the same
kernels on the CPU; these check the compiled kernels, real warps and CuPy's sorts.
"""

from __future__ import annotations

from typing import Any

import faiss
import numpy as np
import pytest

from gpusimhash import SimHashIndex, near_duplicate_groups, near_duplicates
from gpusimhash._gpu import join as gpu_join
from gpusimhash._gpu import knn as gpu_knn

pytestmark = pytest.mark.gpu


def _clustered(rng: np.random.Generator, n: int, bits: int, flips: int) -> np.ndarray:
    """Noisy copies of random centres (pairs at every small distance), some exact copies."""
    centres = rng.integers(0, 256, (max(1, n // 4), bits // 8), dtype=np.uint8)
    codes = centres[rng.integers(0, centres.shape[0], n)]
    noise = rng.random((n, bits)) < flips / bits
    return codes ^ np.packbits(noise, axis=1, bitorder="little")


def _assert_same_groups(codes: Any, radius: int, **kwargs: Any) -> None:
    host = codes.get() if hasattr(codes, "get") else codes
    expected = near_duplicate_groups(host, max_distance=radius, device="cpu")
    groups = near_duplicate_groups(codes, max_distance=radius, device="gpu", **kwargs)
    np.testing.assert_array_equal(groups.inverse, expected.inverse)
    np.testing.assert_array_equal(groups.unique_pairs, expected.unique_pairs)


@pytest.mark.parametrize(("bits", "radius"), [(8, 1), (64, 3), (64, 6), (128, 18), (256, 45)])
@pytest.mark.parametrize("n", [1, 255, 257, 20_000])
def test_join_matches_the_cpu(bits: int, radius: int, n: int) -> None:
    rng = np.random.default_rng(bits * n)
    _assert_same_groups(_clustered(rng, n, bits, radius // 2 + 1), radius)


def test_device_codes_and_identical_inputs() -> None:
    import cupy

    rng = np.random.default_rng(1)
    codes = cupy.asarray(_clustered(rng, 5000, 128, 6))
    _assert_same_groups(codes, 18)  # device="auto" would choose the GPU too
    same = cupy.zeros((100_000, 8), dtype=cupy.uint8)
    groups = near_duplicate_groups(same, max_distance=3)
    assert groups.n_unique == 1
    assert len(groups.unique_pairs) == 0
    np.testing.assert_array_equal(
        near_duplicates(same[:300], max_distance=0),
        near_duplicates(same[:300].get(), max_distance=0),
    )


@pytest.mark.parametrize("blocks", [0, 4, 8])
def test_rare_paths_on_the_device(blocks: int) -> None:
    """Tiny capacities and bucket caps: overflow reruns and oversized buckets on real warps."""
    import cupy

    from gpusimhash._gpu import kernels

    rng = np.random.default_rng(blocks)
    codes = _clustered(rng, 3000, 64, 3)
    settings = gpu_join.JoinSettings(
        blocks=blocks,
        pair_capacity=3,
        pairs_per_code=0.0,
        big_capacity=1,
        big_pairs=16,
        tile_cols=8,
        max_key_bits=16,
    )
    join = gpu_join.DeviceJoin(cupy, kernels.Launcher(), settings)
    inverse, unique_pairs = join.groups(cupy.asarray(codes), 6)
    expected = near_duplicate_groups(codes, max_distance=6, device="cpu")
    np.testing.assert_array_equal(inverse.get(), expected.inverse)
    np.testing.assert_array_equal(unique_pairs.get(), expected.unique_pairs)
    assert join.stats.reruns > 0


@pytest.mark.parametrize(("bits", "k"), [(8, 1024), (64, 10), (128, 100), (1024, 5)])
def test_knn_matches_faiss_flat(bits: int, k: int) -> None:
    rng = np.random.default_rng(bits)
    stored = _clustered(rng, 30_001, bits, 4)
    queries = np.concatenate([stored[:500], _clustered(rng, 500, bits, 4)])
    index = faiss.IndexBinaryFlat(bits)
    index.add(stored)
    expected_distances, expected_positions = index.search(queries, k)
    distances, positions = gpu_knn.knn(stored, queries, k)
    np.testing.assert_array_equal(distances, expected_distances)
    np.testing.assert_array_equal(positions, expected_positions)


def test_index_search_on_the_gpu() -> None:
    rng = np.random.default_rng(5)
    codes = _clustered(rng, 10_000, 64, 3)
    gpu, cpu = SimHashIndex(bits=64, device="gpu"), SimHashIndex(bits=64)
    for index in (gpu, cpu):
        index.add(codes)
        index.remove(np.arange(0, 10_000, 7))
    for got, expected in zip(gpu.search(codes[:300], 20), cpu.search(codes[:300], 20), strict=True):
        np.testing.assert_array_equal(got, expected)

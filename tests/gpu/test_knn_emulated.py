"""GPU kNN (kernels/knn.cu), run on the CPU through g++ (cuda_emu): FAISS flat's results exactly.

The same ``DeviceKnn`` that drives CuPy on a GPU drives here NumPy arrays and the emulated kernel;
tiny query tiles, chunks and shared-memory limits send small inputs down every path.
"""

from __future__ import annotations

import ctypes
from typing import Any

import faiss
import numpy as np
import pytest
from cuda_emu import emulator
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusimhash._gpu.knn import DeviceKnn, KnnSettings


def _knn(library: ctypes.CDLL, threads: int = 32, grid: int = 3, **overrides: Any) -> DeviceKnn:
    launcher = emulator.EmulatedLauncher(library, threads_per_block=threads, max_blocks=grid)
    return DeviceKnn(np, launcher, KnnSettings(**overrides))


def _faiss_knn(stored: np.ndarray, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    index = faiss.IndexBinaryFlat(stored.shape[1] * 8)
    index.add(stored)
    return index.search(queries, k)


@pytest.mark.parametrize(
    ("bits", "n", "k", "overrides"),
    [
        (8, 300, 1024, {"chunk": 64, "query_tile": 4}),  # k > n, heavy ties
        (64, 257, 10, {"chunk": 32, "query_tile": 3}),
        (128, 513, 100, {}),
        (24, 100, 7, {}),
        (256, 90, 90, {"chunk": 32}),
        (1024, 70, 5, {"shared_bytes": 4096}),  # template 0, one query per block
    ],
)
@pytest.mark.parametrize("threads", [32, 64])
def test_knn_matches_faiss_flat(
    emulated_kernels: ctypes.CDLL,
    bits: int,
    n: int,
    k: int,
    overrides: dict[str, int],
    threads: int,
) -> None:
    rng = np.random.default_rng(bits + n)
    stored = rng.integers(0, 256, (n, bits // 8), dtype=np.uint8)
    stored[n // 2 :] = stored[: n - n // 2]  # duplicates: ties broken by position
    queries = rng.integers(0, 256, (37, bits // 8), dtype=np.uint8)
    queries[:15] = stored[rng.integers(0, n, 15)]
    knn = _knn(emulated_kernels, threads=threads, **overrides)
    distances, positions = knn.knn(stored, queries, k)
    expected_distances, expected_positions = _faiss_knn(stored, queries, min(k, n))
    np.testing.assert_array_equal(distances[:, : min(k, n)], expected_distances)
    np.testing.assert_array_equal(positions[:, : min(k, n)], expected_positions)
    assert (distances[:, n:] == -1).all()
    assert (positions[:, n:] == -1).all()


@settings(max_examples=20, deadline=None)
@given(
    width=st.integers(1, 10),
    n=st.integers(1, 80),
    n_queries=st.integers(1, 9),
    k=st.integers(1, 90),
    chunk=st.sampled_from([32, 64]),
    query_tile=st.integers(1, 5),
    seed=st.integers(0, 2**32 - 1),
)
def test_knn_property(
    emulated_kernels: ctypes.CDLL,
    width: int,
    n: int,
    n_queries: int,
    k: int,
    chunk: int,
    query_tile: int,
    seed: int,
) -> None:
    rng = np.random.default_rng(seed)
    stored = rng.integers(0, 4, (n, width), dtype=np.uint8)  # few values: many ties
    queries = rng.integers(0, 4, (n_queries, width), dtype=np.uint8)
    knn = _knn(emulated_kernels, chunk=chunk, query_tile=query_tile)
    distances, positions = knn.knn(stored, queries, k)
    expected_distances, expected_positions = _faiss_knn(stored, queries, min(k, n))
    np.testing.assert_array_equal(distances[:, : min(k, n)], expected_distances)
    np.testing.assert_array_equal(positions[:, : min(k, n)], expected_positions)


def test_knn_all_ties_keeps_the_first_positions(emulated_kernels: ctypes.CDLL) -> None:
    stored = np.zeros((100, 8), dtype=np.uint8)
    queries = np.zeros((2, 8), dtype=np.uint8)
    queries[1, 0] = 1
    distances, positions = _knn(emulated_kernels, chunk=32).knn(stored, queries, 40)
    np.testing.assert_array_equal(positions, np.tile(np.arange(40), (2, 1)))
    np.testing.assert_array_equal(distances, np.repeat([[0], [1]], 40, axis=1))


def test_knn_empty(emulated_kernels: ctypes.CDLL) -> None:
    knn = _knn(emulated_kernels)
    distances, positions = knn.knn(np.zeros((0, 8), np.uint8), np.zeros((3, 8), np.uint8), 4)
    assert distances.shape == positions.shape == (3, 4)
    assert (positions == -1).all()
    distances, positions = knn.knn(np.zeros((5, 8), np.uint8), np.zeros((0, 8), np.uint8), 4)
    assert distances.shape == (0, 4)
    assert knn.launches == {}

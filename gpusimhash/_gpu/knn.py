"""Brute-force kNN on the GPU with FAISS flat's results, written once over an array module.

``knn_topk`` (kernels/knn.cu) gives FAISS ``IndexBinaryFlat.search``'s results: the ``k``
smallest distances, ties broken by position. Like ``DeviceJoin``, ``DeviceKnn`` drives CuPy and
the compiled kernel on a device, and NumPy with the same kernel source compiled by g++ in the
tests (tests/gpu/cuda_emu). `knn` at the end is the CuPy layer `gpusimhash.SimHashIndex` calls:
host or device codes in, host results out.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np

from gpusimhash import _backend
from gpusimhash._gpu import kernels
from gpusimhash._gpu.join import WARP, JoinLauncher, device_codes, padded_words


@dataclass(frozen=True)
class KnnSettings:
    """Sizes of ``knn_topk``; the tests make them tiny to reach every path.

    Attributes
    ----------
    query_tile, chunk : int
        Queries per block and stored codes per shared-memory chunk, at most.
    shared_bytes : int
        Dynamic shared memory per block, at most (``knn_topk`` takes more only when one query
        and 32 codes need more: wide codes with a tiny setting).
    """

    query_tile: int = 32
    chunk: int = 512
    shared_bytes: int = 48 * 1024


def knn_shared_bytes(n_words: int, bits: int, query_tile: int, chunk: int) -> int:
    """Dynamic shared memory of ``knn_topk`` (its layout in kernels/knn.cu)."""
    return 8 * n_words * (query_tile + chunk) + 4 * query_tile * (bits + 1 + 4)


def knn_tiles(n_words: int, bits: int, settings: KnnSettings) -> tuple[int, int]:
    """Size ``knn_topk``'s query tile and stored-code chunk to fit the shared memory.

    Parameters
    ----------
    n_words, bits : int
        Padded words per code and the code length.
    settings : KnnSettings
        Upper bounds.

    Returns
    -------
    query_tile, chunk : int
        Both at least 1.
    """
    chunk = settings.chunk
    query_tile = settings.query_tile
    while (
        query_tile > 1
        and knn_shared_bytes(n_words, bits, query_tile, chunk) > settings.shared_bytes
    ):
        query_tile //= 2
    while (
        chunk > WARP and knn_shared_bytes(n_words, bits, query_tile, chunk) > settings.shared_bytes
    ):
        chunk //= 2
    return query_tile, chunk


class DeviceKnn:
    """Exact kNN over an array module and a kernel launcher.

    Parameters
    ----------
    xp : module
        ``cupy`` on a GPU; ``numpy`` with an emulated launcher in the tests.
    launch : JoinLauncher
        Runs the kernel of ``kernels.KERNELS["knn.cu"]``.
    settings : KnnSettings, optional
        Sizes (defaults for a GPU).
    """

    def __init__(
        self, xp: ModuleType, launch: JoinLauncher, settings: KnnSettings | None = None
    ) -> None:
        self.xp = xp
        self.launch = launch
        self.settings = KnnSettings() if settings is None else settings
        self.launches: dict[str, int] = {}  # kernel launches by name (tests, benchmarks)

    def knn(self, stored: Any, queries: Any, k: int) -> tuple[Any, Any]:
        """Find the ``k`` nearest stored codes of each query, ties by position (as FAISS flat).

        Parameters
        ----------
        stored : array, shape (n, width), dtype uint8
            Searched codes (an ``xp`` array).
        queries : array, shape (q, width), dtype uint8
            Query codes.
        k : int
            Neighbours per query, ``>= 1``.

        Returns
        -------
        distances : array, shape (q, k), dtype int32
            Ascending per row; ``-1`` past the ``n`` stored codes.
        positions : array, shape (q, k), dtype int64
            Rows of ``stored``; ``-1`` likewise.

        Raises
        ------
        ValueError
            ``2**31`` stored codes or more (the kernel counts them in int32).
        """
        xp = self.xp
        n_stored, n_queries = stored.shape[0], queries.shape[0]
        if n_stored >= 2**31:
            raise ValueError(f"at most 2**31 - 1 stored codes per search, got {n_stored}")
        distances = xp.full((n_queries, k), -1, dtype=xp.int32)
        positions = xp.full((n_queries, k), -1, dtype=xp.int64)
        found = min(k, n_stored)
        if found == 0 or n_queries == 0:
            return distances, positions
        stored_words, template = padded_words(xp, stored)
        query_words, _ = padded_words(xp, queries)
        n_words = stored_words.shape[1]
        bits = stored.shape[1] * 8
        query_tile, chunk = knn_tiles(n_words, bits, self.settings)
        shared = knn_shared_bytes(n_words, bits, query_tile, chunk)
        out_distances = xp.empty((n_queries, found), dtype=xp.int32)
        out_positions = xp.empty((n_queries, found), dtype=xp.int64)
        args = (
            stored_words,
            np.int64(n_stored),
            query_words,
            np.int64(n_queries),
            np.int32(n_words),
            np.int32(bits),
            np.int32(found),
            np.int32(query_tile),
            np.int32(chunk),
            out_distances,
            out_positions,
        )
        n_tiles = -(-n_queries // query_tile)
        name = f"knn_topk<{template}>"
        self.launches[name] = self.launches.get(name, 0) + 1
        self.launch(
            name,
            n_tiles * self.launch.threads_per_block,
            args,
            shared_bytes=shared,
        )
        keys = out_distances.astype(xp.int64) * n_stored + out_positions
        keys.sort(axis=1)
        distances[:, :found] = keys // n_stored
        positions[:, :found] = keys % n_stored
        return distances, positions


# ---- the CuPy layer ---------------------------------------------------------------------------


@functools.cache
def device_knn() -> DeviceKnn:
    """Return the process's GPU kNN: CuPy and the compiled kernel.

    Raises
    ------
    RuntimeError
        No usable GPU.
    """
    return DeviceKnn(_backend.require_gpu(), kernels.Launcher())


def knn(stored: Any, queries: Any, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Brute-force kNN on the GPU: host or device codes in, host results out.

    Parameters
    ----------
    stored : ndarray or cupy.ndarray, shape (n, bits // 8), dtype uint8
        Searched codes (keep a device copy to search it many times).
    queries : ndarray or cupy.ndarray, shape (q, bits // 8), dtype uint8
        Query codes of the same width.
    k : int
        Neighbours per query, ``>= 1``.

    Returns
    -------
    distances : ndarray, shape (q, k), dtype int32
    positions : ndarray, shape (q, k), dtype int64
        FAISS ``IndexBinaryFlat.search``'s results (ties by position); ``-1`` past ``n``.

    Raises
    ------
    ValueError
        Queries of another width.
    """
    stored, queries = device_codes(stored, "stored codes"), device_codes(queries, "queries")
    if stored.shape[1] != queries.shape[1]:
        raise ValueError(
            f"queries must have {stored.shape[1]} bytes per row, got {queries.shape[1]}"
        )
    distances, positions = device_knn().knn(stored, queries, k)
    return _backend.to_host(distances), _backend.to_host(positions)

"""Exact near-duplicate join over packed SimHash codes.

Every pair of codes within a Hamming radius is found exactly. Identical codes are collapsed
first, so a corpus with thousands of copies of one document costs one code inside the search.
On the CPU the distinct codes go to multi-index hashing (`gpusimhash.search.mih`): blocks of
bits probed within per-block thresholds that together cover the radius, chosen by a planner
from the measured bucket occupancy of the codes, or a tiled brute force where that is cheaper.
`near_duplicate_components` links codes into clusters without emitting pairs. On a GPU the join
runs in `gpusimhash._gpu.join`; both give the same pairs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpusimhash import _backend, _validate
from gpusimhash.codes import code_words
from gpusimhash.search import mih
from gpusimhash.search._join import DuplicateGroups, collapse, first_seen_labels, resolve_radius
from gpusimhash.search.graph import CodeGraph, adjacency

__all__ = [
    "near_duplicate_components",
    "near_duplicate_graph",
    "near_duplicate_groups",
    "near_duplicates",
]


def near_duplicates(
    codes: Any,
    *,
    max_distance: int | None = None,
    min_cosine: float | None = None,
    device: str = "auto",
) -> np.ndarray:
    """Find every pair of codes within a Hamming radius, exactly.

    Parameters
    ----------
    codes : ndarray or cupy.ndarray, shape (n, bits // 8), dtype uint8
        Packed fingerprints (FAISS layout), on the host or on a GPU.
    max_distance : int, optional
        Hamming radius: pairs with ``hamming(codes[i], codes[j]) <= max_distance``.
    min_cosine : float, optional
        Alternatively, minimum estimated cosine ``cos(pi * d / bits)``; converted with
        `cosine_radius`. Give exactly one of the two.
    device : {"auto", "cpu", "gpu"}
        Where the join runs: ``"auto"`` on the GPU when `codes` are a CuPy array, else on the
        CPU; ``"gpu"`` copies host codes to the device, ``"cpu"`` device codes to the host.
        The result is the same NumPy array wherever it is computed.

    Returns
    -------
    pairs : ndarray, shape (m, 2), dtype int64
        Every pair ``(i, j)``, ``i < j``, within the radius: no miss, no extra, no repeat,
        sorted by ``i`` then ``j``. A group of ``g`` identical codes alone yields
        ``g * (g - 1) / 2`` pairs; use `near_duplicate_groups` or
        `gpusimhash.cluster_near_duplicates` to avoid materializing them.

    Raises
    ------
    TypeError
        `codes` not a uint8 array.
    ValueError
        `codes` not 2-D, both or neither threshold given, a threshold out of range, or an
        unknown `device`.
    RuntimeError
        ``device="gpu"``, or CuPy codes, where no GPU is usable.

    Examples
    --------
    >>> import numpy as np
    >>> codes = np.array([[0b0000], [0b0111], [0b0001], [0b0000]], dtype=np.uint8)
    >>> near_duplicates(codes, max_distance=1).tolist()
    [[0, 2], [0, 3], [2, 3]]
    """
    groups = near_duplicate_groups(
        codes, max_distance=max_distance, min_cosine=min_cosine, device=device
    )
    return groups.pairs()


def near_duplicate_groups(
    codes: Any,
    *,
    max_distance: int | None = None,
    min_cosine: float | None = None,
    device: str = "auto",
) -> DuplicateGroups:
    """Find near-duplicates in collapsed form, without expanding identical codes into pairs.

    Parameters and thresholds are those of `near_duplicates`.

    Returns
    -------
    groups : DuplicateGroups
        Distinct-code index of every input code and the pairs of distinct codes within the
        radius; ``groups.pairs()`` gives the output of `near_duplicates`. NumPy arrays, the
        same on either device.

    Raises
    ------
    TypeError
        `codes` not a uint8 array.
    ValueError
        `codes` not 2-D, both or neither threshold given, a threshold out of range, or an
        unknown `device`.
    RuntimeError
        ``device="gpu"``, or CuPy codes, where no GPU is usable.

    Examples
    --------
    >>> import numpy as np
    >>> codes = np.zeros((1000, 8), dtype=np.uint8)
    >>> groups = near_duplicate_groups(codes, max_distance=3)
    >>> groups.n_unique, len(groups.unique_pairs)
    (1, 0)
    """
    if _on_gpu(codes, device):
        from gpusimhash._gpu import join as gpu_join

        codes = gpu_join.device_codes(codes)
        radius = resolve_radius(
            codes.shape[1] * 8, max_distance=max_distance, min_cosine=min_cosine
        )
        inverse, unique_pairs = gpu_join.groups(codes, radius)
        return DuplicateGroups(inverse=inverse, unique_pairs=unique_pairs, max_distance=radius)
    codes = _validate.codes(_backend.to_host(codes))
    bits = codes.shape[1] * 8
    radius = resolve_radius(bits, max_distance=max_distance, min_cosine=min_cosine)
    unique_words, inverse = collapse(code_words(codes))
    unique_pairs = mih.join_pairs(unique_words, bits, radius)
    return DuplicateGroups(inverse=inverse, unique_pairs=unique_pairs, max_distance=radius)


def near_duplicate_graph(
    codes: Any,
    *,
    max_distance: int | None = None,
    min_cosine: float | None = None,
    device: str = "auto",
) -> CodeGraph:
    """Find near-duplicates as a graph of distinct codes, never holding int64 pair arrays.

    The pairs of `near_duplicate_groups` as a compact adjacency (`gpusimhash.search.graph`):
    on the CPU each worker's pairs are narrowed to int32 as they are found and spilled to a
    temporary file until counted, so the peak is the adjacency (8 bytes per pair of distinct
    codes) and one chunk of pairs; on a GPU the device join's pairs are converted.

    Parameters
    ----------
    codes, max_distance, min_cosine, device
        As in `near_duplicates`.

    Returns
    -------
    CodeGraph
        Distinct code of every input code, and each distinct code's neighbours within the
        radius.

    Raises
    ------
    TypeError, ValueError, RuntimeError
        As `near_duplicate_groups`.

    Examples
    --------
    >>> import numpy as np
    >>> codes = np.array([[0b0000], [0b0111], [0b0001], [0b0000]], dtype=np.uint8)
    >>> graph = near_duplicate_graph(codes, max_distance=1)
    >>> graph.inverse.tolist(), graph.neighbours.tolist(), graph.document_pairs()
    ([0, 2, 1, 0], [1, 0], 3)
    """
    if _on_gpu(codes, device):
        groups = near_duplicate_groups(
            codes, max_distance=max_distance, min_cosine=min_cosine, device=device
        )
        return CodeGraph.from_groups(groups)
    codes = _validate.codes(_backend.to_host(codes))
    bits = codes.shape[1] * 8
    radius = resolve_radius(bits, max_distance=max_distance, min_cosine=min_cosine)
    unique_words, inverse = collapse(code_words(codes))
    parts = mih.join_parts(unique_words, bits, radius, dtype=np.int32)
    offsets, neighbours = adjacency(parts, unique_words.shape[0])
    return CodeGraph(inverse, offsets, neighbours, radius)


def near_duplicate_components(
    codes: Any, *, max_distance: int | None = None, min_cosine: float | None = None
) -> np.ndarray:
    """Label the clusters of codes linked by chains of near-duplicates, without listing pairs.

    The components of the graph whose edges are the pairs `near_duplicates` returns, computed
    on the CPU without emitting the pairs: codes already known to share a cluster are not
    compared again, so dense clusters cost about as much as sparse ones.

    Parameters
    ----------
    codes : ndarray, shape (n, bits // 8), dtype uint8
        Packed fingerprints (CuPy codes are copied to the host).
    max_distance : int, optional
        Hamming radius of a link.
    min_cosine : float, optional
        Alternatively, the minimum estimated cosine of a link. Give exactly one of the two.

    Returns
    -------
    labels : ndarray, shape (n,), dtype int64
        Cluster of every code, numbered ``0, 1, ...`` in order of each cluster's first code:
        the labels `gpusimhash.cluster_labels` gives for ``near_duplicates(codes, ...)``.

    Raises
    ------
    TypeError
        `codes` not a uint8 array.
    ValueError
        `codes` not 2-D, both or neither threshold given, or a threshold out of range.

    Examples
    --------
    >>> import numpy as np
    >>> codes = np.array([[0b1111_0000], [0b0000], [0b0001], [0b0011], [0b0000]], np.uint8)
    >>> near_duplicate_components(codes, max_distance=1).tolist()
    [0, 1, 1, 1, 1]
    """
    codes = _validate.codes(_backend.to_host(codes))
    bits = codes.shape[1] * 8
    radius = resolve_radius(bits, max_distance=max_distance, min_cosine=min_cosine)
    unique_words, inverse = collapse(code_words(codes))
    roots = mih.join_roots(unique_words, bits, radius)
    return first_seen_labels(roots[inverse])


def _on_gpu(codes: object, device: str) -> bool:
    """Whether the join runs on the GPU: ``device`` or, for ``"auto"``, where `codes` are."""
    device = _validate.device(device)
    if device == "cpu" or (device == "auto" and not _backend.is_device_array(codes)):
        return False
    from gpusimhash._gpu import probe

    if device == "gpu":
        probe.require(("join",))
        return True
    return probe.trusted(("join",))

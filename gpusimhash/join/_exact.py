"""Exact near-duplicate join over packed SimHash codes.

Every pair of codes within a Hamming radius is found exactly. Identical codes are collapsed
first, so a corpus with thousands of copies of one document costs one code inside the search.
On the CPU the distinct codes go to multi-index hashing (``_mih``): blocks of
bits probed within per-block thresholds that together cover the radius, chosen by a planner
from the measured bucket occupancy of the codes, or a tiled brute force where that is cheaper.
`near_duplicate_components` links codes into clusters without emitting pairs. On a GPU the join
runs in ``gpusimhash._gpu.join``; both give the same pairs. With ``recall=``, the approximate join
of ``_lsh`` runs instead.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpusimhash import _backend, _validate
from gpusimhash.codes import code_words
from gpusimhash.join import _mih as mih
from gpusimhash.join._graph import CodeGraph, adjacency
from gpusimhash.join._groups import DuplicateGroups, collapse, first_seen_labels
from gpusimhash.join._lsh import lsh_groups
from gpusimhash.join._radius import resolve_radius


def near_duplicates(
    codes: Any,
    *,
    max_distance: int | None = None,
    min_cosine: float | None = None,
    recall: float | None = None,
    seed: int = 0,
    max_tables: int = 256,
    device: str = "auto",
) -> np.ndarray:
    """Find every pair of codes within a Hamming radius, exactly, or each with a set recall.

    Parameters
    ----------
    codes : ndarray or cupy.ndarray, shape (n, bits // 8), dtype uint8
        Packed fingerprints (FAISS layout), on the host or on a GPU.
    max_distance : int, optional
        Hamming radius: pairs with ``hamming(codes[i], codes[j]) <= max_distance``.
    min_cosine : float, optional
        Alternatively, minimum estimated cosine ``cos(pi * d / bits)``; converted with
        `cosine_radius`. Give exactly one of the two.
    recall : float, optional
        The approximate join (bit-sampling LSH, faster at large radii, on the CPU): every pair
        within the radius is found with probability at least `recall`, in ``(0, 1)``, over the
        random choice of sampled bits; identical codes always pair up, and no pair outside the
        radius is ever returned. Default: the exact join.
    seed : int
        With `recall`: seed in ``[0, 2**32)`` of the bit sampling and of the sample of codes
        that sizes it (results are deterministic for given codes and settings).
    max_tables : int
        With `recall`: most hash tables to use. Where no key length reaches `recall` within it
        (radii close to ``bits``), the exact join runs instead.
    device : {"auto", "cpu", "gpu"}
        Where the exact join runs: ``"auto"`` on the GPU when `codes` are a CuPy array, else on
        the CPU; ``"gpu"`` copies host codes to the device, ``"cpu"`` device codes to the host.
        The result is the same NumPy array wherever it is computed. With `recall`, ``"auto"``
        or ``"cpu"``.

    Returns
    -------
    pairs : ndarray, shape (m, 2), dtype int64
        Every pair ``(i, j)``, ``i < j``, within the radius (with `recall`, a subset of them),
        no repeat, sorted by ``i`` then ``j``. A group of ``g`` identical codes alone yields
        ``g * (g - 1) / 2`` pairs; use `near_duplicate_groups` or `near_duplicate_components`
        to avoid materializing them.

    Raises
    ------
    TypeError
        `codes` not a uint8 array, or a non-numeric argument.
    ValueError
        `codes` not 2-D, both or neither threshold given, a threshold out of range, `recall`
        outside ``(0, 1)``, `seed` outside ``[0, 2**32)``, `max_tables` below 1, an unknown
        `device`, or ``device="gpu"`` with `recall`.
    RuntimeError
        ``device="gpu"``, or CuPy codes, where no GPU is usable.

    Examples
    --------
    >>> import numpy as np
    >>> codes = np.array([[0b0000], [0b0111], [0b0001], [0b0000]], dtype=np.uint8)
    >>> near_duplicates(codes, max_distance=1).tolist()
    [[0, 2], [0, 3], [2, 3]]
    >>> rng = np.random.default_rng(0)
    >>> codes = rng.integers(0, 256, (1000, 32), dtype=np.uint8)
    >>> codes[1] = codes[0]
    >>> codes[2, :4] = ~codes[0, :4]  # 32 bits away from code 0
    >>> codes[2, 4:] = codes[0, 4:]
    >>> near_duplicates(codes, max_distance=40, recall=0.99).tolist()
    [[0, 1], [0, 2], [1, 2]]
    """
    groups = near_duplicate_groups(
        codes,
        max_distance=max_distance,
        min_cosine=min_cosine,
        recall=recall,
        seed=seed,
        max_tables=max_tables,
        device=device,
    )
    return groups.pairs()


def near_duplicate_groups(
    codes: Any,
    *,
    max_distance: int | None = None,
    min_cosine: float | None = None,
    recall: float | None = None,
    seed: int = 0,
    max_tables: int = 256,
    device: str = "auto",
) -> DuplicateGroups:
    """Find near-duplicates in collapsed form, without expanding identical codes into pairs.

    Parameters, thresholds and the guarantee with `recall` are those of `near_duplicates`.

    Returns
    -------
    groups : DuplicateGroups
        Distinct-code index of every input code and the pairs of distinct codes within the
        radius (with `recall`, those found); ``groups.pairs()`` gives the output of
        `near_duplicates`. NumPy arrays, the same on either device.

    Raises
    ------
    TypeError, ValueError, RuntimeError
        As `near_duplicates`.

    Examples
    --------
    >>> import numpy as np
    >>> codes = np.zeros((1000, 8), dtype=np.uint8)
    >>> groups = near_duplicate_groups(codes, max_distance=3)
    >>> groups.n_unique, len(groups.unique_pairs)
    (1, 0)
    """
    if recall is not None:
        return _approximate(codes, max_distance, min_cosine, recall, seed, max_tables, device)
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
    return mih.exact_groups(
        codes, resolve_radius(bits, max_distance=max_distance, min_cosine=min_cosine)
    )


def _approximate(
    codes: Any,
    max_distance: int | None,
    min_cosine: float | None,
    recall: float,
    seed: int,
    max_tables: int,
    device: str,
) -> DuplicateGroups:
    """Run the approximate join of `near_duplicate_groups` on the CPU (device codes copied)."""
    if _validate.device(device) == "gpu":
        raise ValueError("the approximate join (recall=) runs on the CPU: device 'auto' or 'cpu'")
    codes = _validate.codes(_backend.to_host(codes))
    radius = resolve_radius(codes.shape[1] * 8, max_distance=max_distance, min_cosine=min_cosine)
    return lsh_groups(codes, radius, recall=recall, seed=seed, max_tables=max_tables)


def near_duplicate_graph(
    codes: Any,
    *,
    max_distance: int | None = None,
    min_cosine: float | None = None,
    recall: float | None = None,
    seed: int = 0,
    max_tables: int = 256,
    device: str = "auto",
) -> CodeGraph:
    """Find near-duplicates as a graph of distinct codes, never holding int64 pair arrays.

    The pairs of `near_duplicate_groups` as a compact adjacency (`CodeGraph`): on the CPU each
    worker's pairs are narrowed to int32 as they are found and spilled to a temporary file until
    counted, so the peak is the adjacency (8 bytes per pair of distinct codes) and one chunk of
    pairs; on a GPU, and with `recall`, the join's pairs are converted.

    Parameters
    ----------
    codes, max_distance, min_cosine, recall, seed, max_tables, device
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
    if recall is not None or _on_gpu(codes, device):
        groups = near_duplicate_groups(
            codes,
            max_distance=max_distance,
            min_cosine=min_cosine,
            recall=recall,
            seed=seed,
            max_tables=max_tables,
            device=device,
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

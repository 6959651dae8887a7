"""Approximate near-duplicate join for large Hamming radii: bit-sampling LSH with a set recall.

The exact join (``_exact``) is fast at small radii, but its pigeonhole tables grow
combinatorially with the radius. Bit-sampling LSH trades a controlled miss rate for speed: each
of ``L`` tables keys the codes on ``k`` bit positions drawn without replacement, and codes that
share a key become candidate pairs. Two codes ``d`` bits apart share a key in one table with
probability ``C(bits - d, k) / C(bits, k)``, so a pair at the radius ``r`` is missed by all
tables with probability ``(1 - p_r) ** L``; ``L`` is the smallest count that makes this at most
``1 - recall``, and ``k`` minimises the estimated work ``L * (n + expected candidates)``, with the
candidates estimated from the distance distribution of a sample of the codes themselves (real
corpora are clustered, not uniform). Every candidate is checked with an exact popcount, so no
pair outside the radius is ever returned. Identical codes are collapsed first, as in
the exact join, and always pair up.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from gpusimhash import _segments, _validate
from gpusimhash._cpu._threads import threads
from gpusimhash.codes import code_words, hamming_matrix
from gpusimhash.join._groups import DuplicateGroups, collapse, keys_to_pairs, pair_keys
from gpusimhash.join._mih import exact_groups

# Cost model, in seconds per unit on a 2-core x86 machine (only the ratio matters).
_TABLE_COST = 8e-8  # per code per table: key gather, sort, run detection
_CANDIDATE_COST = 3e-8  # per candidate pair: generation and popcount check
_MAX_KEY_BITS = 64  # keys are packed into one uint64
_SAMPLE = 2000  # codes whose pairwise distances estimate the candidate count
_GIANT_RUN = 2048  # runs of equal keys larger than this are joined exactly (bounded memory)
_CHUNK_PAIRS = 1 << 22  # candidate pairs checked per batch (bounds memory)
_PARALLEL_MIN = 50_000  # distinct codes before tables run in parallel threads


def lsh_groups(
    codes: np.ndarray, radius: int, *, recall: Any, seed: Any, max_tables: Any
) -> DuplicateGroups:
    """Join validated host codes approximately within a radius in ``[0, bits]``.

    Parameters
    ----------
    codes : ndarray, shape (n, bits // 8), dtype uint8
        Packed fingerprints, validated.
    radius : int
        Hamming radius.
    recall, seed, max_tables
        As `gpusimhash.near_duplicates` (checked here).

    Returns
    -------
    DuplicateGroups
        Distinct-code index of every code and the pairs of distinct codes found (each within
        the radius; each in-radius pair found with probability at least `recall`).

    Raises
    ------
    TypeError, ValueError
        A bad `recall`, `seed` or `max_tables`.

    Examples
    --------
    >>> import numpy as np
    >>> codes = np.zeros((5, 32), dtype=np.uint8)
    >>> codes[4, :5] = 255  # 40 bits away from the others
    >>> groups = lsh_groups(codes, 45, recall=0.99, seed=0, max_tables=256)
    >>> groups.inverse.tolist(), groups.unique_pairs.tolist()
    ([0, 0, 0, 0, 1], [[0, 1]])
    """
    bits = codes.shape[1] * 8
    recall = _validate.recall(recall)
    seed = _validate.seed(seed)
    max_tables = _validate.positive_integer(max_tables, "max_tables")
    words = code_words(codes)
    unique_words, inverse = collapse(words)
    unique_codes = np.ascontiguousarray(unique_words).view(np.uint8)[:, : codes.shape[1]]
    n = unique_codes.shape[0]
    sample_rng, table_rng = (
        np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(2)
    )
    plan = _plan(unique_codes, radius, recall, max_tables, sample_rng) if n > 1 else (1, 0)
    if plan is None:
        unique_pairs = exact_groups(unique_codes, radius).pairs()
    else:
        key_bits, n_tables = plan
        tables = [np.sort(table_rng.choice(bits, key_bits, replace=False)) for _ in range(n_tables)]
        keys = _search(unique_codes, unique_words, tables, radius)
        unique_pairs = keys_to_pairs(keys, n)
    return DuplicateGroups(inverse=inverse, unique_pairs=unique_pairs, max_distance=radius)


def _collision(bits: int, distance: Any, key_bits: int) -> Any:
    """Probability ``C(bits - d, k) / C(bits, k)`` that codes ``d`` bits apart share a key."""
    d = np.asarray(distance)
    # prod_{i < k} (bits - d - i) / (bits - i), zero once bits - d < k.
    i = np.arange(key_bits)
    factors = np.clip((bits - d[..., None] - i) / (bits - i), 0.0, None)
    return np.prod(factors, axis=-1)


def _plan(
    codes: np.ndarray, radius: int, recall: float, max_tables: int, rng: np.random.Generator
) -> tuple[int, int] | None:
    """Cheapest ``(key_bits, n_tables)`` meeting `recall` at `radius`, or None if none does."""
    n, bits = codes.shape[0], codes.shape[1] * 8
    sample = codes[np.sort(rng.choice(n, min(n, _SAMPLE), replace=False))]
    upper = np.triu_indices(sample.shape[0], k=1)
    histogram = np.bincount(hamming_matrix(sample, sample)[upper], minlength=bits + 1)
    share = histogram / max(histogram.sum(), 1)
    distances = np.arange(bits + 1)
    best, best_cost = None, math.inf
    for key_bits in range(1, min(_MAX_KEY_BITS, bits) + 1):
        p = float(_collision(bits, radius, key_bits))
        if p <= 0.0:
            break
        n_tables = 1 if p >= 1.0 else math.ceil(math.log1p(-recall) / math.log1p(-p))
        if n_tables > max_tables:
            break  # p falls as key_bits grows: longer keys need even more tables
        candidates = float(share @ _collision(bits, distances, key_bits)) * n * (n - 1) / 2
        cost = n_tables * (n * _TABLE_COST + candidates * _CANDIDATE_COST)
        if cost < best_cost:
            best, best_cost = (key_bits, n_tables), cost
    return best


def _search(
    codes: np.ndarray, words: np.ndarray, tables: list[np.ndarray], radius: int
) -> np.ndarray:
    """Sorted unique keys ``a * n + b`` of the verified pairs that share a key in some table."""
    n = codes.shape[0]

    def run(positions: np.ndarray) -> np.ndarray:
        return _table(codes, words, positions, radius)

    found = np.empty(0, dtype=np.int64)
    pending: list[np.ndarray] = []
    results: Iterator[np.ndarray]
    if n < _PARALLEL_MIN:
        results = map(run, tables)
        pool = None
    else:
        # NumPy releases the GIL in gathers, sorts and ufuncs: tables run in parallel threads.
        pool = ThreadPoolExecutor(max_workers=threads())
        results = pool.map(run, tables)
    try:
        for result in results:
            pending.append(result)
            if sum(p.size for p in pending) > max(found.size, _CHUNK_PAIRS):
                found = np.unique(np.concatenate([found, *pending]))
                pending = []
    finally:
        if pool is not None:
            pool.shutdown()
    return np.unique(np.concatenate([found, *pending]))


def _table(codes: np.ndarray, words: np.ndarray, positions: np.ndarray, radius: int) -> np.ndarray:
    """Keys ``a * n + b`` of the pairs within `radius` that agree on the bits `positions`."""
    n = codes.shape[0]
    key = np.zeros(n, dtype=np.uint64)
    for j, position in enumerate(positions):
        bit = (words[:, position // 64] >> np.uint64(position % 64)) & np.uint64(1)
        key |= bit << np.uint64(j)
    order = np.argsort(key)
    sorted_key = key[order]
    change = np.flatnonzero(sorted_key[1:] != sorted_key[:-1]) + 1
    starts = np.concatenate([[0], change])
    sizes = np.diff(np.concatenate([starts, [n]]))
    found: list[np.ndarray] = []
    giant = sizes > _GIANT_RUN
    for start, size in zip(starts[giant], sizes[giant], strict=True):
        members = order[start : start + size]
        local = exact_groups(codes[members], radius).pairs()
        found.append(pair_keys(members[local[:, 0]], members[local[:, 1]], n))
    small = (sizes >= 2) & (sizes <= _GIANT_RUN)
    run_starts, run_sizes = starts[small], sizes[small]
    pair_counts = run_sizes * (run_sizes - 1) // 2
    batch = np.cumsum(pair_counts) // _CHUNK_PAIRS
    for b in np.unique(batch):
        chosen = batch == b
        members = order[_segments.ranges(run_starts[chosen], run_sizes[chosen])]
        pairs = _segments.pairs_within(members, run_sizes[chosen])
        left, right = words[pairs[:, 0]], words[pairs[:, 1]]
        distance = np.bitwise_count(left ^ right).sum(axis=1, dtype=np.int32)
        keep = distance <= radius
        found.append(pair_keys(pairs[keep, 0], pairs[keep, 1], n))
    return np.concatenate(found) if found else np.empty(0, dtype=np.int64)

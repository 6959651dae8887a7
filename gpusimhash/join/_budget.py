"""Guard rail: how many pairs a Hamming radius will produce, estimated before the join.

A join holds every pair of distinct codes it finds (8 bytes each in the adjacency of
`gpusimhash.join.CodeGraph`), and clustering walks them all, so a threshold that pairs up most of
a corpus exhausts memory long before it finishes. `estimate_pair_count` range-searches a random
sample of codes against all of them and scales their degrees, in about a second for a million
codes, so a caller can refuse a threshold before the join runs (`check_budget`, which also
refuses pairs that cannot fit in the memory available, `gpusimhash._memory.check_memory`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpusimhash import _validate
from gpusimhash._memory import check_memory
from gpusimhash.codes import code_words

DEFAULT_SAMPLE_SIZE = 2048
# pairs of distinct codes a join may produce before dedup refuses (800 MB of adjacency)
MAX_CANDIDATE_PAIRS = 100_000_000
# sampled codes range-searched at a time
_QUERIES = 256
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def distinct_codes(codes: Any) -> np.ndarray:
    """Return one row per distinct code, as the join collapses them (order unspecified).

    Rows are told apart by a 64-bit hash of their words: two different codes with the same
    hash (about ``n**2 / 2**65`` for ``n`` codes) count as one, which only lowers an estimate.

    Parameters
    ----------
    codes : ndarray, shape (n, bits // 8), dtype uint8
        Packed fingerprints.

    Returns
    -------
    ndarray, shape (n_distinct, bits // 8), dtype uint8

    Raises
    ------
    TypeError
        Codes that are not uint8.

    Examples
    --------
    >>> import numpy as np
    >>> distinct_codes(np.array([[1], [2], [1]], dtype=np.uint8)).shape
    (2, 1)
    """
    codes = _validate.codes(codes)
    words = code_words(codes)
    key = np.zeros(codes.shape[0], dtype=np.uint64)
    with np.errstate(over="ignore"):
        for column in range(words.shape[1]):
            key = (key ^ words[:, column]) * _GOLDEN
            key ^= key >> np.uint64(29)
    _, first = np.unique(key, return_index=True)
    return codes[np.sort(first)]


def estimate_pair_count(
    codes: Any, max_distance: int, *, sample_size: int = DEFAULT_SAMPLE_SIZE, seed: int = 0
) -> float:
    """Estimate how many pairs of codes lie within a Hamming radius, from sampled degrees.

    ``s = min(n, sample_size)`` codes drawn without replacement are each range-searched against
    all ``n`` codes (FAISS's exhaustive binary search), giving their degrees ``d_i`` (other
    codes within the radius); the estimate is ``n / s * sum(d_i) / 2``: unbiased, and exact
    when ``n <= sample_size``. Every code of a dense cluster of ``k`` is seen with probability
    ``s / n`` and brings all its ``k - 1`` links, so clustered codes are estimated far better
    than by counting the pairs inside a sample (which needs both ends of a pair sampled, and
    misses a cluster of ``k`` codes unless ``k s / n`` is well above 1). The cost is ``s * n``
    comparisons, a second or so for a million codes.

    Parameters
    ----------
    codes : ndarray, shape (n, bits // 8), dtype uint8
        Packed fingerprints (`distinct_codes` first, to count the pairs of distinct codes a
        join produces).
    max_distance : int
        Hamming radius, ``>= 0``.
    sample_size : int
        Codes sampled, at least 2.
    seed : int
        Seed of the sample.

    Returns
    -------
    pairs : float
        Estimated number of pairs ``i < j`` within the radius.

    Raises
    ------
    TypeError
        Codes that are not uint8, or a non-integer radius or sample size.
    ValueError
        A negative radius or a sample size below 2.

    Examples
    --------
    >>> import numpy as np
    >>> codes = np.array([[0], [1], [3], [255]], dtype=np.uint8)
    >>> estimate_pair_count(codes, 1)
    2.0
    """
    codes = _validate.codes(codes)
    radius = _validate._integer(max_distance, "max_distance")
    if radius < 0:
        raise ValueError(f"max_distance must be >= 0, got {radius}")
    sample_size = _validate._integer(sample_size, "sample_size")
    if sample_size < 2:
        raise ValueError(f"sample_size must be >= 2, got {sample_size}")
    n = codes.shape[0]
    if n < 2:
        return 0.0
    queries = codes
    if n > sample_size:
        rng = np.random.default_rng(seed)
        queries = codes[np.sort(rng.choice(n, size=sample_size, replace=False))]
    return scaled_pairs(range_hits(codes, queries, radius), queries.shape[0], n)


def range_hits(codes: np.ndarray, queries: np.ndarray, radius: int) -> int:
    """Count the (query, code) pairs within the radius, a query finding itself included.

    Parameters
    ----------
    codes, queries : ndarray, shape (n, bits // 8) and (s, bits // 8), dtype uint8
        Packed fingerprints, searched exhaustively (FAISS) for each query.
    radius : int
        Hamming radius, ``>= 0``.

    Returns
    -------
    int

    Examples
    --------
    >>> import numpy as np
    >>> codes = np.array([[0], [1], [3], [255]], dtype=np.uint8)
    >>> range_hits(codes, codes, 1)  # 0 finds 0 and 1; 1: 0, 1, 3; 3: 1, 3; 255: itself
    8
    """
    if not codes.shape[0] or not queries.shape[0]:
        return 0
    import faiss  # only where the codes are joined: the feature join's runs never load it

    bits = codes.shape[1] * 8
    index = faiss.IndexBinaryFlat(bits)
    index.add(np.ascontiguousarray(codes))
    hits = 0
    for lo in range(0, queries.shape[0], _QUERIES):
        # strict bound: distances below radius + 1
        lims, _, _ = index.range_search(
            np.ascontiguousarray(queries[lo : lo + _QUERIES]), min(radius, bits) + 1
        )
        hits += int(lims[-1])
    return hits


def scaled_pairs(hits: int, n_queries: int, n: int) -> float:
    """Estimate the pairs within the radius from sampled queries' `range_hits` among ``n`` codes.

    Each query's degree is its hits less itself; the estimate is ``n / s * sum(d_i) / 2``.

    Examples
    --------
    >>> scaled_pairs(8, 4, 4)  # every code a query: the pairs exactly, (0, 1) and (1, 3)
    2.0
    """
    return n / n_queries * (hits - n_queries) / 2 if n_queries else 0.0


def refuse_over_budget(estimate: float, radius: int, bits: int, budget: int) -> None:
    """Raise the guard rail's one-line ValueError where the estimate is over the budget."""
    if estimate > budget:
        raise ValueError(
            f"{_pairs_at(estimate, radius, bits)}, over the budget of {budget:,}: raise the "
            "threshold, lower the candidate recall or pass --force (force=True)"
        )


def _pairs_at(estimate: float, radius: int, bits: int) -> str:
    """Describe an estimate: ``about N candidate pairs at Hamming radius r of b bits``."""
    return f"about {estimate:,.0f} candidate pairs at Hamming radius {radius} of {bits} bits"


def check_budget(
    codes: np.ndarray,
    radius: int,
    *,
    force: bool = False,
    budget: int = MAX_CANDIDATE_PAIRS,
    seed: int = 0,
) -> float:
    """Estimate the pairs of distinct codes within the radius; refuse over budget.

    Parameters
    ----------
    codes : ndarray, shape (n, bits // 8), dtype uint8
        The codes that go into the join.
    radius : int
        Hamming radius.
    force : bool
        Proceed over budget.
    budget : int
        Most pairs allowed without `force`.
    seed : int
        Seed of the sample.

    Returns
    -------
    float
        The estimate.

    Raises
    ------
    ValueError
        Over budget without `force`: one line naming the estimate, the radius and the ways out.
    MemoryError
        The estimated pairs' adjacency cannot fit in the memory available (even with `force`).

    Examples
    --------
    >>> import numpy as np
    >>> codes = np.random.default_rng(0).integers(0, 256, (3000, 8), dtype=np.uint8)
    >>> check_budget(codes, 8)
    0.0
    >>> check_budget(codes, 64, budget=1000)
    Traceback (most recent call last):
    ...
    ValueError: about 4,498,500 candidate pairs at Hamming radius 64 of 64 bits, over the budget of 1,000: raise the threshold, lower the candidate recall or pass --force (force=True)
    """
    distinct = distinct_codes(codes)
    estimate = estimate_pair_count(distinct, radius, seed=seed)
    bits = codes.shape[1] * 8
    if not force:
        refuse_over_budget(estimate, radius, bits, budget)
    # the adjacency: 8 bytes per pair, 16 per distinct code (row start, degree while built)
    check_memory(8 * estimate + 16 * distinct.shape[0], f"{_pairs_at(estimate, radius, bits)} need")
    return estimate

"""Guard rail: how many pairs a Hamming radius will produce, estimated before the join.

A join holds every pair it finds (about 40 bytes each at its peak), so a threshold that pairs up
most of a corpus exhausts memory long before it finishes. `estimate_pair_count` compares all
pairs of a random sample of codes and scales the count, in well under a second for any corpus,
so a caller can refuse a threshold before the join runs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpusimhash import _validate
from gpusimhash.codes import code_words, hamming_matrix

__all__ = ["DEFAULT_SAMPLE_SIZE", "MAX_CANDIDATE_PAIRS", "distinct_codes", "estimate_pair_count"]

DEFAULT_SAMPLE_SIZE = 4096
# pairs of distinct codes a join may produce before dedup refuses (about 4 GB at the join's peak)
MAX_CANDIDATE_PAIRS = 100_000_000
# comparisons per block of the sample's distance matrix
_BLOCK = 1 << 22
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
    """Estimate how many pairs of codes lie within a Hamming radius, from a random sample.

    All pairs of ``s = min(n, sample_size)`` codes drawn without replacement are compared, and
    the count within the radius is scaled by ``n (n - 1) / (s (s - 1))``: an unbiased estimate,
    exact when ``n <= sample_size``. The large counts a guard rail must catch are seen many times
    by the sample; a count the sample misses entirely is most likely below ``3 n**2 / s**2``
    (about 180,000 pairs for a million codes), harmless.

    Parameters
    ----------
    codes : ndarray, shape (n, bits // 8), dtype uint8
        Packed fingerprints (`distinct_codes` first, to count what a join produces).
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
    if n > sample_size:
        rng = np.random.default_rng(seed)
        codes = codes[np.sort(rng.choice(n, size=sample_size, replace=False))]
    s = codes.shape[0]
    within = 0
    step = max(1, _BLOCK // s)
    for start in range(0, s, step):
        block = hamming_matrix(codes[start : start + step], codes[start:]) <= radius
        within += int(np.triu(block, k=1).sum())
    return within * (n * (n - 1)) / (s * (s - 1))

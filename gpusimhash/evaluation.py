"""Quality against ground truth: pair and removal scores, exact cosines of texts, baselines.

The dedup report, the benchmarks and the tests score results here; the corpora with ground truth
live in `gpusimhash.datasets`. `block_candidates` is the seed's blocking, the baseline the joins
are measured against.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from gpusimhash import _segments, _validate
from gpusimhash.text import TextFeaturizer

__all__ = [
    "block_candidates",
    "duplicate_pairs",
    "pair_scores",
    "removal_counts",
    "removal_figures",
    "removal_scores",
    "row_pair_cosines",
    "true_cosines",
]


def duplicate_pairs(truth: np.ndarray) -> np.ndarray:
    """Return every pair ``(i, j)``, ``i < j``, of positions with equal group labels.

    Parameters
    ----------
    truth : array_like of int, shape (n,)
        True group label of each document.

    Returns
    -------
    pairs : ndarray, shape (m, 2), dtype int64
        Sorted lexicographically. ``m`` is the sum of ``size * (size - 1) / 2`` over the true
        groups, so this is for evaluation at moderate sizes.

    Examples
    --------
    >>> duplicate_pairs([5, 1, 5, 5]).tolist()
    [[0, 2], [0, 3], [2, 3]]
    """
    truth = np.asarray(truth)
    order = np.argsort(truth, kind="stable")
    _, starts, counts = np.unique(truth[order], return_index=True, return_counts=True)
    pairs = [
        np.stack(np.triu_indices(c, 1), axis=1) + s
        for s, c in zip(starts, counts, strict=True)
        if c > 1
    ]
    if not pairs:
        return np.empty((0, 2), dtype=np.int64)
    local = np.concatenate(pairs)
    found = np.sort(order[local], axis=1).astype(np.int64)
    return found[np.lexsort((found[:, 1], found[:, 0]))]


def pair_scores(predicted: np.ndarray, truth: np.ndarray) -> dict[str, float | int]:
    """Score predicted duplicate pairs against group labels.

    Parameters
    ----------
    predicted : array_like of int, shape (m, 2)
        Predicted pairs of positions (either order; repeats are counted once).
    truth : array_like of int, shape (n,)
        True group label of each position.

    Returns
    -------
    dict
        ``true_pairs``, ``predicted_pairs``, ``true_positives``, ``precision`` and ``recall``
        (1.0 where the denominator is 0).

    Raises
    ------
    ValueError
        Pairs of the wrong shape or naming positions outside ``truth``.

    Examples
    --------
    >>> pair_scores([[0, 2], [0, 1]], [5, 1, 5, 5])
    {'true_pairs': 3, 'predicted_pairs': 2, 'true_positives': 1, 'precision': 0.5, 'recall': 0.3333333333333333}
    """
    truth = np.asarray(truth)
    predicted = np.asarray(predicted, dtype=np.int64)
    if predicted.size == 0:
        predicted = predicted.reshape(0, 2)
    if predicted.ndim != 2 or predicted.shape[1] != 2:
        raise ValueError(f"predicted pairs must have shape (m, 2), got {predicted.shape}")
    if predicted.size and (predicted.min() < 0 or predicted.max() >= truth.size):
        raise ValueError(f"predicted pairs must name positions in [0, {truth.size})")
    predicted = np.unique(np.sort(predicted, axis=1), axis=0)
    predicted = predicted[predicted[:, 0] != predicted[:, 1]]
    hits = int(np.count_nonzero(truth[predicted[:, 0]] == truth[predicted[:, 1]]))
    _, counts = np.unique(truth, return_counts=True)
    true_pairs = int(np.sum(counts * (counts - 1) // 2))
    return {
        "true_pairs": true_pairs,
        "predicted_pairs": int(predicted.shape[0]),
        "true_positives": hits,
        "precision": hits / predicted.shape[0] if predicted.shape[0] else 1.0,
        "recall": hits / true_pairs if true_pairs else 1.0,
    }


def removal_scores(
    truth: np.ndarray, kept: np.ndarray, pairs: np.ndarray | None = None
) -> dict[str, Any]:
    """Score a deduplication against ground-truth group labels.

    The ground truth keeps one document per group, so the documents to remove are all but one
    of each group; a removed document is correct when it has a duplicate and its group keeps
    some other member.

    Parameters
    ----------
    truth : ndarray, shape (n,), dtype int64
        True group label of each document.
    kept : ndarray, shape (n,), dtype bool
        Which documents the run kept.
    pairs : ndarray, shape (m, 2), optional
        The near-duplicate pairs the run found: adds pair precision and recall.

    Returns
    -------
    dict
        ``true_groups_with_duplicates``, ``documents_to_remove``, ``removed_correctly``,
        ``removal_precision``, ``removal_recall``, and with ``pairs`` also ``true_pairs``,
        ``pairs_found``, ``pair_precision`` and ``pair_recall``.

    Examples
    --------
    >>> truth = np.array([0, 0, 1, 2])
    >>> scores = removal_scores(truth, np.array([True, False, True, False]))
    >>> scores["removal_precision"], scores["removal_recall"]
    (0.5, 1.0)
    """
    n = truth.size
    group_sizes = np.bincount(truth) if n else np.zeros(0, np.int64)
    kept_per_group = np.bincount(truth[kept], minlength=group_sizes.size) if n else group_sizes
    result = removal_figures(removal_counts(group_sizes, kept_per_group))
    if pairs is not None:
        scores = pair_scores(pairs, truth)
        result.update(
            {
                "true_pairs": scores["true_pairs"],
                "pairs_found": scores["predicted_pairs"],
                "pair_precision": scores["precision"],
                "pair_recall": scores["recall"],
            }
        )
    return result


def removal_counts(group_sizes: np.ndarray, kept_per_group: np.ndarray) -> dict[str, int]:
    """Count what `removal_scores` needs from ground-truth groups (counts add up over groups).

    Parameters
    ----------
    group_sizes, kept_per_group : ndarray of int, shape (n_groups,)
        Documents of each true group, and how many of them the run kept.

    Returns
    -------
    dict
        ``true_groups_with_duplicates``, ``documents_to_remove`` (all but one of each group),
        ``removed_correctly`` (removed documents of groups of two or more that keep some
        member) and ``removed``.

    Examples
    --------
    >>> counts = removal_counts(np.array([2, 1, 1]), np.array([1, 1, 0]))
    >>> counts["removed_correctly"], counts["removed"]
    (1, 2)
    """
    group_sizes, kept_per_group = np.asarray(group_sizes), np.asarray(kept_per_group)
    duplicated = group_sizes > 1
    removed = group_sizes - kept_per_group
    # a removed document is correct if its group keeps some other member
    correct = duplicated & (kept_per_group >= 1)
    return {
        "true_groups_with_duplicates": int(duplicated.sum()),
        "documents_to_remove": int((group_sizes[duplicated] - 1).sum()),
        "removed_correctly": int(removed[correct].sum()),
        "removed": int(removed.sum()),
    }


def removal_figures(counts: dict[str, int]) -> dict[str, Any]:
    """Score removals from `removal_counts` (summed over any split of the groups).

    Parameters
    ----------
    counts : dict
        As `removal_counts` returns them.

    Returns
    -------
    dict
        The keys of `removal_scores` without pairs: the counts but ``removed``, and
        ``removal_precision`` and ``removal_recall`` (1.0 where the denominator is 0).

    Examples
    --------
    >>> counts = removal_counts(np.array([2, 1, 1]), np.array([1, 1, 0]))
    >>> removal_figures(counts)["removal_precision"]
    0.5
    """
    correct, removed = counts["removed_correctly"], counts["removed"]
    should_remove = counts["documents_to_remove"]
    return {
        "true_groups_with_duplicates": counts["true_groups_with_duplicates"],
        "documents_to_remove": should_remove,
        "removed_correctly": correct,
        "removal_precision": correct / removed if removed else 1.0,
        "removal_recall": correct / should_remove if should_remove else 1.0,
    }


def true_cosines(
    featurizer: TextFeaturizer, texts_a: Sequence[str], texts_b: Sequence[str]
) -> np.ndarray:
    """Exact cosine similarity of the weighted feature vectors of text pairs.

    Features are compared by their hash state, as the fingerprint sees them.

    Parameters
    ----------
    featurizer : TextFeaturizer
        How text becomes weighted features (fitted, for tfidf).
    texts_a, texts_b : sequence of str, same length
        The pairs.

    Returns
    -------
    ndarray, shape (len(texts_a),), dtype float64
        Cosines; NaN where a document has no features (the cosine is undefined).

    Raises
    ------
    ValueError
        Sequences of different lengths.

    Examples
    --------
    >>> true_cosines(TextFeaturizer(), ["a b", "a"], ["a b b", ""]).round(3).tolist()
    [0.949, nan]
    """
    if len(texts_a) != len(texts_b):
        raise ValueError(f"need as many texts_b as texts_a, got {len(texts_b)} and {len(texts_a)}")
    n = len(texts_a)
    left, right = np.arange(n), np.arange(n, 2 * n)
    return row_pair_cosines(featurizer, [*texts_a, *texts_b], left, right)


def row_pair_cosines(
    featurizer: TextFeaturizer, texts: Sequence[str], left: np.ndarray, right: np.ndarray
) -> np.ndarray:
    """Exact cosines of pairs of texts given by position: each text featurized once.

    Parameters
    ----------
    featurizer : TextFeaturizer
        How text becomes weighted features.
    texts : sequence of str
        The texts, each once (a text in many pairs costs its features once).
    left, right : ndarray of int, same shape
        Positions in ``texts`` of each pair's two texts.

    Returns
    -------
    ndarray, shape (len(left),), dtype float64
        As `true_cosines`.

    Examples
    --------
    >>> row_pair_cosines(TextFeaturizer(), ["a b", "a b b"], np.array([0, 0]), np.array([1, 0]))
    array([0.9486833, 1.       ])
    """
    batch = featurizer.transform(list(texts))
    distinct, column = np.unique(batch.states, return_inverse=True)
    import scipy.sparse as sp  # imported where used: SciPy takes a while to import

    matrix = sp.csr_matrix(
        (batch.entry_weights(), column.ravel(), batch.offsets), shape=(len(texts), distinct.size)
    )
    matrix.sum_duplicates()
    a, b = matrix[np.asarray(left, dtype=np.int64)], matrix[np.asarray(right, dtype=np.int64)]
    dots = np.asarray(a.multiply(b).sum(axis=1)).ravel()
    norms = np.sqrt(np.asarray(a.multiply(a).sum(axis=1)).ravel()) * np.sqrt(
        np.asarray(b.multiply(b).sum(axis=1)).ravel()
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        cosines = np.where(norms > 0, dots / norms, np.nan)
    return np.clip(cosines, -1.0, 1.0)


def block_candidates(codes: np.ndarray, num_blocks: int) -> np.ndarray:
    """Every pair of codes that agrees exactly on at least one of ``num_blocks`` equal blocks.

    The seed's blocking, the baseline the joins are compared with: split each fingerprint into
    equal blocks of consecutive bits, group the codes by each block's value, and collect the
    pairs inside every group, each pair once.

    Parameters
    ----------
    codes : ndarray, shape (n, bits // 8), dtype uint8
        Packed codes.
    num_blocks : int
        Number of blocks; must divide ``bits``.

    Returns
    -------
    pairs : ndarray, shape (m, 2), dtype int64
        ``(i, j)`` with ``i < j``, sorted, no repeats.

    Raises
    ------
    ValueError
        ``num_blocks`` does not divide the number of bits, or is < 1.

    Examples
    --------
    >>> import numpy as np
    >>> codes = np.array([[0x0F], [0x1F], [0xF0]], np.uint8)
    >>> block_candidates(codes, 2)  # low nibbles of 0 and 1 agree; high nibbles of 1 and 2 differ
    array([[0, 1]])
    """
    codes = _validate.codes(codes)
    num_blocks = _validate.positive_integer(num_blocks, "num_blocks")
    bits = codes.shape[1] * 8
    if bits % num_blocks:
        raise ValueError(f"num_blocks={num_blocks} does not divide bits={bits}")
    block_bits = bits // num_blocks
    unpacked = np.unpackbits(codes, axis=1, bitorder="little")
    found = []
    for block in range(num_blocks):
        values = np.packbits(unpacked[:, block * block_bits : (block + 1) * block_bits], axis=1)
        keys = np.ascontiguousarray(values).view(np.dtype((np.void, values.shape[1]))).ravel()
        order = np.argsort(keys, kind="stable")
        _, group_sizes = np.unique(keys[order], return_counts=True)
        shared = group_sizes > 1
        if shared.any():
            keep = np.repeat(shared, group_sizes)
            found.append(_segments.pairs_within(order[keep], group_sizes[shared]))
    if not found:
        return np.zeros((0, 2), dtype=np.int64)
    pairs = np.concatenate(found).astype(np.int64)
    return np.unique(pairs, axis=0)

"""Verification of a join's candidates, documents with identical codes and features as units.

Documents with the same code and the same features are one *unit* (`feature_units`): they are
duplicates of each other and have the same similarity to every other document, so each unit is
verified once, through its representative (`verify_candidates`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpusimhash import _segments, _validate
from gpusimhash._cpu._verify_loops import (
    feature_hashes,
    same_features,
)
from gpusimhash._unique import distinct_values
from gpusimhash.fingerprinting import resolve_device
from gpusimhash.join._groups import DuplicateGroups, expand_pairs, first_seen_labels
from gpusimhash.verify._features import DocumentFeatures
from gpusimhash.verify._threshold import threshold

# candidate pairs expanded and verified at a time
_CHUNK_PAIRS = 1 << 22


# documents hashed at a time in feature_units (their weights widened, when narrowed)
_HASHED = 1 << 16


@dataclass(frozen=True)
class VerifiedCandidates:
    """The verified near-duplicates of a collapsed join; documents with equal features as units.

    Documents with identical codes and identical features form one *unit*: they are duplicates
    of each other (similarity 1.0) and have the same similarity to every other document, so
    each unit is verified once, through its representative. A group of thousands of copies costs
    one unit, not millions of pairs.

    Attributes
    ----------
    unit : ndarray, shape (n,), dtype int64
        Unit of each document, numbered in order of each unit's lowest document; a document in
        no candidate pair (or featureless, unless asked) is a unit of its own.
    pairs : ndarray, shape (p, 2), dtype int64
        Pairs of units ``a < b`` whose representatives' similarity reaches the threshold,
        sorted.
    similarity : ndarray, shape (p,), dtype float64
        That similarity.
    representative : ndarray, shape (n_units,), dtype int64
        The lowest document of each unit.
    n_candidates : int
        Pairs of units verified.
    """

    unit: np.ndarray
    pairs: np.ndarray
    similarity: np.ndarray
    representative: np.ndarray
    n_candidates: int

    def as_groups(self, max_distance: int) -> DuplicateGroups:
        """Return the verified pairs as pairs of units (``inverse`` is `unit`).

        Parameters
        ----------
        max_distance : int
            The candidates' Hamming radius (recorded in the result).

        Returns
        -------
        DuplicateGroups
        """
        return DuplicateGroups(self.unit, self.pairs, max_distance)

    def document_pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """Expand to every verified pair of documents and its similarity.

        Returns
        -------
        pairs : ndarray, shape (m, 2), dtype int64
            ``i < j``, sorted.
        similarity : ndarray, shape (m,), dtype float64
            1.0 for two documents of one unit.
        """
        same = expand_pairs(self.unit, np.zeros((0, 2), np.int64))
        left, right, pair = _cross_pairs(self.unit, self.pairs, self.representative.size)
        i = np.concatenate([same[:, 0], np.minimum(left, right)])
        j = np.concatenate([same[:, 1], np.maximum(left, right)])
        values = np.concatenate([np.ones(len(same)), self.similarity[pair]])
        order = np.lexsort((j, i))
        return np.stack([i[order], j[order]], axis=1).astype(np.int64), values[order]


def _cross_pairs(
    group: np.ndarray, group_pairs: np.ndarray, n_groups: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every member of ``a`` with every member of ``b``, for each pair ``(a, b)`` of groups.

    Returns the left and right items and the index of the group pair each came from.
    """
    members = np.argsort(group, kind="stable")
    sizes = np.bincount(group, minlength=n_groups)
    first = _segments.starts(sizes)
    a, b = group_pairs[:, 0], group_pairs[:, 1]
    of_a = _segments.segment_of(sizes[a])
    a_items = members[_segments.ranges(first[a], sizes[a])]
    b_of = b[of_a]
    of_b = _segments.segment_of(sizes[b_of])
    return a_items[of_b], members[_segments.ranges(first[b_of], sizes[b_of])], of_a[of_b]


def candidate_documents(groups: DuplicateGroups) -> np.ndarray:
    """Documents in some candidate pair: their code is shared or paired by the join.

    Parameters
    ----------
    groups : DuplicateGroups
        A join result.

    Returns
    -------
    rows : ndarray, dtype int64
        Ascending document indices.

    Examples
    --------
    >>> import numpy as np
    >>> from gpusimhash.join._exact import near_duplicate_groups
    >>> codes = np.array([[0], [0], [7], [64], [65]], dtype=np.uint8)
    >>> candidate_documents(near_duplicate_groups(codes, max_distance=1)).tolist()
    [0, 1, 3, 4]
    """
    sizes = np.bincount(groups.inverse, minlength=groups.n_unique)
    paired = np.zeros(groups.n_unique, dtype=bool)
    paired[groups.unique_pairs.reshape(-1)] = True
    return np.flatnonzero((sizes[groups.inverse] > 1) | paired[groups.inverse]).astype(np.int64)


def verify_candidates(
    groups: DuplicateGroups,
    features: DocumentFeatures,
    rows: Any,
    *,
    min_cosine: Any = None,
    min_jaccard: Any = None,
    empty_as_duplicates: bool = False,
    chunk_pairs: int = _CHUNK_PAIRS,
    device: str = "cpu",
) -> VerifiedCandidates:
    """Verify every candidate pair of a collapsed join on the documents' features.

    Documents with the same code and the same features are one unit (see
    `VerifiedCandidates`), found by a hash of their features and confirmed entry by entry;
    then every pair of units whose codes are the same or paired by the join is verified on the
    units' representatives, `chunk_pairs` at a time. The result expands
    (``document_pairs``) to exactly the document pairs of ``groups.pairs()`` that reach the
    threshold.

    Parameters
    ----------
    groups : DuplicateGroups
        The join result over all ``n`` documents.
    features : DocumentFeatures
        Features of the documents `rows`, in that order; they must include every document of
        `candidate_documents` (no other is ever compared).
    rows : array_like of int, shape (features.n_docs,)
        Ascending document indices.
    min_cosine, min_jaccard : float, optional
        The threshold, as in `verify_pairs`.
    empty_as_duplicates : bool
        Featureless documents form one unit (duplicates of each other); otherwise each is a
        unit of its own and is never verified.
    chunk_pairs : int
        Candidate pairs of units expanded and verified at a time (bounds memory).
    device : {"cpu", "gpu", "auto"}
        Where the pairs are compared (the features are uploaded once); the same result.

    Returns
    -------
    VerifiedCandidates

    Raises
    ------
    ValueError
        `rows` not ascending, not matching `features`, or missing a candidate document; a bad
        threshold.

    Examples
    --------
    >>> from gpusimhash.join._exact import near_duplicate_groups
    >>> from gpusimhash.fingerprinting import featurize, fingerprint_batch
    >>> batch = featurize(["a b c", "a b c", "a b c d", "x y"])
    >>> codes = fingerprint_batch(batch, "cpu", bits=64, seed=0)
    >>> groups = near_duplicate_groups(codes, max_distance=64)
    >>> features = DocumentFeatures.from_batch(batch)
    >>> found = verify_candidates(groups, features, range(4), min_cosine=0.8)
    >>> found.unit.tolist(), found.pairs.tolist(), found.similarity.round(3).tolist()
    ([0, 0, 1, 2], [[0, 1]], [0.866])
    """
    measure, value = threshold(min_cosine, min_jaccard)
    chunk_pairs = _validate.positive_integer(chunk_pairs, "chunk_pairs")
    n = groups.inverse.size
    rows = np.asarray(rows, dtype=np.int64).reshape(-1)
    if rows.size != features.n_docs:
        raise ValueError(f"rows must have {features.n_docs} entries, got {rows.size}")
    if rows.size and (np.any(np.diff(rows) <= 0) or rows[0] < 0 or rows[-1] >= n):
        raise ValueError(f"rows must be ascending document indices in [0, {n})")
    needed = candidate_documents(groups)
    missing = needed[~np.isin(needed, rows)]
    if missing.size:
        raise ValueError(f"features of document {int(missing[0])} are needed (it has candidates)")
    unit, representative = feature_units(groups.inverse, features, rows, empty_as_duplicates)
    # units with features, their codes and where their representatives are in `features`
    featured = distinct_values(unit[rows[features.sizes > 0]])
    local = np.searchsorted(rows, representative[featured])
    unit_code = groups.inverse[representative[featured]]
    compare = features.comparer(resolve_device(device, uses=("verify",)))
    column = 0 if measure == "cosine" else 1
    found_pairs, found_similarity, n_candidates = [], [], 0
    for left, right in _unit_candidates(unit_code, groups, chunk_pairs):
        n_candidates += left.size
        similarity = compare(local[left], local[right])[column]
        keep = similarity >= value
        a, b = featured[left[keep]], featured[right[keep]]
        found_pairs.append(np.stack([np.minimum(a, b), np.maximum(a, b)], axis=1))
        found_similarity.append(similarity[keep])
    unit_pairs = np.concatenate(found_pairs) if found_pairs else np.zeros((0, 2), np.int64)
    similarity = np.concatenate(found_similarity) if found_similarity else np.zeros(0)
    order = np.lexsort((unit_pairs[:, 1], unit_pairs[:, 0]))
    return VerifiedCandidates(
        unit, unit_pairs[order], similarity[order], representative, n_candidates
    )


def feature_units(
    code: np.ndarray, features: DocumentFeatures, rows: np.ndarray, empty_as_duplicates: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Group documents with the same code and identical features into units.

    Identical features are found by a hash of each document's features and confirmed entry by
    entry (a hash collision leaves the document a unit of its own); only documents whose code
    another featured document has are hashed.

    Parameters
    ----------
    code : ndarray, shape (n,), dtype int64
        Distinct code of every document.
    features : DocumentFeatures
        Features of the documents `rows`.
    rows : ndarray, dtype int64
        Ascending document indices of `features`.
    empty_as_duplicates : bool
        Featureless documents of `rows` form one unit; otherwise each is a unit of its own,
        as is every document not in `rows`.

    Returns
    -------
    unit : ndarray, shape (n,), dtype int64
        Unit of every document, numbered in order of each unit's lowest document.
    representative : ndarray, shape (n_units,), dtype int64
        The lowest document of each unit.

    Examples
    --------
    >>> from gpusimhash.fingerprinting import featurize
    >>> features = DocumentFeatures.from_batch(featurize(["a b", "b a", "a", ""]))
    >>> unit, first = feature_units(np.zeros(4, np.int64), features, np.arange(4), False)
    >>> unit.tolist(), first.tolist()
    ([0, 0, 1, 2], [0, 2, 3])
    """
    n = code.size
    code = code[rows]
    sizes = features.sizes
    local = np.flatnonzero(sizes > 0)
    # a document whose code no other featured document has is a unit of its own: only the
    # others are hashed
    local = local[np.bincount(code[local])[code[local]] > 1]
    hashes = document_hashes(features.take(local))
    order = _by_code_and_hash(code[local], hashes)
    local, hashes = local[order], hashes[order]
    starts = np.ones(local.size, dtype=bool)
    starts[1:] = (code[local][1:] != code[local][:-1]) | (hashes[1:] != hashes[:-1])
    run = np.cumsum(starts) - 1
    first = local[starts][run]
    same = same_features(
        features.states,
        features.offsets,
        features.weights,
        local,
        first,
    )
    # a hash collision (never seen): the document is a unit of its own
    run[~same] = run.size + np.arange(int((~same).sum()))
    unit = np.full(n, -1, dtype=np.int64)
    unit[rows[local]] = run
    n_raw = int(run.max()) + 1 if run.size else 0
    empty = rows[sizes == 0]
    if empty_as_duplicates and empty.size:
        unit[empty] = n_raw
        n_raw += 1
    alone = np.flatnonzero(unit < 0)
    unit[alone] = n_raw + np.arange(alone.size)
    # number the units in order of their lowest document: each number first appears as the
    # largest so far, so the lowest documents are where the running maximum grows
    number = first_seen_labels(unit)
    grows = np.ones(n, dtype=bool)
    running = np.maximum.accumulate(number)
    grows[1:] = running[1:] > running[:-1]
    return number, np.flatnonzero(grows)


def _by_code_and_hash(code: np.ndarray, hashes: np.ndarray) -> np.ndarray:
    """Return ``np.lexsort((np.arange(n), hashes, code))``: by code, hash, then position.

    One stable sort of the code and the hash's high half packed into one key, where no two
    documents of a code share a high half but not the whole hash (0.05 s against the lexsort's
    0.09 s on 536,000 documents, ``bench/results/unique_cpu.json``); the lexsort otherwise.

    Examples
    --------
    >>> hashes = np.array([9 << 32, 3, 9 << 32, 4], dtype=np.uint64)
    >>> _by_code_and_hash(np.array([1, 0, 1, 1]), hashes).tolist()
    [1, 3, 0, 2]
    """
    if code.size and int(code.min()) >= 0 and int(code.max()) < 2**31:
        key = (code.astype(np.int64) << 32) | (hashes >> np.uint64(32)).astype(np.int64)
        order = np.argsort(key, kind="stable")
        ordered, hashed = key[order], hashes[order]
        if not np.any((ordered[1:] == ordered[:-1]) & (hashed[1:] != hashed[:-1])):
            return order
    return np.lexsort((np.arange(code.size), hashes, code))


def document_hashes(features: DocumentFeatures) -> np.ndarray:
    """``feature_hashes`` of every document, ``_HASHED`` documents at a time, weights widened.

    The hash reads the float64 bits of each weight: narrowed weights are widened (exactly)
    one chunk at a time, so the hashes never depend on the weights' dtype.
    """
    out = np.empty(features.n_docs, dtype=np.uint64)
    offsets = features.offsets
    for lo in range(0, features.n_docs, _HASHED):
        hi = min(lo + _HASHED, features.n_docs)
        a, b = int(offsets[lo]), int(offsets[hi])
        out[lo:hi] = feature_hashes(
            features.states[a:b],
            offsets[lo : hi + 1] - a,
            np.ascontiguousarray(features.weights[a:b], dtype=np.float64),
        )
    return out


def _unit_candidates(
    unit_code: np.ndarray, groups: DuplicateGroups, chunk: int
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Yield pairs of units (indices into `unit_code`): same code, then paired codes, in chunks."""
    same = expand_pairs(unit_code, np.zeros((0, 2), np.int64))
    for start in range(0, len(same), chunk):
        yield same[start : start + chunk, 0], same[start : start + chunk, 1]
    counts = np.bincount(unit_code, minlength=groups.n_unique)
    code_pairs = groups.unique_pairs
    sizes = counts[code_pairs[:, 0]] * counts[code_pairs[:, 1]]
    code_pairs, sizes = code_pairs[sizes > 0], sizes[sizes > 0]
    bounds = np.searchsorted(np.cumsum(sizes), np.arange(chunk, int(sizes.sum()), chunk))
    for part in np.split(code_pairs, bounds):
        if len(part):
            left, right, _ = _cross_pairs(unit_code, part, groups.n_unique)
            yield left, right

"""The public verification functions: pairs given, or every near-duplicate pair of documents."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from gpusimhash import _segments, _validate
from gpusimhash.features import FeatureBatch
from gpusimhash.fingerprinting import featurize, fingerprint_batch, resolve_device
from gpusimhash.join._exact import near_duplicates
from gpusimhash.text import TextFeaturizer
from gpusimhash.verify._feature_join import feature_join
from gpusimhash.verify._features import DocumentFeatures, check_pairs
from gpusimhash.verify._sources import candidate_source
from gpusimhash.verify._threshold import DEFAULT_CANDIDATE_RECALL, plan_threshold, threshold


def _featurize_rows(
    documents: Sequence[Any], rows: np.ndarray, featurizer: TextFeaturizer
) -> FeatureBatch:
    """Featurize ``documents[rows]`` (ascending) with blanks of the same kind between them.

    Every document keeps its position, so an error names it by its index in `documents`.
    """
    if rows.size == 0:
        return featurize([], featurizer)
    first = documents[int(rows[0])]
    blank: Any
    if isinstance(first, str):
        blank = ""
    elif isinstance(first, Mapping):
        blank = {}
    elif isinstance(first, Sequence) and not isinstance(first, bytes):
        blank = []
    else:
        raise TypeError(
            f"document {int(rows[0])}: expected text (str), a mapping {{feature: weight}} or a "
            f"list of (feature, weight) pairs, got {type(first).__name__}"
        )
    padded = [blank] * (int(rows[-1]) + 1)
    for row in rows.tolist():
        padded[row] = documents[row]
    return featurize(padded, featurizer)


def _check_documents(documents: Any) -> Sequence[Any]:
    """Return `documents` if it is a sequence of documents (not one text), else raise."""
    if not isinstance(documents, Sequence) or isinstance(documents, str | bytes):
        raise TypeError(
            f"documents must be a sequence (list, tuple), got {type(documents).__name__}"
        )
    return documents


def verify_pairs(
    documents: Sequence[Any],
    pairs: Any,
    *,
    min_cosine: Any = None,
    min_jaccard: Any = None,
    featurizer: TextFeaturizer | None = None,
    empty_as_duplicates: bool = False,
    device: str = "auto",
) -> tuple[np.ndarray, np.ndarray]:
    """Keep the candidate pairs whose exact similarity reaches the threshold.

    Only the documents that appear in `pairs` are featurized.

    Parameters
    ----------
    documents : sequence of documents
        Texts, mappings ``{feature: weight}`` or lists of ``(feature, weight)`` pairs, all of
        one kind.
    pairs : array_like of int, shape (m, 2)
        Candidate pairs of different documents, in any order, repeats allowed.
    min_cosine : float, optional
        Minimum cosine of the weighted feature vectors, in ``[-1, 1]``.
    min_jaccard : float, optional
        Minimum Jaccard similarity of the feature sets (weights ignored), in ``[0, 1]``.
        Give at most one; with neither, ``min_cosine=0.8``.
    featurizer : TextFeaturizer, optional
        How text becomes features; use the one the fingerprints were made with.
    empty_as_duplicates : bool
        Two featureless documents (empty text, no word) are duplicates with similarity 1.0;
        otherwise a featureless document is never anyone's duplicate.
    device : {"auto", "cpu", "gpu"}
        Where the pairs are compared: ``"auto"`` on a GPU where one is usable (the same values,
        bit for bit).

    Returns
    -------
    pairs : ndarray, shape (k, 2), dtype int64
        The pairs kept, ``i < j``, sorted, no repeats.
    similarity : ndarray, shape (k,), dtype float64
        The exact similarity (the measure of the threshold) of each, at or above it.

    Raises
    ------
    TypeError
        A document or pair index of the wrong kind.
    ValueError
        Bad pairs, a bad threshold, or a malformed document (the message names it).
    RuntimeError
        ``device="gpu"`` where no GPU is usable.

    Examples
    --------
    >>> docs = ["the cat sat", "the cat sat down", "a dog ran", "the cat sat"]
    >>> pairs, similarity = verify_pairs(docs, [[0, 1], [1, 2], [3, 0]], min_cosine=0.8)
    >>> pairs.tolist(), similarity.round(3).tolist()
    ([[0, 1], [0, 3]], [0.866, 1.0])
    """
    documents = _check_documents(documents)
    measure, value = threshold(min_cosine, min_jaccard)
    n = len(documents)
    pairs = check_pairs(pairs, n)
    keys = np.unique(np.minimum(pairs[:, 0], pairs[:, 1]) * n + pairs.max(axis=1))
    pairs = np.stack([keys // max(n, 1), keys % max(n, 1)], axis=1)
    featurizer = TextFeaturizer() if featurizer is None else featurizer
    features = DocumentFeatures.from_batch(_featurize_rows(documents, np.unique(pairs), featurizer))
    similarity = getattr(
        features.similarities(pairs, empty_as_duplicates=empty_as_duplicates, device=device),
        measure,
    )
    keep = similarity >= value
    return pairs[keep], similarity[keep]


def verified_near_duplicates(
    documents: Sequence[Any],
    *,
    min_cosine: Any = None,
    min_jaccard: Any = None,
    bits: int = 256,
    seed: int = 0,
    featurizer: TextFeaturizer | None = None,
    candidate_recall: Any = DEFAULT_CANDIDATE_RECALL,
    max_distance: int | None = None,
    empty_as_duplicates: bool = False,
    device: str = "auto",
    candidates: str = "auto",
) -> tuple[np.ndarray, np.ndarray]:
    """Find near-duplicate pairs: every pair whose exact similarity reaches the threshold.

    Candidates come from the documents' features or from their SimHash codes (``candidates``).
    From the features, the exact feature join finds every pair at or above the threshold,
    without comparing most pairs. From the codes, candidates are the pairs within a Hamming
    radius (`candidate_radius` of the threshold and `candidate_recall`, or `max_distance`),
    found exactly, each kept only when its exact similarity reaches the threshold: a pair is
    missed only when its codes are farther apart than the radius. Either way every pair
    returned is a true near-duplicate.

    Parameters
    ----------
    documents : sequence of documents
        Texts, mappings ``{feature: weight}`` or lists of ``(feature, weight)`` pairs.
    min_cosine, min_jaccard : float, optional
        The threshold, as in `verify_pairs` (default: cosine 0.8). For Jaccard, the candidates
        come from fingerprints of the feature sets (every weight 1).
    bits : int
        Fingerprint length, a multiple of 8.
    seed : int
        Fingerprint seed.
    featurizer : TextFeaturizer, optional
        How text becomes features.
    candidate_recall : float
        Probability, in ``(0, 1]``, that a pair exactly at the threshold is a candidate under
        the binomial SimHash model.
    max_distance : int, optional
        An explicit Hamming radius instead (`candidate_recall` is then unused).
    empty_as_duplicates : bool
        Pair up featureless documents, with similarity 1.0.
    device : {"auto", "cpu", "gpu"}
        Where the fingerprints are computed and the candidates compared.
    candidates : {"auto", "features", "codes"}
        Where the candidates come from. ``auto``: the features on the CPU for a threshold
        above 0 without ``max_distance``, else the codes.

    Returns
    -------
    pairs : ndarray, shape (k, 2), dtype int64
        ``i < j``, sorted.
    similarity : ndarray, shape (k,), dtype float64
        Exact similarity of each pair, at or above the threshold.

    Raises
    ------
    TypeError, ValueError
        Bad arguments or documents (as `gpusimhash.fingerprint` and `verify_pairs`).
    RuntimeError
        ``device="gpu"`` where no GPU is usable.

    Examples
    --------
    >>> docs = ["the cat sat", "The cat sat!", "the cat sat down", "a dog ran", ""]
    >>> pairs, similarity = verified_near_duplicates(docs, min_cosine=0.85)
    >>> pairs.tolist(), similarity.round(3).tolist()
    ([[0, 1], [0, 2], [1, 2]], [1.0, 0.866, 0.866])
    """
    documents = _check_documents(documents)
    bits = _validate.bits(bits)
    seed = _validate.seed(seed)
    limit = plan_threshold(
        bits,
        max_distance=max_distance,
        min_cosine=min_cosine,
        min_jaccard=min_jaccard,
        candidate_recall=candidate_recall,
    )
    measure, value = limit.measure, limit.value
    engine = resolve_device(device, uses=("fingerprint", "verify"))
    source = candidate_source(candidates, limit, engine, max_distance=max_distance, recall=None)
    featurizer = TextFeaturizer() if featurizer is None else featurizer
    batch = featurize(documents, featurizer)
    features = DocumentFeatures.from_batch(batch)
    if source == "features":
        found = feature_join(features, measure, value)
        order = np.lexsort((found.pairs[:, 1], found.pairs[:, 0]))
        pairs, similarity = found.pairs[order], found.similarity[order]
    else:
        if measure == "jaccard":
            batch = FeatureBatch(features.states, features.offsets, None)
        codes = fingerprint_batch(batch, engine, bits=bits, seed=seed)
        rows = np.flatnonzero(features.sizes > 0)
        pairs = rows[near_duplicates(codes[rows], max_distance=limit.radius)].reshape(-1, 2)
        similarity = getattr(features.similarities(pairs, device=engine), measure)
        keep = similarity >= value
        pairs, similarity = pairs[keep], similarity[keep]
    if empty_as_duplicates:
        empty = np.flatnonzero(features.sizes == 0)
        within = _segments.pairs_within(empty, np.array([empty.size]))
        pairs = np.concatenate([pairs, within])
        similarity = np.concatenate([similarity, np.ones(len(within))])
        order = np.lexsort((pairs[:, 1], pairs[:, 0]))
        pairs, similarity = pairs[order], similarity[order]
    return pairs.astype(np.int64, copy=False), similarity

"""Verification of near-duplicate candidates on the documents' own features.

SimHash finds candidates; this module decides them. Every candidate pair is compared on the
features its fingerprints were computed from (the same featurizer): the weighted cosine, the
Jaccard similarity of the two feature sets, and the weighted Jaccard similarity
``sum min(a, b) / sum max(a, b)``. A pair is kept only at or above the threshold, so precision
is exact, and a looser Hamming radius buys recall.

**The candidate radius.** Under the SimHash model a pair at true cosine ``c`` differs in
``d ~ Binomial(bits, acos(c) / pi)`` bits; `candidate_radius` is the smallest radius that finds
a pair exactly at the threshold with probability ``candidate_recall`` (pairs above it are found
more often). The model is optimistic for short or heavily weighted documents: it assumes
independent Gaussian hyperplanes, while each feature draws +-1 signs from a 32-bit hash, so a
document of a few features (or one dominant feature) has few distinct slot sums, a slot whose
sum is exactly zero (frequent with an even count of equal weights) is always 0, and all its bits
come from the same handful of hashes. Such pairs differ in more bits than the model says, more
often; ``bench/bench_quality.py`` measures the recall this gives on real documents.

**Jaccard thresholds.** For sets, ``cosine >= 2 J / (1 + J)`` (equality for two sets of the
same size), so a Jaccard threshold ``J`` is searched as the cosine threshold ``2 J / (1 + J)``
over fingerprints of the feature sets (every weight 1), where that bound holds. No such bound
exists for the weighted Jaccard similarity (one heavy feature moves the cosine but hardly the
sums), so it is reported, never used as a threshold.

Features are compared by their 32-bit state, as the fingerprint sees them: two distinct
features of one pair with the same state (probability about ``k**2 / 2**33`` for ``k``
features) count as one.

**Memory.** `DocumentFeatures` holds 12 bytes per distinct feature of a document (state and
weight) and 24 bytes per document (row start, exponent, norm), for the documents that need
verifying; `verify_candidates` verifies candidate pairs in chunks of bounded size.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.stats import binom

from gpusimhash import _backend, _cpu, _segments, _validate
from gpusimhash._cpu._runtime import parallel_call
from gpusimhash._cpu._verify_loops import (
    feature_hashes,
    merge_documents,
    pair_similarities,
    same_features,
)
from gpusimhash.features import FeatureBatch
from gpusimhash.fingerprinting import DEFAULT_BATCH_SIZE, _batches, resolve_device
from gpusimhash.search._join import DuplicateGroups, check_radius, expand_pairs, first_seen_labels
from gpusimhash.search.exact import near_duplicates
from gpusimhash.text import TextFeaturizer

__all__ = [
    "DEFAULT_CANDIDATE_RECALL",
    "DEFAULT_MIN_COSINE",
    "MEASURES",
    "DocumentFeatures",
    "Similarities",
    "VerifiedCandidates",
    "candidate_documents",
    "candidate_radius",
    "check_pairs",
    "feature_units",
    "featurize",
    "threshold",
    "verified_near_duplicates",
    "verify_candidates",
    "verify_pairs",
]

DEFAULT_MIN_COSINE = 0.8
DEFAULT_CANDIDATE_RECALL = 0.99
MEASURES = ("cosine", "jaccard")
# candidate pairs expanded and verified at a time
_CHUNK_PAIRS = 1 << 22
# documents hashed at a time in feature_units (their weights widened, when narrowed)
_HASHED = 1 << 16


@dataclass(frozen=True)
class Similarities:
    """Exact similarities of document pairs; NaN where a document has no features.

    Attributes
    ----------
    cosine : ndarray, shape (m,), dtype float64
        Cosine of the weighted feature vectors.
    jaccard : ndarray, shape (m,), dtype float64
        ``|A & B| / |A | B|`` of the two feature sets.
    weighted_jaccard : ndarray, shape (m,), dtype float64
        ``sum min(a_f, b_f) / sum max(a_f, b_f)`` over the union of features (an absent feature
        weighs 0); NaN where the denominator is 0.
    """

    cosine: np.ndarray
    jaccard: np.ndarray
    weighted_jaccard: np.ndarray


@dataclass(frozen=True)
class DocumentFeatures:
    """Each document's distinct feature states, sorted, with their summed weights.

    Built by `from_batch`; this is what verification compares. Equal states of a document are
    merged by summing their weights in entry order, and features whose weights sum to zero are
    dropped, so a document's feature set is its states with a nonzero weight.

    Attributes
    ----------
    states : ndarray, shape (nnz,), dtype uint32
        Distinct states of each document, ascending.
    offsets : ndarray, shape (n_docs + 1,), dtype int64
        Row starts.
    weights : ndarray, shape (nnz,), dtype float64 (or narrower)
        Summed weight of each state, never zero. int8, int16 or float32 only when exact and
        narrowed on purpose (`gpusimhash.dedup.verification.FeatureSpill.gather`):
        `similarities` needs `widened` features.
    exponents : ndarray, shape (n_docs,), dtype int64
        ``e`` with ``max |w| = m * 2**e``, ``0.5 <= m < 1`` (0 for a featureless document).
    squared_norms : ndarray, shape (n_docs,), dtype float64
        ``sum (w * 2**-e)**2``: the squared norm in units of ``2**e``.

    Examples
    --------
    >>> import numpy as np
    >>> batch = FeatureBatch(np.array([9, 7, 9], np.uint32), np.array([0, 3, 3], np.int64), None)
    >>> features = DocumentFeatures.from_batch(batch)
    >>> features.states.tolist(), features.weights.tolist(), features.sizes.tolist()
    ([7, 9], [1.0, 2.0], [2, 0])
    """

    states: np.ndarray
    offsets: np.ndarray
    weights: np.ndarray
    exponents: np.ndarray
    squared_norms: np.ndarray

    @classmethod
    def from_batch(cls, batch: FeatureBatch) -> DocumentFeatures:
        """Sort and merge the entries of every document of a batch.

        Parameters
        ----------
        batch : FeatureBatch
            Documents as feature states and weights (on the host).

        Returns
        -------
        DocumentFeatures
        """
        return cls(
            *parallel_call(
                merge_documents,
                np.ascontiguousarray(batch.states, dtype=np.uint32),
                np.ascontiguousarray(batch.offsets, dtype=np.int64),
                np.ascontiguousarray(batch.entry_weights(), dtype=np.float64),
            )
        )

    @classmethod
    def concatenate(cls, parts: Sequence[DocumentFeatures]) -> DocumentFeatures:
        """Stack the documents of several parts, in order.

        Parameters
        ----------
        parts : sequence of DocumentFeatures
            At least one part.

        Returns
        -------
        DocumentFeatures
        """
        sizes = np.concatenate([p.sizes for p in parts])
        offsets = np.zeros(sizes.size + 1, dtype=np.int64)
        np.cumsum(sizes, out=offsets[1:])
        return cls(
            np.concatenate([p.states for p in parts]),
            offsets,
            np.concatenate([p.weights for p in parts]),
            np.concatenate([p.exponents for p in parts]),
            np.concatenate([p.squared_norms for p in parts]),
        )

    @property
    def n_docs(self) -> int:
        """Number of documents."""
        return int(self.offsets.size - 1)

    @property
    def sizes(self) -> np.ndarray:
        """Number of distinct features of each document, shape (n_docs,), int64."""
        return np.diff(self.offsets)

    @property
    def nbytes(self) -> int:
        """Bytes held: 12 per distinct feature and 24 per document (plus 8 once)."""
        arrays = (self.states, self.offsets, self.weights, self.exponents, self.squared_norms)
        return sum(a.nbytes for a in arrays)

    def widened(self) -> DocumentFeatures:
        """Return these features with float64 weights (itself when they are already).

        Returns
        -------
        DocumentFeatures

        Examples
        --------
        >>> features = DocumentFeatures.from_batch(featurize(["a b a"]))
        >>> narrow = dataclasses.replace(features, weights=features.weights.astype(np.float32))
        >>> narrow.widened().weights.dtype, features.widened() is features
        (dtype('float64'), True)
        """
        if self.weights.dtype == np.float64:
            return self
        return dataclasses.replace(self, weights=self.weights.astype(np.float64))

    def take(self, rows: Any) -> DocumentFeatures:
        """Select documents.

        Parameters
        ----------
        rows : array_like of int, shape (k,)
            Documents to keep, in the order wanted.

        Returns
        -------
        DocumentFeatures
            Document ``i`` of the result is document ``rows[i]`` of this one.
        """
        rows = np.asarray(rows, dtype=np.int64).reshape(-1)
        sizes = self.sizes[rows]
        offsets = np.zeros(rows.size + 1, dtype=np.int64)
        np.cumsum(sizes, out=offsets[1:])
        entries = _segments.ranges(self.offsets[rows], sizes)
        return DocumentFeatures(
            np.asarray(self.states[entries]),
            offsets,
            np.asarray(self.weights[entries]),
            np.asarray(self.exponents[rows]),
            np.asarray(self.squared_norms[rows]),
        )

    def similarities(
        self, pairs: Any, *, empty_as_duplicates: bool = False, device: str = "cpu"
    ) -> Similarities:
        """Exact similarities of document pairs.

        Pairs run in parallel; each value depends only on its two documents, so results do not
        depend on the order of pairs, the batching, the thread count or the device.

        Parameters
        ----------
        pairs : array_like of int, shape (m, 2)
            Pairs of different documents in ``[0, n_docs)`` (checked).
        empty_as_duplicates : bool
            Give two featureless documents similarity 1.0 instead of NaN.
        device : {"cpu", "gpu", "auto"}
            Where the pairs are compared (``kernels/verify.cu`` on a GPU: the same values, bit
            for bit); ``"auto"`` uses a GPU where one is usable.

        Returns
        -------
        Similarities
            NaN wherever a document has no features (the similarities are undefined), except
            as above.

        Raises
        ------
        TypeError, ValueError
            As `check_pairs`, or an unknown device.
        RuntimeError
            ``device="gpu"`` where no GPU is usable.

        Examples
        --------
        >>> import numpy as np
        >>> batch = FeatureBatch(
        ...     np.array([1, 2, 1, 3], np.uint32), np.array([0, 2, 4, 4], np.int64), None
        ... )
        >>> s = DocumentFeatures.from_batch(batch).similarities([[0, 1], [0, 2]])
        >>> s.cosine.tolist(), s.jaccard.tolist()
        ([0.5, nan], [0.3333333333333333, nan])
        """
        pairs = check_pairs(pairs, self.n_docs)
        compare = self.comparer(resolve_device(device, uses=("verify",)))
        cosine, jaccard, weighted = compare(
            np.ascontiguousarray(pairs[:, 0]), np.ascontiguousarray(pairs[:, 1])
        )
        if empty_as_duplicates:
            sizes = self.sizes
            both_empty = (sizes[pairs[:, 0]] == 0) & (sizes[pairs[:, 1]] == 0)
            for values in (cosine, jaccard, weighted):
                values[both_empty] = 1.0
        return Similarities(cosine, jaccard, weighted)

    def comparer(self, engine: str) -> Callable[[np.ndarray, np.ndarray], _Values]:
        """Return ``compare(left, right)``: unchecked pair similarities on an engine.

        On a GPU the features are uploaded once, here (``gpusimhash._gpu.verify``).

        Parameters
        ----------
        engine : {"cpu", "gpu"}
            As `gpusimhash.fingerprinting.resolve_device` returns.

        Returns
        -------
        callable
            ``compare(left, right)`` takes int64 document indices (in range: not checked)
            and returns host float64 arrays ``(cosine, jaccard, weighted_jaccard)``.
        """
        arrays = (self.states, self.offsets, self.weights, self.exponents, self.squared_norms)
        if engine == "gpu":
            from gpusimhash._gpu import verify as gpu_verify

            verifier = gpu_verify.device_verifier(*arrays)

            def on_device(left: np.ndarray, right: np.ndarray) -> _Values:
                values = verifier.pair_similarities(left, right)
                return _values(*(_backend.to_host(v) for v in values))

            return on_device

        def on_host(left: np.ndarray, right: np.ndarray) -> _Values:
            return _values(*parallel_call(pair_similarities, *arrays, left, right))

        return on_host


_Values = tuple[np.ndarray, np.ndarray, np.ndarray]


def _values(cosine: Any, jaccard: Any, weighted: Any) -> _Values:
    """Return the three similarity arrays as a typed tuple."""
    return np.asarray(cosine), np.asarray(jaccard), np.asarray(weighted)


def check_pairs(pairs: Any, n: int) -> np.ndarray:
    """Validate document pairs.

    Parameters
    ----------
    pairs : array_like of int, shape (m, 2)
        Indices of two different documents in ``[0, n)``.
    n : int
        Number of documents.

    Returns
    -------
    ndarray, shape (m, 2), dtype int64
        The pairs, in the order given.

    Raises
    ------
    TypeError
        Indices that are not integers.
    ValueError
        A wrong shape, an index out of range, or a document paired with itself.

    Examples
    --------
    >>> check_pairs([[2, 0]], 3).tolist()
    [[2, 0]]
    """
    array = np.asarray(pairs)
    if array.size == 0:
        array = array.reshape(0, 2).astype(np.int64)
    if array.dtype.kind not in "iu":
        raise TypeError(f"pairs must be integers, got dtype {array.dtype}")
    if array.ndim != 2 or array.shape[1] != 2:
        raise ValueError(f"pairs must have shape (m, 2), got {array.shape}")
    outside = (array < 0).any(axis=1) | (array >= n).any(axis=1)
    if outside.any():
        bad = int(np.flatnonzero(outside)[0])
        raise ValueError(
            f"pairs must index documents in [0, {n}), got {array[bad].tolist()} at row {bad}"
        )
    same = np.flatnonzero(array[:, 0] == array[:, 1])
    if same.size:
        raise ValueError(
            f"pairs must join two different documents, got {array[same[0]].tolist()} "
            f"at row {int(same[0])}"
        )
    return array.astype(np.int64, copy=False)


def threshold(min_cosine: Any = None, min_jaccard: Any = None) -> tuple[str, float]:
    """Resolve the similarity threshold.

    Parameters
    ----------
    min_cosine : float, optional
        Minimum cosine of the weighted feature vectors, in ``[-1, 1]``.
    min_jaccard : float, optional
        Minimum Jaccard similarity of the feature sets, in ``[0, 1]``. Give at most one; with
        neither, ``min_cosine = DEFAULT_MIN_COSINE``.

    Returns
    -------
    measure : {"cosine", "jaccard"}
        Which similarity the threshold is on.
    value : float
        The threshold.

    Raises
    ------
    TypeError
        A threshold that is not a real number.
    ValueError
        Both thresholds, or one out of range.

    Examples
    --------
    >>> threshold()
    ('cosine', 0.8)
    >>> threshold(min_jaccard=0.8)
    ('jaccard', 0.8)
    """
    if min_cosine is not None and min_jaccard is not None:
        raise ValueError("give at most one of min_cosine and min_jaccard")
    if min_jaccard is not None:
        return "jaccard", _real_in(min_jaccard, "min_jaccard", 0.0, 1.0)
    if min_cosine is None:
        return "cosine", DEFAULT_MIN_COSINE
    return "cosine", _real_in(min_cosine, "min_cosine", -1.0, 1.0)


def _real_in(value: Any, name: str, low: float, high: float) -> float:
    """Return a real number in ``[low, high]`` as a float, or raise naming it."""
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__} {value!r}")
    number = float(value)
    if not low <= number <= high:
        raise ValueError(f"{name} must be in [{low:g}, {high:g}], got {value!r}")
    return number


def search_cosine(measure: str, value: float) -> float:
    """Return the cosine the fingerprints are searched at: the value, or ``2 J / (1 + J)``.

    Parameters
    ----------
    measure : {"cosine", "jaccard"}
        As `threshold` returns.
    value : float
        The threshold.

    Returns
    -------
    float

    Examples
    --------
    >>> search_cosine("jaccard", 0.5)
    0.6666666666666666
    """
    return 2 * value / (1 + value) if measure == "jaccard" else value


def candidate_radius(
    bits: int,
    *,
    min_cosine: Any = None,
    min_jaccard: Any = None,
    candidate_recall: Any = DEFAULT_CANDIDATE_RECALL,
) -> int:
    """Smallest Hamming radius that finds a pair exactly at the threshold with a given probability.

    A pair at true cosine ``c`` differs in ``d ~ Binomial(bits, acos(c) / pi)`` bits under the
    SimHash model, optimistic for short or heavily weighted documents (see the module notes).
    A Jaccard threshold ``J`` is first turned into the cosine bound ``2 J / (1 + J)`` of sets.

    Parameters
    ----------
    bits : int
        Code length.
    min_cosine, min_jaccard : float, optional
        The threshold, as in `threshold`.
    candidate_recall : float
        Probability in ``(0, 1]`` of finding a pair at the threshold; 1 needs every bit
        (unless the threshold is a cosine of 1).

    Returns
    -------
    radius : int
        In ``[0, bits]``.

    Raises
    ------
    TypeError, ValueError
        A bad threshold, `bits` or `candidate_recall`.

    Examples
    --------
    >>> candidate_radius(256, min_cosine=0.9)
    50
    >>> candidate_radius(256, min_cosine=0.9, candidate_recall=0.5)
    37
    >>> candidate_radius(256, min_jaccard=0.8)
    53
    """
    bits = _validate.positive_integer(bits, "bits")
    measure, value = threshold(min_cosine, min_jaccard)
    recall = _real_in(candidate_recall, "candidate_recall", 0.0, 1.0)
    if recall == 0.0:
        raise ValueError("candidate_recall must be in (0, 1], got 0")
    p = math.acos(min(1.0, search_cosine(measure, value))) / math.pi
    if p == 0.0 or recall == 1.0:
        return bits if p > 0.0 else 0
    radius = min(max(int(binom.ppf(recall, bits, p)), 0), bits)
    while radius > 0 and binom.cdf(radius - 1, bits, p) >= recall:
        radius -= 1
    while radius < bits and binom.cdf(radius, bits, p) < recall:
        radius += 1
    return radius


def featurize(
    documents: Any,
    featurizer: TextFeaturizer | None = None,
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
) -> FeatureBatch:
    """Turn documents into one FeatureBatch, as `gpusimhash.fingerprint` sees them.

    Parameters
    ----------
    documents : sequence or iterable of documents
        Texts, mappings ``{feature: weight}`` or lists of ``(feature, weight)`` pairs.
    featurizer : TextFeaturizer, optional
        For text (default: lower-cased words weighted by count).
    batch_size : int
        Documents featurized at a time.

    Returns
    -------
    FeatureBatch

    Raises
    ------
    TypeError, ValueError
        As `gpusimhash.fingerprint`, naming the document.

    Examples
    --------
    >>> featurize(["a b a", ""]).offsets.tolist()
    [0, 3, 3]
    """
    featurizer = TextFeaturizer() if featurizer is None else featurizer
    parts = [
        featurizer.transform(batch, first_index=first) if kind == "text" else batch
        for kind, first, batch in _batches(documents, None, featurizer, batch_size)
    ]
    if not parts:
        return FeatureBatch(np.zeros(0, np.uint32), np.zeros(1, np.int64), None)
    return FeatureBatch.concatenate(parts)


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
) -> tuple[np.ndarray, np.ndarray]:
    """Find near-duplicate pairs: SimHash candidates, each verified on its features.

    Candidates are the pairs within a Hamming radius (`candidate_radius` of the threshold and
    `candidate_recall`, or `max_distance`), found exactly; each is kept only when its exact
    similarity reaches the threshold, so every pair returned is a true near-duplicate. A pair
    is missed only when its codes are farther apart than the radius.

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
    measure, value = threshold(min_cosine, min_jaccard)
    bits = _validate.bits(bits)
    seed = _validate.seed(seed)
    if max_distance is None:
        radius = candidate_radius(
            bits, min_cosine=min_cosine, min_jaccard=min_jaccard, candidate_recall=candidate_recall
        )
    else:
        radius = min(check_radius(max_distance), bits)
    engine = resolve_device(device, uses=("fingerprint", "verify"))
    featurizer = TextFeaturizer() if featurizer is None else featurizer
    batch = featurize(documents, featurizer)
    features = DocumentFeatures.from_batch(batch)
    if measure == "jaccard":
        batch = FeatureBatch(features.states, features.offsets, None)
    codes = fingerprint_batch(batch, engine, bits=bits, seed=seed)
    rows = np.flatnonzero(features.sizes > 0)
    pairs = rows[near_duplicates(codes[rows], max_distance=radius)].reshape(-1, 2)
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


def fingerprint_batch(batch: FeatureBatch, engine: str, *, bits: int, seed: int) -> np.ndarray:
    """Fingerprint a host FeatureBatch on a resolved engine (``"cpu"`` or ``"gpu"``).

    Parameters
    ----------
    batch : FeatureBatch
        Validated documents.
    engine : {"cpu", "gpu"}
        As `gpusimhash.fingerprinting.resolve_device` returns.
    bits, seed : int
        Validated fingerprint length and seed.

    Returns
    -------
    codes : ndarray, shape (batch.n_docs, bits // 8), dtype uint8
        On the host.
    """
    if engine == "gpu":
        from gpusimhash import _gpu

        return _backend.to_host(_gpu.fingerprint_batch(batch, bits=bits, seed=seed))
    return _cpu.fingerprint_batch(batch, bits=bits, seed=seed)


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
    >>> from gpusimhash.search.exact import near_duplicate_groups
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
    >>> from gpusimhash.search.exact import near_duplicate_groups
    >>> batch = featurize(["a b c", "a b c", "a b c d", "x y"])
    >>> codes = _cpu.fingerprint_batch(batch, bits=64, seed=0)
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
    featured = np.unique(unit[rows[features.sizes > 0]])
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
    entry (a hash collision leaves the document a unit of its own).

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
    >>> features = DocumentFeatures.from_batch(featurize(["a b", "b a", "a", ""]))
    >>> unit, first = feature_units(np.zeros(4, np.int64), features, np.arange(4), False)
    >>> unit.tolist(), first.tolist()
    ([0, 0, 1, 2], [0, 2, 3])
    """
    n = code.size
    code = code[rows]
    sizes = features.sizes
    hashes = _feature_hashes(features)
    local = np.flatnonzero(sizes > 0)
    local = local[np.lexsort((local, hashes[local], code[local]))]
    starts = np.ones(local.size, dtype=bool)
    starts[1:] = (code[local][1:] != code[local][:-1]) | (hashes[local][1:] != hashes[local][:-1])
    run = np.cumsum(starts) - 1
    first = local[starts][run]
    same = parallel_call(
        same_features, features.states, features.offsets, features.weights, local, first
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


def _feature_hashes(features: DocumentFeatures) -> np.ndarray:
    """``feature_hashes`` of every document, ``_HASHED`` documents at a time, weights widened.

    The hash reads the float64 bits of each weight: narrowed weights are widened (exactly)
    one chunk at a time, so the hashes never depend on the weights' dtype.
    """
    out = np.empty(features.n_docs, dtype=np.uint64)
    offsets = features.offsets
    for lo in range(0, features.n_docs, _HASHED):
        hi = min(lo + _HASHED, features.n_docs)
        a, b = int(offsets[lo]), int(offsets[hi])
        out[lo:hi] = parallel_call(
            feature_hashes,
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

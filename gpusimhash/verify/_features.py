"""`DocumentFeatures`: each document's merged features, and the exact similarities of pairs.

Features are compared by their 32-bit state, as the fingerprint sees them. Pairs run in
parallel in a compiled loop (``_cpu._verify_loops.pair_similarities``), or on a GPU
(``kernels/verify.cu``) with the same values, bit for bit.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpusimhash import _backend, _segments, _validate
from gpusimhash._cpu._verify_loops import (
    merge_documents,
    pair_similarities,
)
from gpusimhash.features import FeatureBatch
from gpusimhash.fingerprinting import resolve_device


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


# each array's dtypes: weights narrower than float64 only where exact (`widened` widens them)
_DTYPES = {
    "states": (np.uint32,),
    "offsets": (np.int64,),
    "weights": (np.int8, np.int16, np.float32, np.float64),
    "exponents": (np.int64,),
    "squared_norms": (np.float64,),
}


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
        narrowed on purpose (`gpusimhash.verify._spill.FeatureSpill.gather`):
        `similarities` needs `widened` features.
    exponents : ndarray, shape (n_docs,), dtype int64
        ``e`` with ``max |w| = m * 2**e``, ``0.5 <= m < 1`` (0 for a featureless document).
    squared_norms : ndarray, shape (n_docs,), dtype float64
        ``sum (w * 2**-e)**2``: the squared norm in units of ``2**e``.

    Raises
    ------
    ValueError
        Built directly from arrays that do not fit together: not one-dimensional, another dtype
        than above, lengths that disagree, or offsets that do not run from 0 to the number of
        states without decreasing (the compiled loops index the arrays unchecked). The values
        themselves are taken as `from_batch` gives them. Arrays that are not contiguous are
        copied.

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

    def __post_init__(self) -> None:
        """Check that the arrays fit together; copy those that are not contiguous."""
        for name, dtypes in _DTYPES.items():
            value = getattr(self, name)
            if not (isinstance(value, np.ndarray) and value.ndim == 1 and value.dtype in dtypes):
                allowed = " or ".join(np.dtype(d).name for d in dtypes)
                raise ValueError(
                    f"DocumentFeatures: {name} must be a one-dimensional array of {allowed}, "
                    f"got {_describe(value)} (DocumentFeatures.from_batch builds them)"
                )
            if not value.flags.c_contiguous:
                object.__setattr__(self, name, np.ascontiguousarray(value))
        n_docs, n_states = self.exponents.size, self.states.size
        lengths = {
            "offsets": (self.offsets.size, n_docs + 1),
            "squared_norms": (self.squared_norms.size, n_docs),
            "weights": (self.weights.size, n_states),
        }
        for name, (found, wanted) in lengths.items():
            if found != wanted:
                raise ValueError(
                    f"DocumentFeatures: {name} holds {found:,} values where {n_docs:,} "
                    f"documents (exponents) of {n_states:,} states need {wanted:,}"
                )
        offsets = self.offsets
        decreasing = bool(np.any(offsets[1:] < offsets[:-1]))
        if offsets[0] != 0 or offsets[-1] != n_states or decreasing:
            raise ValueError(
                f"DocumentFeatures: offsets must run from 0 to the {n_states:,} states without "
                f"decreasing, got {offsets[0]:,} to {offsets[-1]:,}"
                + (", decreasing on the way" if decreasing else "")
            )

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

        Raises
        ------
        TypeError, ValueError
            A batch whose arrays do not fit together (`gpusimhash._validate.host_batch`).
        """
        _validate.host_batch(batch)
        return cls(
            *merge_documents(
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
        >>> from gpusimhash.fingerprinting import featurize
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

        Raises
        ------
        ValueError
            A row outside ``[0, n_docs)``.
        """
        rows = np.asarray(rows, dtype=np.int64).reshape(-1)
        _validate.indices(rows, self.n_docs, "take: rows")
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
        """Return ``compare(left, right)``: the similarities of pairs given as two index arrays.

        On a GPU the features are uploaded once, here (``gpusimhash._gpu.verify``).

        Parameters
        ----------
        engine : {"cpu", "gpu"}
            As `gpusimhash.fingerprinting.resolve_device` returns.

        Returns
        -------
        callable
            ``compare(left, right)`` takes two int64 arrays of document indices and returns
            host float64 arrays ``(cosine, jaccard, weighted_jaccard)``; it raises
            ``ValueError`` for an index outside ``[0, n_docs)``.
        """
        arrays = (self.states, self.offsets, self.weights, self.exponents, self.squared_norms)
        n_docs = self.n_docs
        if engine == "gpu":
            from gpusimhash._gpu import verify as gpu_verify

            verifier = gpu_verify.device_verifier(*arrays)

            def on_device(left: np.ndarray, right: np.ndarray) -> _Values:
                _validate.indices(left, n_docs, "compare: left")
                _validate.indices(right, n_docs, "compare: right")
                values = verifier.pair_similarities(left, right)
                return _values(*(_backend.to_host(v) for v in values))

            return on_device

        def on_host(left: np.ndarray, right: np.ndarray) -> _Values:
            _validate.indices(left, n_docs, "compare: left")
            _validate.indices(right, n_docs, "compare: right")
            return _values(*pair_similarities(*arrays, left, right))

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


def _describe(value: Any) -> str:
    """Name an array's shape and dtype, or another value's type, for an error message."""
    if isinstance(value, np.ndarray):
        return f"an array of shape {value.shape} and dtype {value.dtype}"
    return f"a {type(value).__name__}"

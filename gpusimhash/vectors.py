"""Turn user vectors (mappings, pair lists, CSR matrices) into FeatureBatches, with clear errors."""

from __future__ import annotations

import numbers
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from gpusimhash.features import FeatureBatch
from gpusimhash.hashing import feature_states

_PLAIN_NUMBERS = (int, float)


def _check_weight(weight: Any, feature: str, index: int) -> None:
    """Raise TypeError unless ``weight`` is a real number (bools and strings are refused)."""
    if type(weight) in _PLAIN_NUMBERS:
        return
    if isinstance(weight, bool) or not isinstance(weight, numbers.Real):
        raise TypeError(
            f"document {index}, feature {feature!r}: weight must be a real number, "
            f"got {type(weight).__name__} {weight!r}"
        )


def _document_items(document: Any, index: int, kind: str) -> Any:
    """Return the (feature, weight) items of one document of the given kind."""
    if kind == "mapping":
        if not isinstance(document, Mapping):
            raise TypeError(
                f"document {index}: expected a mapping like the first document, "
                f"got {type(document).__name__}"
            )
        return document.items()
    if isinstance(document, (str, bytes, Mapping)) or not isinstance(document, Sequence):
        raise TypeError(
            f"document {index}: expected a list of (feature, weight) pairs like the first "
            f"document, got {type(document).__name__}"
        )
    return document


def vectors_batch(documents: Sequence[Any], kind: str, first_index: int) -> FeatureBatch:
    """Convert mappings or pair lists to a FeatureBatch.

    Parameters
    ----------
    documents : sequence
        Mappings ``{feature: weight}`` (``kind="mapping"``) or lists of ``(feature, weight)``
        pairs (``kind="pairs"``); duplicate features in a pair list are kept as separate entries.
    kind : {"mapping", "pairs"}
        What every document must be.
    first_index : int
        Position of ``documents[0]`` in the caller's input, for error messages.

    Returns
    -------
    FeatureBatch

    Raises
    ------
    TypeError
        A document of another kind, a feature that is not a str, a weight that is not a number.
    ValueError
        A malformed pair, or a NaN, infinite or out-of-range weight.
    """
    vocabulary: dict[str, int] = {}
    columns: list[int] = []
    weights: list[Any] = []
    offsets = [0]
    for position, document in enumerate(documents):
        index = first_index + position
        for item in _document_items(document, index, kind):
            try:
                feature, weight = item
            except (TypeError, ValueError):
                raise ValueError(
                    f"document {index}: expected (feature, weight) pairs, got {item!r}"
                ) from None
            if not isinstance(feature, str):
                raise TypeError(
                    f"document {index}: feature {feature!r} must be a str, "
                    f"got {type(feature).__name__}"
                )
            _check_weight(weight, feature, index)
            columns.append(vocabulary.setdefault(feature, len(vocabulary)))
            weights.append(weight)
        offsets.append(len(columns))
    offsets_array = np.asarray(offsets, dtype=np.int64)
    try:
        values = np.asarray(weights, dtype=np.float64)
    except OverflowError:
        values = np.array([_float_or_inf(w) for w in weights], dtype=np.float64)
    _check_finite(
        values, offsets_array, lambda entry: list(vocabulary)[columns[entry]], first_index
    )
    states = feature_states(list(vocabulary))[np.asarray(columns, dtype=np.int64)]
    return FeatureBatch(states.astype(np.uint32), offsets_array, values)


def _float_or_inf(weight: Any) -> float:
    """Convert to float, mapping integers too large for float64 to infinity (refused later)."""
    try:
        return float(weight)
    except OverflowError:
        return float("inf")


def _check_finite(
    values: np.ndarray, offsets: np.ndarray, feature_of: Any, first_index: int
) -> None:
    """Raise ValueError naming the document and feature of the first NaN or infinite weight."""
    bad = np.flatnonzero(~np.isfinite(values))
    if bad.size:
        entry = int(bad[0])
        document = int(np.searchsorted(offsets, entry, side="right")) - 1
        raise ValueError(
            f"document {first_index + document}, feature {feature_of(entry)!r}: weight "
            f"{values[entry]} is not finite (NaN, infinite or beyond float64)"
        )


def sparse_batches(
    matrix: Any, vocabulary: Sequence[str], batch_size: int
) -> Iterator[tuple[int, FeatureBatch]]:
    """Split a sparse document-by-feature matrix into FeatureBatches of ``batch_size`` rows.

    Parameters
    ----------
    matrix : scipy.sparse matrix or array
        Rows are documents, columns features (converted to CSR; explicit entries are kept).
    vocabulary : sequence of str
        The feature of each column, as scikit-learn's ``get_feature_names_out()`` gives.
    batch_size : int
        Rows per batch.

    Yields
    ------
    first_row : int
        Index of the batch's first document.
    batch : FeatureBatch

    Raises
    ------
    TypeError
        A vocabulary entry that is not a str, or a non-numeric matrix.
    ValueError
        A vocabulary whose length is not the column count, a non-finite entry, or a malformed
        matrix (SciPy's ``check_format``: indptr decreasing, column indices out of range).
    """
    import scipy.sparse as sp  # only for sparse input: SciPy takes a while to import

    csr = sp.csr_matrix(matrix)
    if not np.issubdtype(csr.dtype, np.number) or np.issubdtype(csr.dtype, np.complexfloating):
        raise TypeError(f"sparse matrix must hold real numbers, got dtype {csr.dtype}")
    try:  # SciPy takes a decreasing indptr as it is: a row sliced from it came back empty
        csr.check_format(full_check=True)
    except ValueError as error:
        raise ValueError(f"sparse matrix is malformed: {error}") from None
    vocabulary = list(vocabulary)
    if len(vocabulary) != csr.shape[1]:
        raise ValueError(
            f"vocabulary has {len(vocabulary)} features but the matrix has {csr.shape[1]} columns"
        )
    for column, feature in enumerate(vocabulary):
        if not isinstance(feature, str):
            raise TypeError(f"vocabulary[{column}] must be a str, got {type(feature).__name__}")
    states = feature_states(vocabulary)
    for first in range(0, csr.shape[0], batch_size):
        # one batch covering the matrix is the matrix itself: no row slice, no float64 copy
        rows = csr if first == 0 and batch_size >= csr.shape[0] else csr[first : first + batch_size]
        values = rows.data.astype(np.float64, copy=False)
        offsets = (rows.indptr - rows.indptr[0]).astype(np.int64)
        columns = rows.indices
        _check_finite(
            values, offsets, lambda entry, columns=columns: vocabulary[columns[entry]], first
        )
        yield first, FeatureBatch(states[rows.indices], offsets, values)

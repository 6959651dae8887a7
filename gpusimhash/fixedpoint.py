"""Deterministic fixed-point weights: the arithmetic every engine accumulates in.

For a document with ``n`` entries whose largest absolute weight is ``M = m * 2**x``
(``0.5 <= m < 1``), each weight becomes ``q = rint(ldexp(w, 62 - ceil(log2 n) - x))``, an int64
with ``|q| <= 2**(62 - ceil(log2 n))``. Any sum of ``n`` such terms fits in int64, so slot sums are
exact and independent of order, batch and thread layout. DESIGN.md states the consequences.
"""

from __future__ import annotations

import numpy as np

SUM_BITS = 62


def document_exponents(weights: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Return each document's power-of-two scale ``e_d``.

    Parameters
    ----------
    weights : ndarray, shape (nnz,), dtype float64
        Finite entry weights.
    offsets : ndarray, shape (n_docs + 1,), dtype int64
        CSR row starts.

    Returns
    -------
    ndarray, shape (n_docs,), dtype int64
        ``62 - ceil(log2 n_d) - x_d``; 0 for documents with no entries or only zero weights.
    """
    counts = np.diff(offsets)
    n_docs = counts.size
    max_abs = np.zeros(n_docs, dtype=np.float64)
    nonempty = counts > 0
    if weights.size:
        row_max = np.maximum.reduceat(np.abs(weights), offsets[:-1][nonempty])
        max_abs[nonempty] = row_max
    _, exponent = np.frexp(max_abs)
    log_count = np.zeros(n_docs, dtype=np.int64)
    # ceil(log2 n) == bit_length(n - 1) for n >= 1
    log_count[nonempty] = np.frexp((counts[nonempty] - 1).astype(np.float64))[1]
    scale = SUM_BITS - log_count - exponent.astype(np.int64)
    return np.where(max_abs > 0, scale, 0)


def quantize(weights: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Convert float64 weights to the int64 fixed point of their documents.

    Parameters
    ----------
    weights : ndarray, shape (nnz,), dtype float64
        Finite entry weights.
    offsets : ndarray, shape (n_docs + 1,), dtype int64
        CSR row starts.

    Returns
    -------
    ndarray, shape (nnz,), dtype int64

    Examples
    --------
    >>> import numpy as np
    >>> q = quantize(np.array([3.0, -1.0, 0.5]), np.array([0, 2, 3]))
    >>> [int(v) for v in q] == [3 * 2**59, -(2**59), 2**61]
    True
    """
    scale = np.repeat(document_exponents(weights, offsets), np.diff(offsets))
    return np.rint(np.ldexp(weights, scale.astype(np.int32))).astype(np.int64)

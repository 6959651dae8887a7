"""Operations on packed fingerprints: Hamming distance, cosine estimate, block candidates.

Codes are ``uint8`` arrays of shape ``(n, bits // 8)``, bit ``i`` in byte ``i // 8`` at position
``i % 8`` (least significant first), the layout ``fingerprint`` returns and FAISS reads.
"""

from __future__ import annotations

import numpy as np

from gpusimhash import _validate

# Rows of the left operand per chunk in hamming_matrix: bounds the (chunk, m, words) temporary.
_MATRIX_CHUNK_ELEMENTS = 1 << 24


def code_words(codes: np.ndarray) -> np.ndarray:
    """View codes as uint64 words, zero-padding each row to a multiple of 8 bytes.

    Parameters
    ----------
    codes : ndarray, shape (n, bytes), dtype uint8
        Packed fingerprints.

    Returns
    -------
    ndarray, shape (n, ceil(bytes / 8)), dtype uint64

    Examples
    --------
    >>> code_words(np.array([[1, 0, 0, 0, 0, 0, 0, 0, 3]], dtype=np.uint8)).tolist()
    [[1, 3]]
    """
    width = codes.shape[1]
    padded_width = -(-width // 8) * 8
    if padded_width != width:
        padded = np.zeros((codes.shape[0], padded_width), dtype=np.uint8)
        padded[:, :width] = codes
        codes = padded
    return np.ascontiguousarray(codes).view(np.uint64)


def _same_width(a: np.ndarray, b: np.ndarray) -> None:
    if a.shape[1] != b.shape[1]:
        raise ValueError(
            f"codes must have the same width, got {a.shape[1]} and {b.shape[1]} bytes per row"
        )


def hamming(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamming distance between corresponding rows (broadcasting a single row).

    Parameters
    ----------
    a, b : ndarray, shape (n, bits // 8) or (bits // 8,), dtype uint8
        Packed codes; ``n`` must match or be 1.

    Returns
    -------
    ndarray, shape (n,), dtype int32

    Raises
    ------
    TypeError
        Codes that are not uint8.
    ValueError
        Different widths or row counts.

    Examples
    --------
    >>> import numpy as np
    >>> hamming(np.array([[0b1011, 0]], np.uint8), np.array([[0b0001, 1]], np.uint8))
    array([3], dtype=int32)
    """
    a, b = _validate.codes(a, "a"), _validate.codes(b, "b")
    _same_width(a, b)
    if a.shape[0] != b.shape[0] and 1 not in (a.shape[0], b.shape[0]):
        raise ValueError(f"row counts differ: {a.shape[0]} and {b.shape[0]}")
    return np.bitwise_count(code_words(a) ^ code_words(b)).sum(axis=1, dtype=np.int32)


def hamming_matrix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamming distance between every row of ``a`` and every row of ``b``.

    Parameters
    ----------
    a : ndarray, shape (n, bits // 8), dtype uint8
    b : ndarray, shape (m, bits // 8), dtype uint8

    Returns
    -------
    ndarray, shape (n, m), dtype int32

    Raises
    ------
    TypeError
        Codes that are not uint8.
    ValueError
        Different widths.

    Examples
    --------
    >>> import numpy as np
    >>> hamming_matrix(np.array([[0], [255]], np.uint8), np.array([[1], [3], [255]], np.uint8))
    array([[1, 2, 8],
           [7, 6, 0]], dtype=int32)
    """
    a, b = _validate.codes(a, "a"), _validate.codes(b, "b")
    _same_width(a, b)
    left, right = code_words(a), code_words(b)
    out = np.empty((left.shape[0], right.shape[0]), dtype=np.int32)
    rows = max(1, _MATRIX_CHUNK_ELEMENTS // max(1, right.size))
    for start in range(0, left.shape[0], rows):
        block = left[start : start + rows, np.newaxis, :] ^ right[np.newaxis, :, :]
        out[start : start + rows] = np.bitwise_count(block).sum(axis=2, dtype=np.int32)
    return out


def estimate_cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Estimate the cosine similarity of the vectors behind two sets of codes: cos(pi * d / bits).

    Parameters
    ----------
    a, b : ndarray, shape (n, bits // 8) or (bits // 8,), dtype uint8
        Packed codes, compared row by row as in ``hamming``.

    Returns
    -------
    ndarray, shape (n,), dtype float64

    Examples
    --------
    >>> import numpy as np
    >>> estimate_cosine(np.zeros((1, 4), np.uint8), np.zeros((1, 4), np.uint8))
    array([1.])
    """
    a = _validate.codes(a, "a")
    bits = a.shape[1] * 8
    return np.cos(np.pi * hamming(a, b) / bits)

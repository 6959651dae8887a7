import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from gpusimhash import estimate_cosine, hamming, hamming_matrix


def popcount_distance(a: np.ndarray, b: np.ndarray) -> int:
    return sum((x ^ y).bit_count() for x, y in zip(a.tolist(), b.tolist(), strict=True))


def code_sets(max_rows=12):
    return st.integers(1, 40).flatmap(
        lambda width: st.tuples(
            arrays(np.uint8, st.tuples(st.integers(0, max_rows), st.just(width))),
            arrays(np.uint8, st.tuples(st.integers(0, max_rows), st.just(width))),
        )
    )


@given(code_sets())
def test_hamming_matrix_is_popcount_of_xor(pair):
    a, b = pair
    expected = [[popcount_distance(x, y) for y in b] for x in a]
    assert hamming_matrix(a, b).tolist() == expected


@given(code_sets())
def test_row_hamming_and_cosine(pair):
    a, b = pair
    n = min(len(a), len(b))
    a, b = a[:n], b[:n]
    distances = hamming(a, b)
    assert distances.dtype == np.int32
    assert distances.tolist() == [popcount_distance(x, y) for x, y in zip(a, b, strict=True)]
    bits = a.shape[1] * 8
    np.testing.assert_array_equal(estimate_cosine(a, b), np.cos(np.pi * distances / bits))


def test_hamming_broadcasts_a_single_row():
    codes = np.array([[0], [1], [3]], np.uint8)
    assert hamming(codes, np.array([1], np.uint8)).tolist() == [1, 0, 1]


def test_code_errors():
    with pytest.raises(TypeError, match="uint8"):
        hamming(np.zeros((1, 8), np.int64), np.zeros((1, 8), np.int64))
    with pytest.raises(ValueError, match="same width"):
        hamming(np.zeros((1, 8), np.uint8), np.zeros((1, 4), np.uint8))
    with pytest.raises(ValueError, match="row counts"):
        hamming(np.zeros((2, 8), np.uint8), np.zeros((3, 8), np.uint8))
    with pytest.raises(ValueError, match="shape"):
        hamming(np.zeros((1, 1, 8), np.uint8), np.zeros((1, 8), np.uint8))

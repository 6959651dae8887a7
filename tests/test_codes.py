import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from gpusimhash import candidates, estimate_cosine, hamming, hamming_matrix


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


def brute_force_candidates(codes: np.ndarray, num_blocks: int) -> list[tuple[int, int]]:
    bits = np.unpackbits(codes, axis=1, bitorder="little")
    size = bits.shape[1] // num_blocks
    found = []
    for i in range(len(codes)):
        for j in range(i + 1, len(codes)):
            blocks_i = bits[i].reshape(num_blocks, size)
            blocks_j = bits[j].reshape(num_blocks, size)
            if any((blocks_i[k] == blocks_j[k]).all() for k in range(num_blocks)):
                found.append((i, j))
    return found


@given(
    st.sampled_from([(4, 1), (4, 2), (4, 8), (4, 32), (2, 4), (3, 3), (8, 16)]),
    st.integers(0, 25),
    st.integers(0, 2**32 - 1),
)
def test_candidates_are_exactly_the_pairs_sharing_a_block(shape, n, seed):
    width, num_blocks = shape
    rng = np.random.default_rng(seed)
    # few distinct values per byte so that blocks collide often
    codes = rng.choice(np.array([0, 1, 0x80, 0xFF], np.uint8), size=(n, width))
    pairs = candidates(codes, num_blocks)
    assert pairs.dtype == np.int64
    assert pairs.shape[1] == 2
    assert [tuple(p) for p in pairs.tolist()] == brute_force_candidates(codes, num_blocks)


def test_candidates_reject_blocks_that_do_not_divide_bits():
    with pytest.raises(ValueError, match="does not divide bits=32"):
        candidates(np.zeros((3, 4), np.uint8), 5)
    with pytest.raises(ValueError, match="num_blocks"):
        candidates(np.zeros((3, 4), np.uint8), 0)


def test_candidates_of_identical_codes_list_each_pair_once():
    pairs = candidates(np.zeros((4, 8), np.uint8), 4)
    assert pairs.tolist() == [[0, 1], [0, 2], [0, 3], [1, 2], [1, 3], [2, 3]]

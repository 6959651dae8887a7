"""The seed's blocking baseline, `gpusimhash.evaluation.block_candidates`."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import gpusimhash
from gpusimhash.evaluation import block_candidates


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
    pairs = block_candidates(codes, num_blocks)
    assert pairs.dtype == np.int64
    assert pairs.shape[1] == 2
    assert [tuple(p) for p in pairs.tolist()] == brute_force_candidates(codes, num_blocks)


def test_candidates_reject_blocks_that_do_not_divide_bits():
    with pytest.raises(ValueError, match="does not divide bits=32"):
        block_candidates(np.zeros((3, 4), np.uint8), 5)
    with pytest.raises(ValueError, match="num_blocks"):
        block_candidates(np.zeros((3, 4), np.uint8), 0)


def test_candidates_of_identical_codes_list_each_pair_once():
    pairs = block_candidates(np.zeros((4, 8), np.uint8), 4)
    assert pairs.tolist() == [[0, 1], [0, 2], [0, 3], [1, 2], [1, 3], [2, 3]]


def test_the_deprecated_top_level_candidates_warns_and_forwards():
    codes = np.array([[0x0F], [0x1F], [0xF0]], np.uint8)
    with pytest.warns(DeprecationWarning, match="block_candidates"):
        pairs = gpusimhash.candidates(codes, 2)
    np.testing.assert_array_equal(pairs, block_candidates(codes, 2))

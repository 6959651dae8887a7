"""collapse gives np.unique(axis=0)'s rows and inverse, codes sharing first words included."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from gpusimhash.join._groups import collapse


@st.composite
def code_words(draw):
    """Rows of uint64 words from few values, so that rows share first words and repeat."""
    n_words = draw(st.integers(1, 4))
    values = st.sampled_from([0, 1, 7, 2**63, 2**64 - 1])
    rows = draw(hnp.arrays(np.uint64, (draw(st.integers(0, 30)), n_words), elements=values))
    repeats = draw(st.lists(st.integers(0, max(len(rows) - 1, 0)), max_size=10))
    return np.concatenate([rows, rows[repeats]]) if len(rows) else rows


@given(code_words())
def test_collapse_is_numpys_unique_of_the_rows(words):
    unique, inverse = collapse(words)
    expected, expected_inverse = np.unique(words, axis=0, return_inverse=True)
    np.testing.assert_array_equal(unique, expected)
    np.testing.assert_array_equal(inverse, expected_inverse.reshape(-1))
    assert inverse.dtype == np.int64


def test_near_duplicate_codes_sharing_their_first_word():
    rng = np.random.default_rng(5)
    base = rng.integers(0, 2**63, (200, 4), dtype=np.uint64)
    near = base.copy()
    near[:, 3] ^= np.uint64(1)  # one bit apart, in the last word
    words = np.concatenate([base, near, base[:50]])[rng.permutation(450)]
    unique, inverse = collapse(words)
    expected, expected_inverse = np.unique(words, axis=0, return_inverse=True)
    np.testing.assert_array_equal(unique, expected)
    np.testing.assert_array_equal(inverse, expected_inverse.reshape(-1))

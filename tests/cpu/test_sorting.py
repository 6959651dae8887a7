"""stable_argsort: the order np.argsort(kind="stable") gives, for every key type the loops sort."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusimhash._cpu._sorting import stable_argsort

DTYPES = st.sampled_from([np.int32, np.int64, np.uint32, np.float64])


@settings(max_examples=200, deadline=None)
@given(
    dtype=DTYPES,
    # sizes across the insertion runs and several merge passes; few distinct values: many ties
    size=st.integers(0, 300),
    distinct=st.integers(1, 400),
    seed=st.integers(0, 2**32 - 1),
)
def test_the_order_is_the_stable_argsort(dtype, size, distinct, seed):
    keys = np.random.default_rng(seed).integers(0, distinct, size).astype(dtype)
    np.testing.assert_array_equal(stable_argsort(keys), np.argsort(keys, kind="stable"))


def test_a_slice_of_a_larger_array_is_sorted_in_place_of_its_own_indices():
    keys = np.array([9, 3, 7, 3, 1, 3, 8], dtype=np.uint32)
    assert stable_argsort(keys[1:6]).tolist() == [3, 0, 2, 4, 1]

"""distinct_values is np.unique's result and value_positions is searchsorted's, by either path."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from gpusimhash._unique import DENSE_SPAN, distinct_values, value_positions

# narrow ranges take the table path, wide ones the sort
RANGES = st.sampled_from(
    [(0, 50), (-20, 20), (2**64 - 60, 2**64 - 1), (0, 2**40), (-(2**62), 2**62)]
)


@st.composite
def integer_arrays(draw, min_side=0):
    low, high = draw(RANGES)
    holding = [t for t in (np.int32, np.int64, np.uint64) if np.iinfo(t).min <= low]
    dtype = draw(st.sampled_from([t for t in holding if high <= np.iinfo(t).max]))
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=2, min_side=min_side, max_side=40))
    return draw(hnp.arrays(dtype, shape, elements=st.integers(low, high)))


@given(integer_arrays())
def test_distinct_values_are_numpys_unique(values):
    found = distinct_values(values)
    np.testing.assert_array_equal(found, np.unique(values))
    assert found.dtype == values.dtype


@given(st.lists(integer_arrays(), min_size=1, max_size=5))
def test_sorted_runs_give_the_same_values(arrays):
    runs = np.concatenate([np.sort(a.reshape(-1).astype(np.int64)) for a in arrays])
    np.testing.assert_array_equal(distinct_values(runs, sorted_runs=True), np.unique(runs))


@given(integer_arrays(min_side=1), st.data())
def test_value_positions_are_searchsorted(values, data):
    distinct = np.unique(values)
    wanted = values[data.draw(hnp.arrays(np.intp, 30, elements=st.integers(0, len(values) - 1)))]
    np.testing.assert_array_equal(
        value_positions(distinct, wanted), np.searchsorted(distinct, wanted)
    )


@pytest.mark.parametrize("spread", [1, DENSE_SPAN, DENSE_SPAN + 1, 1000])
def test_both_paths_at_the_span_bound(spread):
    values = np.arange(0, 64 * spread, spread, dtype=np.int64)[::-1].copy()
    np.testing.assert_array_equal(distinct_values(values), np.sort(values))
    np.testing.assert_array_equal(value_positions(np.sort(values), values), np.arange(63, -1, -1))

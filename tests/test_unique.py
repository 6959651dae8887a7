"""distinct_values is np.unique's result, by one sort."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from gpusimhash._unique import distinct_values


@given(
    hnp.arrays(
        st.sampled_from([np.int32, np.int64, np.uint64]),
        hnp.array_shapes(min_dims=1, max_dims=2, min_side=0, max_side=40),
        elements=st.integers(0, 50),
    )
)
def test_distinct_values_are_numpys_unique(values):
    found = distinct_values(values)
    np.testing.assert_array_equal(found, np.unique(values))
    assert found.dtype == values.dtype

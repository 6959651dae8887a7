"""Segment arithmetic on NumPy: ranks and ranges as Python lists would give them."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from gpusimhash import _segments

SEGMENTS = st.lists(st.tuples(st.integers(-50, 50), st.integers(0, 6)), max_size=20)


@given(SEGMENTS)
def test_ranges_and_ranks_are_the_concatenated_aranges(segments):
    first = np.array([f for f, _ in segments], dtype=np.int64)
    sizes = np.array([n for _, n in segments], dtype=np.int64)
    ranges = [v for f, n in segments for v in range(f, f + n)]
    ranks = [k for _, n in segments for k in range(n)]
    assert _segments.ranges(first, sizes).tolist() == ranges
    assert _segments.ranks(sizes).tolist() == ranks
    assert _segments.ranges(first, sizes).dtype == _segments.ranks(sizes).dtype == np.int64

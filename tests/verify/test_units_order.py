"""feature_units' order of documents by code and hash is the lexsort's, by either path."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from gpusimhash.verify._units import _by_code_and_hash

# high halves of the hashes shared with other low halves, and codes past 2**31 (the lexsort)
HALVES = st.sampled_from([0, 1, 2**31 - 1, 2**32 - 1])
CODES = st.sampled_from([0, 1, 5, 2**31 - 1, 2**31, 2**40])


@given(st.data())
def test_the_order_is_the_lexsorts(data):
    n = data.draw(st.integers(0, 40))
    code = data.draw(hnp.arrays(np.int64, n, elements=CODES))
    high = data.draw(hnp.arrays(np.uint64, n, elements=HALVES))
    low = data.draw(hnp.arrays(np.uint64, n, elements=HALVES))
    hashes = (high << np.uint64(32)) | low
    expected = np.lexsort((np.arange(n), hashes, code))
    np.testing.assert_array_equal(_by_code_and_hash(code, hashes), expected)

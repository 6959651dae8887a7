"""feature_units: documents of one code and identical features are one unit, every other alone."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusimhash.fingerprinting import featurize
from gpusimhash.verify._features import DocumentFeatures
from gpusimhash.verify._units import feature_units

TEXTS = ["", "a b", "b a", "a b b", "a b c", "x", "x x", "y z"]


def _expected(code, features, rows, empty_as_duplicates):
    """Units by brute force: the same code and the same features, entry by entry."""
    n = code.size
    keys = {}
    for k, row in enumerate(rows.tolist()):
        a, b = int(features.offsets[k]), int(features.offsets[k + 1])
        if a == b:
            keys[row] = ("empty",) if empty_as_duplicates else ("alone", row)
        else:
            entries = (features.states[a:b].tolist(), features.weights[a:b].tolist())
            keys[row] = (int(code[row]), repr(entries))
    key = [keys.get(row, ("alone", row)) for row in range(n)]
    first = {}
    unit = np.array([first.setdefault(k, len(first)) for k in key], dtype=np.int64)
    return unit, np.array([key.index(k) for k in first], dtype=np.int64)


@settings(max_examples=200, deadline=None)
@given(
    docs=st.lists(st.tuples(st.sampled_from(TEXTS), st.integers(0, 3)), max_size=25),
    taken=st.data(),
    empty_as_duplicates=st.booleans(),
)
def test_units_are_the_documents_of_one_code_and_identical_features(
    docs, taken, empty_as_duplicates
):
    code = np.array([c for _, c in docs], dtype=np.int64)
    every = DocumentFeatures.from_batch(featurize([text for text, _ in docs]))
    picked = taken.draw(st.lists(st.booleans(), min_size=len(docs), max_size=len(docs)))
    rows = np.flatnonzero(np.array(picked, dtype=bool))
    features = every.take(rows)
    unit, representative = feature_units(code, features, rows, empty_as_duplicates)
    expected_unit, expected_representative = _expected(code, features, rows, empty_as_duplicates)
    np.testing.assert_array_equal(unit, expected_unit)
    np.testing.assert_array_equal(representative, expected_representative)

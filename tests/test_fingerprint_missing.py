"""fingerprint(on_missing=): missing texts in Arrow and pandas columns refused or read as empty."""

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusimhash import fingerprint
from gpusimhash.fingerprinting import FingerprintSettings

TEXTS = ["the cat sat", "a dog ran", None, "the cat sat", None]
FILLED = ["" if text is None else text for text in TEXTS]


def columns():
    return {
        "array": pa.array(TEXTS),
        "large": pa.array(TEXTS, type=pa.large_string()),
        "chunked": pa.chunked_array([TEXTS[:1], TEXTS[1:3], TEXTS[3:]]),
        "series-none": pd.Series(TEXTS, dtype=object),
        "series-nan": pd.Series([np.nan if t is None else t for t in TEXTS], dtype=object),
        "series-string": pd.Series(TEXTS, dtype="string"),
        "series-category": pd.Series(TEXTS, dtype="category"),
    }


@pytest.mark.parametrize("name", list(columns()))
def test_missing_texts_are_refused_by_row_or_read_as_empty(name):
    column = columns()[name]
    with pytest.raises(ValueError, match=r"document 2: the text is missing \(2 of 5 documents\)"):
        fingerprint(column, bits=64)
    codes = fingerprint(column, bits=64, on_missing="featureless")
    np.testing.assert_array_equal(codes, fingerprint(FILLED, bits=64))
    np.testing.assert_array_equal(codes[2], fingerprint([""], bits=64)[0])
    settings_codes = FingerprintSettings(bits=64).fingerprint(column, on_missing="featureless")
    np.testing.assert_array_equal(settings_codes, codes)


def test_columns_without_missing_texts_and_bad_policy():
    texts = [t for t in TEXTS if t is not None]
    expected = fingerprint(texts, bits=64)
    for column in (pa.chunked_array([texts[:1], texts[1:]]), pd.Series(texts)):
        np.testing.assert_array_equal(fingerprint(column, bits=64), expected)
    with pytest.raises(
        ValueError, match="on_missing must be one of error, featureless, got 'drop'"
    ):
        fingerprint(texts, bits=64, on_missing="drop")


@settings(max_examples=40, deadline=None)
@given(st.lists(st.one_of(st.none(), st.text(max_size=12)), max_size=20), st.integers(1, 4))
def test_featureless_is_the_code_of_an_empty_text(texts, chunk):
    pieces = [texts[k : k + chunk] for k in range(0, len(texts), chunk)] or [[]]
    column = pa.chunked_array(pieces, type=pa.string())
    codes = fingerprint(column, bits=64, on_missing="featureless", batch_size=3)
    filled = ["" if t is None else t for t in texts]
    np.testing.assert_array_equal(codes, fingerprint(filled, bits=64))

import dask.bag as db
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

from gpusimhash import TextFeaturizer, fingerprint
from gpusimhash.distributed import fingerprint_collection

pytestmark = pytest.mark.slow  # Dask workers start in every test

TEXTS = [f"document {i} about topic {i % 7} and word{i % 3}" for i in range(50)] + [""]


@pytest.mark.parametrize("npartitions", [1, 3, 8])
def test_bag_partitions_give_the_same_codes_as_one_call(npartitions):
    featurizer = TextFeaturizer(ngram=2)
    codes = fingerprint_collection(
        db.from_sequence(TEXTS, npartitions=npartitions), bits=128, seed=9, featurizer=featurizer
    )
    expected = fingerprint(TEXTS, bits=128, seed=9, featurizer=featurizer)
    np.testing.assert_array_equal(codes.compute(scheduler="threads"), expected)


def test_dataframe_column_of_texts():
    frame = dd.from_pandas(pd.DataFrame({"text": TEXTS}), npartitions=4)
    codes = fingerprint_collection(frame["text"], bits=64)
    np.testing.assert_array_equal(codes.compute(scheduler="sync"), fingerprint(TEXTS, bits=64))


def test_weighted_vectors_in_a_bag():
    vectors = [{"a": i, "b": -1.5, f"c{i}": 2} for i in range(20)]
    codes = fingerprint_collection(db.from_sequence(vectors, npartitions=5), bits=32)
    np.testing.assert_array_equal(codes.compute(scheduler="sync"), fingerprint(vectors, bits=32))


def test_bad_collections_and_arguments():
    with pytest.raises(TypeError, match="Dask bag or Series"):
        fingerprint_collection(TEXTS)
    with pytest.raises(ValueError, match="bits"):
        fingerprint_collection(db.from_sequence(TEXTS), bits=7)

"""DocumentFeatures and FeatureBatch arrays that do not fit together: refused, by name."""

import subprocess
import sys

import numpy as np
import pytest

from gpusimhash import DocumentFeatures, FeatureBatch
from gpusimhash.fingerprinting import featurize

TEXTS = ["red fox jumps", "red fox jumps high", "", "blue sky", "red fox"]


def _arrays():
    """The five arrays of real features, as keyword arguments."""
    features = DocumentFeatures.from_batch(featurize(TEXTS))
    names = ("states", "offsets", "weights", "exponents", "squared_norms")
    return {name: getattr(features, name) for name in names}


@pytest.mark.parametrize(
    ("change", "match"),
    [
        # offsets past the states: the compiled loops would read far outside them
        ({"offsets": np.array([0, 3, 7, 7, 9, 10**9])}, "offsets must run from 0 to the 11 states"),
        ({"offsets": np.array([1, 3, 7, 7, 9, 11])}, "got 1 to 11"),
        ({"offsets": np.array([0, 5, 3, 7, 9, 11])}, "decreasing on the way"),
        (
            {"states": np.arange(11, dtype=np.int64)},
            "states must be a one-dimensional array of uint32",
        ),
        ({"offsets": [0, 3, 7, 7, 9, 11]}, "offsets must be .* got a list"),
        ({"weights": np.ones((11, 1))}, r"weights must be .* shape \(11, 1\)"),
        ({"exponents": np.zeros(4, np.int64)}, "offsets holds 6 values where 4 documents"),
        ({"squared_norms": np.ones(4)}, "squared_norms holds 4 values where 5 documents"),
        ({"weights": np.ones(10)}, "weights holds 10 values where .* need 11"),
    ],
)
def test_arrays_that_do_not_fit_together_are_refused_by_name(change, match):
    arrays = _arrays()
    assert arrays["offsets"].tolist() == [0, 3, 7, 7, 9, 11]  # what the changes are written for
    with pytest.raises(ValueError, match=match):
        DocumentFeatures(**(arrays | change))


@pytest.mark.parametrize("step", [2, 3])
@pytest.mark.parametrize("narrow", [False, True])
def test_arrays_that_are_not_contiguous_give_the_same_similarities(step, narrow):
    arrays = _arrays()
    # counts: exact in float32, which verification widens
    kept = arrays | ({"weights": arrays["weights"].astype(np.float32)} if narrow else {})
    spread = {}
    for name, values in kept.items():
        wide = np.zeros(values.size * step, values.dtype)
        wide[::step] = values
        spread[name] = wide[::step]  # a strided view of the same values
    features = DocumentFeatures(**spread)
    assert all(getattr(features, name).flags.c_contiguous for name in arrays)
    pairs = np.array([[0, 1], [0, 4], [1, 4], [3, 4], [2, 3]])
    expected = DocumentFeatures(**arrays).similarities(pairs)
    found = features.widened().similarities(pairs)
    for measure in ("cosine", "jaccard", "weighted_jaccard"):
        np.testing.assert_array_equal(getattr(found, measure), getattr(expected, measure))


@pytest.mark.parametrize(
    ("states", "offsets", "weights", "error", "match"),
    [
        # offsets past the states: merging the documents wrote outside its buffers
        ([1, 2], [0, 2_000_000_000], [1.0, 1.0], ValueError, "offsets must run from 0 to nnz = 2"),
        ([1, 2], [0, 2, 1, 2], None, ValueError, "non-decreasing"),
        ([1, 2], [0, 2], [1.0], ValueError, r"weights must have shape \(2,\)"),
        ([1, 2], [0, 2], [1.0, np.nan], ValueError, "finite"),
        ([1, 2], [0.0, 2.0], None, TypeError, "offsets must be integers"),
        ([[1, 2]], [0, 2], None, ValueError, "states must be one-dimensional"),
    ],
)
def test_batches_that_do_not_fit_together_are_refused_before_merging(
    states, offsets, weights, error, match
):
    batch = FeatureBatch(
        np.asarray(states, np.uint32),
        np.asarray(offsets),
        None if weights is None else np.asarray(weights),
    )
    with pytest.raises(error, match=match):
        DocumentFeatures.from_batch(batch)


def test_a_batch_of_lists_is_refused_by_name():
    with pytest.raises(TypeError, match="states must be a numpy array, got list"):
        DocumentFeatures.from_batch(FeatureBatch([1, 2], np.array([0, 2]), None))


@pytest.mark.parametrize("outside", [-1, 5])
def test_compare_refuses_documents_outside_the_features(outside):
    # in a process of its own: reading outside the features crashed the process
    script = f"""
import numpy as np
from gpusimhash import DocumentFeatures
from gpusimhash.fingerprinting import featurize
compare = DocumentFeatures.from_batch(featurize({TEXTS!r})).comparer("cpu")
for left, right in (([0], [{outside}]), ([{outside}], [0])):
    try:
        compare(np.array(left, np.int64), np.array(right, np.int64))
    except ValueError as error:
        print(error)
print(compare(np.array([0], np.int64), np.array([1], np.int64))[0].tolist())
"""
    run = subprocess.run(
        [sys.executable, "-c", script], check=False, capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 0, run.stderr
    right, left, cosine = run.stdout.splitlines()
    assert right == f"compare: right must lie in [0, 5), got {outside} to {outside}"
    assert left == f"compare: left must lie in [0, 5), got {outside} to {outside}"
    features = DocumentFeatures.from_batch(featurize(TEXTS))
    assert cosine == str(features.similarities([[0, 1]]).cosine.tolist())


@pytest.mark.parametrize("outside", [-2, 5])
def test_take_refuses_rows_outside_the_features(outside):
    # a negative row took one document's sizes and another's offsets
    features = DocumentFeatures.from_batch(featurize(TEXTS))
    with pytest.raises(ValueError, match=r"take: rows must lie in \[0, 5\)"):
        features.take([1, outside])

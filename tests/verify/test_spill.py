"""`FeatureSpill`: features appended batch by batch, read back by row, narrowed exactly."""

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusimhash.cluster._documents import cluster_documents
from gpusimhash.features import FeatureBatch
from gpusimhash.fingerprinting import featurize
from gpusimhash.join._exact import near_duplicate_graph
from gpusimhash.join._graph import join_with_features
from gpusimhash.verify import _spill
from gpusimhash.verify._features import DocumentFeatures
from gpusimhash.verify._spill import feature_spill
from gpusimhash.verify._threshold import Threshold


@pytest.mark.parametrize("window", [1, 5, 1 << 20])
@pytest.mark.parametrize("batch_size", [1, 3, 100])
def test_spill_reads_back_what_was_appended(batch_size, window, monkeypatch):
    monkeypatch.setattr(_spill, "_WINDOW", window)  # windows of a few entries
    rng = np.random.default_rng(0)
    docs = [" ".join(rng.choice(list("abcdefg"), size=rng.integers(0, 9))) for _ in range(40)]
    whole = DocumentFeatures.from_batch(featurize(docs))
    rows = np.sort(rng.choice(40, size=15, replace=False))
    with feature_spill() as spill:
        for start in range(0, 40, batch_size):
            spill.append(DocumentFeatures.from_batch(featurize(docs[start : start + batch_size])))
        got = spill.gather(rows)
        directory = spill.directory
    expected = whole.take(rows)
    for name in ("states", "offsets", "weights", "exponents", "squared_norms"):
        np.testing.assert_array_equal(getattr(got, name), getattr(expected, name))
    assert not directory.exists()


def test_spill_refuses_rows_out_of_order():
    with feature_spill() as spill:
        spill.append(DocumentFeatures.from_batch(featurize(["a", "b", "c"])))
        with pytest.raises(
            ValueError, match=r"rows must be ascending document indices in \[0, 3\)"
        ):
            spill.gather([2, 1])
        with pytest.raises(ValueError, match="rows must be ascending"):
            spill.gather([3])


def test_spill_of_featureless_documents():
    with feature_spill() as spill:
        spill.append(DocumentFeatures.from_batch(featurize(["", "!"])))
        assert spill.gather([1]).sizes.tolist() == [0]


def test_a_short_write_names_the_spill_file_and_the_full_disk():
    with feature_spill() as spill:
        spill._files["weights"].close()
        spill._files["weights"] = open("/dev/full", "wb", buffering=0)  # noqa: SIM115
        with pytest.raises(OSError, match="the disk is full or a file size limit") as error:
            spill.append(DocumentFeatures.from_batch(featurize(["a b c"] * 2000)))
        assert error.value.filename == str(spill.directory / "weights")


LADDER = (np.int8, np.int16, np.float32, np.float64)


def _weighted_features(rng, n_docs, exact):
    """Documents of a few states out of 12, weights from each rung of the narrowing ladder.

    Small counts fit int8, 300 int16, 1234567 and 8388607 float32 (and one not at all, unless
    exact). The weights of 23 significant bits make float32 products inexact: the verification
    must widen them before multiplying.
    """
    sizes = rng.integers(0, 6, size=n_docs)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    states = rng.integers(0, 12, size=offsets[-1]).astype(np.uint32)
    choices = [[1.0, 2.0, -3.0], [1.0, 300.0], [2.0, 1234567.0, 8388607.0]][rng.integers(0, 3)]
    weights = rng.choice(choices, size=offsets[-1])
    if not exact and weights.size:
        weights[rng.integers(0, weights.size)] = 0.1
    return DocumentFeatures.from_batch(FeatureBatch(states, offsets, weights))


def _narrowest(weights):
    return next(d for d in LADDER if np.array_equal(weights.astype(d), weights))


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), exact=st.booleans(), window=st.sampled_from([1, 4, 1 << 20]))
def test_narrow_gather_is_the_narrowest_exact_dtype(seed, exact, window):
    rng = np.random.default_rng(seed)
    whole = _weighted_features(rng, 30, exact)
    rows = np.flatnonzero(rng.random(30) < 0.7)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_spill, "_WINDOW", window)
        with feature_spill() as spill:
            spill.append(whole)
            narrow = spill.gather(rows, narrow=True)
    expected = whole.take(rows)
    assert narrow.weights.dtype == _narrowest(expected.weights)
    widened = narrow.widened()
    assert widened.weights.dtype == np.float64
    for name in ("states", "offsets", "weights", "exponents", "squared_norms"):
        np.testing.assert_array_equal(getattr(widened, name), getattr(expected, name))


@pytest.mark.slow
@pytest.mark.parametrize("method", ["star", "components"])
@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    exact=st.booleans(),
    measure=st.sampled_from(["cosine", "jaccard"]),
)
def test_clustering_on_narrowed_weights_is_bit_identical(method, seed, exact, measure):
    rng = np.random.default_rng(seed)
    features = _weighted_features(rng, 40, exact)
    codes = rng.integers(0, 4, size=(40, 1)).astype(np.uint8)  # many shared and near codes
    limit = Threshold(measure, 0.5, 2, True)
    graph = join_with_features(
        codes, features.sizes > 0, lambda c: near_duplicate_graph(c, max_distance=2)
    )

    def narrowed(rows):
        part = features.take(rows)
        return dataclasses.replace(part, weights=part.weights.astype(_narrowest(part.weights)))

    wide = cluster_documents(graph, features.take, limit, method=method)
    narrow = cluster_documents(graph, narrowed, limit, method=method)
    for name in ("labels", "kept_for", "similarity", "unit"):
        np.testing.assert_array_equal(getattr(narrow, name), getattr(wide, name))
        assert getattr(narrow, name).dtype == getattr(wide, name).dtype
    assert (narrow.below_threshold, narrow.pairs_verified) == (
        wide.below_threshold,
        wide.pairs_verified,
    )

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import gpusimhash
from gpusimhash import (
    cluster_labels,
    cluster_summary,
    keep_one,
    near_duplicate_components,
    near_duplicates,
)


def union_find_labels(pairs, n):
    parent = list(range(n))

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in pairs:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    roots = [find(i) for i in range(n)]
    numbering = {}
    return np.array([numbering.setdefault(r, len(numbering)) for r in roots], dtype=np.int64)


@given(
    st.integers(1, 30).flatmap(
        lambda n: st.tuples(
            st.just(n), st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)))
        )
    )
)
def test_labels_match_union_find(case):
    n, pairs = case
    labels = cluster_labels(np.array(pairs, dtype=np.int64).reshape(-1, 2), n)
    np.testing.assert_array_equal(labels, union_find_labels(pairs, n))
    assert labels.dtype == np.int64


def test_near_duplicate_components_equal_labels_of_pairs():
    rng = np.random.default_rng(0)
    centres = rng.integers(0, 256, (30, 8), dtype=np.uint8)
    codes = centres[rng.integers(0, 30, 2000)]
    codes ^= np.packbits(rng.random((2000, 64)) < 0.03, axis=1, bitorder="little")
    for radius in (0, 2, 5):
        expected = cluster_labels(near_duplicates(codes, max_distance=radius), 2000)
        labels = near_duplicate_components(codes, max_distance=radius)
        np.testing.assert_array_equal(labels, expected)


def test_giant_identical_group_without_pairs():
    codes = np.zeros((200_000, 8), np.uint8)  # 2e10 pairs if materialized
    codes[-1, 0] = 0b111
    labels = near_duplicate_components(codes, max_distance=3)
    assert labels.max() == 0
    labels = near_duplicate_components(codes, max_distance=2)
    assert labels[-1] == 1
    assert (labels[:-1] == 0).all()


def test_the_deprecated_cluster_near_duplicates_warns_and_forwards():
    codes = np.array([[0b0000], [0b0001], [0b0011], [0b1111_0000]], dtype=np.uint8)
    with pytest.warns(DeprecationWarning, match="near_duplicate_components"):
        labels = gpusimhash.cluster_near_duplicates(codes, max_distance=1)
    assert labels.tolist() == near_duplicate_components(codes, max_distance=1).tolist()


def test_keep_one_policies():
    labels = np.array([0, 1, 0, 2, 1, 0])
    assert keep_one(labels).tolist() == [True, True, False, True, False, False]
    lengths = [5, 1, 9, 4, 3, 9]
    assert np.flatnonzero(keep_one(labels, policy="longest", lengths=lengths)).tolist() == [2, 3, 4]
    scores = [0.1, 0.9, -1.0, 0.0, 0.2, 0.5]
    assert np.flatnonzero(keep_one(labels, policy="score", scores=scores)).tolist() == [1, 3, 5]
    assert keep_one(np.empty(0, np.int64)).shape == (0,)


def test_keep_one_errors():
    with pytest.raises(ValueError, match="policy"):
        keep_one([0, 1], policy="shortest")
    with pytest.raises(ValueError, match="lengths="):
        keep_one([0, 1], policy="longest")
    with pytest.raises(ValueError, match="scores must have shape"):
        keep_one([0, 1], policy="score", scores=[1.0])
    with pytest.raises(ValueError, match="NaN"):
        keep_one([0, 1], policy="score", scores=[1.0, float("nan")])
    with pytest.raises(TypeError, match="integers"):
        keep_one([0.5, 1.0])


def test_summary():
    summary = cluster_summary([0, 0, 1, 0, 2, 2, 3])
    assert summary.n_documents == 7
    assert summary.n_clusters == 4
    assert summary.n_duplicate_clusters == 2
    assert summary.duplicates_removed == 3
    assert summary.largest_cluster == 3
    assert summary.size_counts == {1: 2, 2: 1, 3: 1}
    assert summary.to_dict()["size_counts"] == {"1": 2, "2": 1, "3": 1}
    assert cluster_summary([]).largest_cluster == 0


def test_bad_pairs():
    with pytest.raises(ValueError, match=r"\[0, 3\)"):
        cluster_labels([[0, 3]], 3)
    with pytest.raises(ValueError, match="shape"):
        cluster_labels([[0, 1, 2]], 3)
    with pytest.raises(TypeError, match="integers"):
        cluster_labels([[0.0, 1.0]], 3)

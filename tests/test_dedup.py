import numpy as np
import pytest
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from gpusimhash.dedup import choose_kept, cluster_groups, dedup_file


def test_cluster_groups_match_brute_force_components():
    rng = np.random.default_rng(0)
    for _ in range(20):
        n_unique = int(rng.integers(1, 30))
        inverse = rng.integers(0, n_unique, 60)
        inverse[:n_unique] = np.arange(n_unique)  # every distinct code appears
        pairs = np.unique(
            np.sort(rng.integers(0, n_unique, (int(rng.integers(0, 20)), 2)), 1), axis=0
        )
        pairs = pairs[pairs[:, 0] != pairs[:, 1]]
        labels = cluster_groups(inverse, pairs)
        # oracle: documents linked when their codes are equal or paired
        docs = np.arange(inverse.size)
        same = inverse[:, None] == inverse[None, :]
        paired = np.zeros((n_unique, n_unique), bool)
        paired[pairs[:, 0], pairs[:, 1]] = paired[pairs[:, 1], pairs[:, 0]] = True
        linked = same | paired[inverse][:, inverse]
        _, expected = connected_components(coo_matrix(linked), directed=False)
        assert np.array_equal(
            labels[:, None] == labels[None, :], expected[:, None] == expected[None, :]
        )
        # numbered by first appearance
        _, first = np.unique(labels, return_index=True)
        assert np.all(np.diff(first) > 0)
        assert docs.size == labels.size


def test_choose_kept_policies():
    labels = np.array([0, 1, 0, 1, 2, 0])
    lengths = np.array([5, 9, 7, 9, 1, 7])
    scores = np.array([0.1, 3.0, 0.5, 4.0, 0.0, 0.9])
    assert choose_kept(labels, "first", lengths, None).tolist() == [0, 1, 4]
    assert choose_kept(labels, "longest", lengths, None).tolist() == [2, 1, 4]  # ties: first
    assert choose_kept(labels, "score", lengths, scores).tolist() == [5, 3, 4]


def test_dedup_file_refuses_bad_options(tmp_path):
    path = tmp_path / "a.txt"
    path.write_text("a\nb\n")
    with pytest.raises(ValueError, match="keep must be one of"):
        dedup_file(path, tmp_path / "o", keep="best", max_distance=3)
    with pytest.raises(ValueError, match="score field"):
        dedup_file(path, tmp_path / "o", keep="score", max_distance=3)
    with pytest.raises(ValueError, match="exactly one"):
        dedup_file(path, tmp_path / "o")


def test_dedup_file_reports_codes_clusters_and_kept(tmp_path):
    path = tmp_path / "a.txt"
    path.write_text("red fox\nblue sky\nred fox\nred fox\n")
    result = dedup_file(path, tmp_path / "o", bits=64, max_distance=0)
    assert result.kept.tolist() == [True, True, False, False]
    assert result.cluster.tolist() == [0, -1, 0, 0]
    assert result.codes.shape == (4, 8)
    assert result.summary["results"]["near_duplicate_pairs"] == 3
    assert result.summary["results"]["clusters"] == 1

"""DuplicateGroups and CodeGraph built from arrays: codes past the inverse index, refused."""

import numpy as np
import pytest

from gpusimhash import CodeGraph, DuplicateGroups, near_duplicate_graph, near_duplicate_groups

CODES = np.array([[1], [1], [3], [200], [201]], dtype=np.uint8)


@pytest.mark.parametrize(
    ("inverse", "pairs", "error", "match"),
    [
        # -1 was read as the last distinct code
        ([0, 1, 2, 2], [[-1, 0]], ValueError, r"unique_pairs must lie in \[0, 3\), got -1"),
        # 2**32 + 1 wrapped to code 1 in the graph
        ([0, 1, 2], [[0, 2**32 + 1]], ValueError, r"unique_pairs must lie in \[0, 3\)"),
        ([0, -1, 2], [[0, 2]], ValueError, "inverse must lie in"),
        ([0, 1, 2], [0, 2], ValueError, r"shape \(p, 2\)"),
        ([0.0, 1.0], [[0, 1]], TypeError, "inverse must be a numpy array of integers"),
        # repeated, reversed and self pairs came back from pairs() as given
        ([0, 1, 2], [[0, 2], [0, 2]], ValueError, "a < b, sorted, each once"),
        ([0, 1, 2], [[2, 0]], ValueError, "a < b, sorted, each once"),
        ([0, 1, 2], [[1, 1]], ValueError, "a < b, sorted, each once"),
        ([0, 1, 2], [[1, 2], [0, 2]], ValueError, "a < b, sorted, each once"),
    ],
)
def test_groups_whose_pairs_are_not_its_codes_in_order_are_refused(inverse, pairs, error, match):
    with pytest.raises(error, match=match):
        DuplicateGroups(np.asarray(inverse), np.asarray(pairs), 1)


@pytest.mark.parametrize(
    ("inverse", "offsets", "neighbours", "match"),
    [
        ([0, 1], [0, 1, 2], [-1, 0], r"neighbours must lie in \[0, 2\), got -1"),
        ([0, 1], [0, 1, 2], [1, 2], r"neighbours must lie in \[0, 2\)"),
        ([0, 2], [0, 1, 2], [1, 0], r"inverse must lie in \[0, 2\)"),
        ([0, 1], [0, 2, 1, 2], [1, 0], "without decreasing"),
        ([0, 1], [0, 1, 5], [1, 0], r"offsets must lie in \[0, 3\)"),
        ([0, 1], [1, 1, 2], [1, 0], "start at 0"),
    ],
)
def test_graphs_whose_adjacency_leaves_the_codes_are_refused(inverse, offsets, neighbours, match):
    with pytest.raises(ValueError, match=match):
        CodeGraph(np.asarray(inverse), np.asarray(offsets), np.asarray(neighbours, np.int32), 1)


def test_the_joins_results_pass_their_own_checks():
    groups = near_duplicate_groups(CODES, max_distance=1)
    graph = near_duplicate_graph(CODES, max_distance=1)
    rebuilt = DuplicateGroups(groups.inverse, groups.unique_pairs, groups.max_distance)
    assert rebuilt.pairs().tolist() == [[0, 1], [0, 2], [1, 2], [3, 4]]
    assert CodeGraph.from_groups(rebuilt).document_pairs() == graph.document_pairs() == 4

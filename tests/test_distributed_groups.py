"""Clustering each group of components alone gives the clustering of the whole graph."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusimhash import _cpu
from gpusimhash.dedup.verification import Threshold, cluster_documents
from gpusimhash.distributed import _groups as groups
from gpusimhash.search.exact import near_duplicate_graph
from gpusimhash.search.verify import DocumentFeatures, featurize

WORDS = ["red", "fox", "blue", "sky", "green", "sea", "old", "oak", "cold", "rain"]


def _corpus(seed, n):
    """Documents drawn from a few templates with small edits: many small components."""
    rng = np.random.default_rng(seed)
    templates = [rng.choice(WORDS, 6).tolist() for _ in range(max(1, n // 5))]
    docs = []
    for _ in range(n):
        words = list(templates[rng.integers(len(templates))])
        if rng.random() < 0.5:
            words[rng.integers(len(words))] = str(rng.choice(WORDS))
        docs.append(" ".join(words))
    return docs


def _split_and_cluster(graph, features, lengths, limit, method, policy, n_groups):
    """Cluster as the distributed run does: components dealt to groups, each group alone."""
    n = graph.inverse.size
    code_row = np.full(graph.n_unique, n)
    np.minimum.at(code_row, graph.inverse, np.arange(n))
    degree = np.diff(graph.offsets)
    left = np.repeat(np.arange(graph.n_unique), degree)
    pairs = code_row[np.stack([left, graph.neighbours], axis=1)]
    pairs = pairs[pairs[:, 0] < pairs[:, 1]]
    shared = code_row[np.flatnonzero(graph.code_sizes() > 1)]
    nodes, labels = groups.components(pairs, shared)
    group = groups.deal(labels, n_groups)
    documents = np.stack([np.arange(n), code_row[graph.inverse]], axis=1)
    in_node = np.isin(documents[:, 1], nodes)
    of = np.full(n, -1)
    of[in_node] = group[np.searchsorted(nodes, documents[in_node, 1])]
    pair_group = group[np.searchsorted(nodes, pairs[:, 0])]
    kept_for, similarity = np.arange(n), np.ones(n)
    for g in range(n_groups):
        mine = np.flatnonzero(of == g)
        if not mine.size:
            continue
        taken = (features.take(mine), lengths[mine], None)
        removed, kept, values, _ = groups.cluster_group(
            documents[mine], pairs[pair_group == g], limit, method, policy, False, taken
        )
        kept_for[removed], similarity[removed] = kept, values
    return kept_for, similarity


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 120),
    radius=st.integers(0, 12),
    n_groups=st.integers(1, 5),
    method=st.sampled_from(["star", "components"]),
    policy=st.sampled_from(["first", "longest"]),
)
def test_groups_cluster_as_the_whole(seed, n, radius, n_groups, method, policy):
    docs = _corpus(seed, n)
    batch = featurize(docs)
    codes = _cpu.fingerprint_batch(batch, bits=64, seed=0)
    graph = near_duplicate_graph(codes, max_distance=radius)
    features = DocumentFeatures.from_batch(batch)
    lengths = np.array([len(d) for d in docs], dtype=np.int64)
    limit = Threshold("cosine", 0.8, radius, True)
    whole = cluster_documents(
        graph, features.take, limit, method=method, policy=policy, lengths=lengths
    )
    kept_for, similarity = _split_and_cluster(
        graph, features, lengths, limit, method, policy, n_groups
    )
    np.testing.assert_array_equal(kept_for, whole.kept_for)
    np.testing.assert_array_equal(similarity, whole.similarity)


def test_components_and_deal():
    pairs = np.array([[10, 20], [30, 40], [20, 50]])
    nodes, labels = groups.components(pairs, np.array([60, 10]))
    assert nodes.tolist() == [10, 20, 30, 40, 50, 60]
    assert labels.tolist() == [0, 0, 1, 1, 0, 2]
    # the heaviest component first, each to the lightest group
    assert groups.deal(labels, 2).tolist() == [0, 0, 1, 1, 0, 1]
    assert groups.deal(labels, 5).tolist() == [0, 0, 1, 1, 0, 2]
    # a component's pairs count as work
    assert groups.deal(labels, 2, pair_labels=np.array([1, 1, 1])).tolist() == [1, 1, 0, 0, 1, 1]


def test_deal_fills_groups_around_a_heavy_component():
    # one component of 50 nodes and 100 of one node: 75 each (round robin would give 100, 50)
    labels = np.concatenate([np.zeros(50, np.int64), np.arange(1, 101)])
    group = groups.deal(labels, 2)
    assert np.bincount(group).tolist() == [75, 75]
    assert set(group[:50].tolist()) == {0}
    # a component over its share: the rest shared evenly by the others
    labels = np.concatenate([np.zeros(100, np.int64), np.arange(1, 61)])
    assert np.bincount(groups.deal(labels, 3)).tolist() == [100, 30, 30]


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 40), min_size=1, max_size=300),
    n_groups=st.integers(1, 9),
    seed=st.integers(0, 2**16),
)
def test_deal_keeps_components_whole_and_groups_balanced(sizes, n_groups, seed):
    labels = np.random.default_rng(seed).permutation(np.repeat(np.arange(len(sizes)), sizes))
    pair_labels = np.random.default_rng(seed + 1).integers(0, len(sizes), 2 * len(sizes))
    group = groups.deal(labels, n_groups, pair_labels)
    assert group.min() >= 0
    assert group.max() < n_groups
    for component in range(len(sizes)):
        assert np.unique(group[labels == component]).size == 1
    work = np.bincount(labels) + np.bincount(pair_labels, minlength=len(sizes))
    of = np.zeros(len(sizes), np.int64)
    of[labels] = group
    load = np.bincount(of, weights=work, minlength=n_groups)
    assert load.max() <= -(-work.sum() // n_groups) + work.max()


@pytest.mark.parametrize("n_groups", [1, 3])
def test_group_documents_names_every_document_of_a_component_code(n_groups):
    # codes 0 and 7 of several documents (members), 5 and 11 of one; code 2 in no component
    members = np.array([[0, 0], [3, 0], [7, 7], [9, 7]])
    nodes, group = np.array([0, 5, 7, 11]), np.array([0, 1 % n_groups, 2 % n_groups, 0])
    pieces = groups.group_documents(nodes, group, members, n_groups)
    assert len(pieces) == n_groups
    found = sorted(tuple(d) for piece in pieces for d in piece.tolist())
    assert found == [(0, 0), (3, 0), (5, 5), (7, 7), (9, 7), (11, 11)]
    for piece in pieces:
        assert np.all(np.diff(piece[:, 0]) > 0)  # ascending rows
    for g, piece in enumerate(pieces):
        assert all(group[np.searchsorted(nodes, c)] == g for _, c in piece.tolist())

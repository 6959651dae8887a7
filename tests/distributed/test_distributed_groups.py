"""Label propagation finds the components; clustering each group of them alone gives the whole."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusimhash._cpu._fingerprint import fingerprint_batch as cpu_fingerprint_batch
from gpusimhash.cluster._documents import cluster_documents
from gpusimhash.cluster._pairs import cluster_labels
from gpusimhash.distributed import _components as components
from gpusimhash.distributed import _groups as groups
from gpusimhash.fingerprinting import featurize
from gpusimhash.join._exact import near_duplicate_graph
from gpusimhash.verify._features import DocumentFeatures
from gpusimhash.verify._threshold import Threshold

pytestmark = pytest.mark.slow  # Dask workers start in every test

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


def _shuffle(outputs, n_shards):
    """What each shard receives: piece ``j`` of every task's output, as the Dask run routes."""
    return [[out[j] for out in outputs] for j in range(n_shards)]


def _label(pairs, n_shards, chunks=3):
    """Label propagation as the Dask run drives it: each node shard's (codes, components)."""
    return _label_rounds(pairs, n_shards, chunks)[0]


def _label_rounds(pairs, n_shards, chunks):
    """`_label`, and the rounds it took."""
    edges = [components.local_edges(p, n_shards) for p in np.array_split(pairs, chunks)]
    shards = _shuffle(edges, n_shards)
    for rounds in range(1, 257):
        changed = False
        for large in (True, False):
            steps = [components.star_step(shards[j], n_shards, large) for j in range(n_shards)]
            changed |= any(c for c, _ in steps)
            shards = _shuffle([out for _, out in steps], n_shards)
        if not changed:
            return [components.shard_labels(pieces) for pieces in shards], rounds
    raise AssertionError("no convergence")


def _pairs_and_members(graph):
    """The graph as the join leaves it: pairs of code names, and the documents sharing a code."""
    n = graph.inverse.size
    code_row = np.full(graph.n_unique, n)
    np.minimum.at(code_row, graph.inverse, np.arange(n))
    left = np.repeat(np.arange(graph.n_unique), np.diff(graph.offsets))
    pairs = code_row[np.stack([left, graph.neighbours], axis=1)]
    shared = np.flatnonzero(graph.code_sizes()[graph.inverse] > 1)
    return pairs[pairs[:, 0] < pairs[:, 1]], np.stack(
        [shared, code_row[graph.inverse[shared]]], axis=1
    )


def _split_and_cluster(graph, features, lengths, limit, method, policy, n_shards, n_groups):
    """Cluster as the distributed run does: components dealt to groups, each group alone."""
    n = graph.inverse.size
    pairs, members = _pairs_and_members(graph)
    labels = _label(pairs, n_shards)
    member_pieces = _shuffle([components.by_node(members, 1, n_shards)], n_shards)
    pair_pieces = _shuffle([components.by_node(pairs, 0, n_shards)], n_shards)
    documents = [groups.shard_documents(labels[j], member_pieces[j]) for j in range(n_shards)]
    labelled = [groups.shard_pairs(labels[j], pair_pieces[j]) for j in range(n_shards)]
    work = _shuffle(
        [groups.work_pieces(d, p, n_shards) for d, p in zip(documents, labelled, strict=True)],
        n_shards,
    )
    work = [groups.component_work(pieces) for pieces in work]
    total = sum(int(w[:, 1].sum()) for w in work)
    found = [groups.heavy_components(w, total / (4 * n_groups), n_groups) for w in work]
    dealt = groups.deal_heavy(
        np.concatenate([np.zeros((0, 2), np.int64), *(f[0] for f in found)]),
        np.sum([f[1] for f in found], axis=0),
    )
    offsets = np.array([0, n])
    routed = [
        groups.route_groups(d, p, dealt, n_groups, offsets)
        for d, p in zip(documents, labelled, strict=True)
    ]
    kept_for, similarity = np.arange(n), np.ones(n)
    for g in range(n_groups):
        inputs = groups.group_inputs([r[0][g] for r in routed], [r[1][g] for r in routed])
        mine = groups.rows_between(inputs, 0, n)
        assert mine.size == sum(int(r[2][g, 0]) for r in routed)
        if not mine.size:
            continue
        taken = (features.take(mine), lengths[mine], None)
        removed, kept, values, _ = groups.cluster_group(
            *inputs, limit, method, policy, False, taken
        )
        kept_for[removed], similarity[removed] = kept, values
    return kept_for, similarity


def _whole(seed, n, radius, method, policy):
    """A corpus's graph, features, lengths and threshold, and the single machine's clustering."""
    docs = _corpus(seed, n)
    batch = featurize(docs)
    codes = cpu_fingerprint_batch(batch, bits=64, seed=0)
    graph = near_duplicate_graph(codes, max_distance=radius)
    features = DocumentFeatures.from_batch(batch)
    lengths = np.array([len(d) for d in docs], dtype=np.int64)
    limit = Threshold("cosine", 0.8, radius, True)
    whole = cluster_documents(
        graph, features.take, limit, method=method, policy=policy, lengths=lengths
    )
    return graph, features, lengths, limit, whole


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 120),
    radius=st.integers(0, 12),
    n_shards=st.integers(1, 4),
    n_groups=st.integers(1, 5),
    method=st.sampled_from(["star", "components"]),
    policy=st.sampled_from(["first", "longest"]),
)
def test_groups_cluster_as_the_whole(seed, n, radius, n_shards, n_groups, method, policy):
    graph, features, lengths, limit, whole = _whole(seed, n, radius, method, policy)
    kept_for, similarity = _split_and_cluster(
        graph, features, lengths, limit, method, policy, n_shards, n_groups
    )
    np.testing.assert_array_equal(kept_for, whole.kept_for)
    np.testing.assert_array_equal(similarity, whole.similarity)


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 120),
    radius=st.integers(0, 12),
    chunks=st.integers(1, 3),
    method=st.sampled_from(["star", "components"]),
    policy=st.sampled_from(["first", "longest"]),
)
def test_one_whole_group_clusters_as_the_whole(seed, n, radius, chunks, method, policy):
    graph, features, lengths, limit, whole = _whole(seed, n, radius, method, policy)
    pairs, members = _pairs_and_members(graph)
    documents, group_pairs, n_components = groups.whole_group(
        np.array_split(pairs, chunks), np.array_split(members, chunks), np.zeros((0, 2), np.int64)
    )
    in_graph = (graph.code_sizes()[graph.inverse] > 1) | np.isin(np.arange(n), pairs)
    assert documents[:, 0].tolist() == np.flatnonzero(in_graph).tolist()
    codes = np.unique(graph.inverse[in_graph])
    labels = cluster_labels(np.searchsorted(codes, graph.inverse[pairs]), codes.size)
    assert n_components == np.unique(labels).size
    kept_for, similarity = np.arange(n), np.ones(n)
    if documents.size:
        rows = documents[:, 0]
        removed, kept, values, _ = groups.cluster_group(
            documents,
            group_pairs,
            limit,
            method,
            policy,
            False,
            (features.take(rows), lengths[rows], None),
        )
        kept_for[removed], similarity[removed] = kept, values
    np.testing.assert_array_equal(kept_for, whole.kept_for)
    np.testing.assert_array_equal(similarity, whole.similarity)


def test_the_featureless_documents_are_a_component_of_the_whole_group():
    featureless = np.array([[4, 4], [9, 4]])  # their code is named by the first of them
    documents, pairs, components = groups.whole_group(
        [np.array([[0, 2]])], [np.array([[0, 0], [5, 0]])], featureless
    )
    assert documents.tolist() == [[0, 0], [2, 2], [4, 4], [5, 0], [9, 4]]
    assert pairs.tolist() == [[0, 2]]
    assert components == 2


@settings(max_examples=80, deadline=None)
@given(
    n_nodes=st.integers(1, 60),
    n_edges=st.integers(0, 90),
    n_shards=st.integers(1, 5),
    chunks=st.integers(1, 4),
    seed=st.integers(0, 2**16),
)
def test_labels_are_each_components_smallest_node(n_nodes, n_edges, n_shards, chunks, seed):
    rng = np.random.default_rng(seed)
    names = np.sort(rng.choice(10**9, n_nodes, replace=False))
    ends = rng.integers(0, n_nodes, (n_edges, 2))
    ends = ends[ends[:, 0] != ends[:, 1]]
    pairs = names[np.sort(ends, axis=1)]
    found = _label(pairs, n_shards, chunks)
    nodes = np.concatenate([f[0] for f in found])
    labels = np.concatenate([f[1] for f in found])
    whole = cluster_labels(ends, n_nodes)
    smallest = np.full(whole.max() + 1 if n_nodes else 0, 10**10)
    np.minimum.at(smallest, whole, names)
    in_pair = np.isin(names, pairs)
    assert sorted(nodes.tolist()) == names[in_pair].tolist()  # each node in one shard
    for j, (shard_nodes, _) in enumerate(found):
        assert np.all(components.shard_of(shard_nodes, n_shards) == j)
    expected = dict(zip(names[in_pair].tolist(), smallest[whole[in_pair]].tolist(), strict=True))
    assert dict(zip(nodes.tolist(), labels.tolist(), strict=True)) == expected


def test_a_long_path_settles_in_few_rounds():
    # a path 0 - 1 - ... - 4095 in shuffled names: min-label propagation alone needs 4,095 rounds
    names = np.random.default_rng(3).permutation(4096)
    pairs = np.sort(np.stack([names[:-1], names[1:]], axis=1), axis=1)
    labels, rounds = _label_rounds(pairs, 3, 64)
    assert rounds <= 20
    assert {label for _, shard in labels for label in shard.tolist()} == {0}


def test_documents_of_a_shard_name_every_member_and_lone_code():
    # codes 0 and 7 of several documents (members), 5 and 11 of one; 7 in no pair
    labels = (np.array([0, 5, 11]), np.array([0, 0, 11]))
    members = [np.array([[0, 0], [3, 0]]), np.array([[7, 7], [9, 7]])]
    documents = groups.shard_documents(labels, members)
    assert sorted(map(tuple, documents.tolist())) == [
        (0, 0, 0),
        (3, 0, 0),
        (5, 5, 0),
        (7, 7, 7),
        (9, 7, 7),
        (11, 11, 11),
    ]


def test_heavy_components_go_to_the_lightest_groups():
    work = np.array([[1, 50], [2, 1], [3, 1], [4, 40], [5, 1]])
    heavy, light = groups.heavy_components(work, 10, 2)
    assert heavy.tolist() == [[1, 50], [4, 40]]
    assert light.sum() == 3
    dealt = groups.deal_heavy(heavy, light)
    assert dealt[0].tolist() == [1, 4]
    assert sorted(dealt[1].tolist()) == [0, 1]  # one heavy component in each group
    group = groups.group_of(work[:, 0], dealt, 2)
    assert group[[0, 3]].tolist() == dealt[1].tolist()
    # a component's group depends on its label only, not on where it is listed
    shuffled = np.array([4, 2, 5, 1, 3])
    assert groups.group_of(shuffled, dealt, 2).tolist() == group[shuffled - 1].tolist()


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 40), min_size=1, max_size=300),
    n_groups=st.integers(1, 9),
)
def test_dealt_groups_are_balanced_around_heavy_components(sizes, n_groups):
    work = np.stack([np.arange(len(sizes)) * 7 + 1, sizes], axis=1).astype(np.int64)
    threshold = work[:, 1].sum() / (groups.HEAVY_PER_GROUP * n_groups)
    heavy, light = groups.heavy_components(work, threshold, n_groups)
    dealt = groups.deal_heavy(heavy, light)
    group = groups.group_of(work[:, 0], dealt, n_groups)
    assert group.min() >= 0
    assert group.max() < n_groups
    load = np.bincount(group, weights=work[:, 1], minlength=n_groups)
    assert load.sum() == work[:, 1].sum()
    # heavy ones go to the lightest group: one takes another only while at most the average
    assert load.max() <= max(light.max(), load.sum() / n_groups + heavy[:, 1].max(initial=0))


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n_nodes=st.integers(1, 200),
    n_edges=st.integers(0, 300),
    n_shards=st.integers(1, 5),
    chunks=st.integers(1, 4),
)
def test_one_task_gives_the_rounds_labels(seed, n_nodes, n_edges, n_shards, chunks):
    rng = np.random.default_rng(seed)
    names = np.sort(rng.choice(10**9, n_nodes, replace=False))
    pairs = names[rng.integers(0, n_nodes, (n_edges, 2))]
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    edges = [components.local_edges(p, n_shards) for p in np.array_split(pairs, chunks)]
    stars = components.whole_stars(edges, n_shards)
    at_once = [components.shard_labels([stars[j]]) for j in range(n_shards)]
    by_rounds = _label(pairs, n_shards, chunks)
    for (nodes, labels), (round_nodes, round_labels) in zip(at_once, by_rounds, strict=True):
        np.testing.assert_array_equal(nodes, round_nodes)
        np.testing.assert_array_equal(labels, round_labels)

import contextlib
import io

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tqdm import tqdm

from gpusimhash import _progress, fingerprint
from gpusimhash.cluster import _graph as graph_clusters
from gpusimhash.cluster._graph import graph_components, graph_stars, unit_graph
from gpusimhash.cluster._pairs import cluster_labels, group_labels, star_clusters
from gpusimhash.fingerprinting import featurize
from gpusimhash.join._exact import near_duplicate_graph, near_duplicate_groups
from gpusimhash.join._graph import CodeGraph
from gpusimhash.join._groups import first_seen_labels
from gpusimhash.verify._features import DocumentFeatures
from gpusimhash.verify._pairs import verify_pairs
from gpusimhash.verify._units import verify_candidates

WORDS = ["a", "b", "c", "d", "e", "f"]
# random short documents: with 8- or 16-bit codes many share a code with different features
random_docs = st.lists(
    st.lists(st.sampled_from([*WORDS, "A", "b!"]), max_size=6).map(" ".join), max_size=40
)


@st.composite
def clustered_docs(draw):
    """Dense clusters: a few originals, each with many copies and one- or two-word edits."""
    docs = []
    for _ in range(draw(st.integers(1, 3))):
        base = draw(st.lists(st.sampled_from(WORDS), min_size=3, max_size=8))
        for _ in range(draw(st.integers(1, 25))):
            words = list(base)
            for _ in range(draw(st.integers(0, 2))):
                words[draw(st.integers(0, len(words) - 1))] = draw(st.sampled_from(WORDS))
            docs.append(" ".join(words))
    order = draw(st.permutations(range(len(docs))))
    return [docs[k] for k in order]


corpora = st.one_of(random_docs, clustered_docs())


def setup(docs, bits, radius, verify=True, empty=False):
    codes = fingerprint(docs, bits=bits, device="cpu") if docs else np.zeros((0, bits // 8), "u1")
    groups = near_duplicate_groups(codes, max_distance=radius)
    graph = near_duplicate_graph(codes, max_distance=radius)
    features = DocumentFeatures.from_batch(featurize(docs))
    rows = graph.candidate_documents()
    local = features.take(rows)
    units = unit_graph(graph, local, rows, verify=verify, empty_as_duplicates=empty)
    return groups, graph, local, rows, units


@contextlib.contextmanager
def tentative_centres(batch, candidates=10**9):
    """Run the star loop with batches of ``batch`` tentative centres, ``candidates`` at most."""
    saved = graph_clusters._TENTATIVE_CENTRES, graph_clusters._TENTATIVE_CANDIDATES
    graph_clusters._TENTATIVE_CENTRES, graph_clusters._TENTATIVE_CANDIDATES = batch, candidates
    try:
        yield
    finally:
        graph_clusters._TENTATIVE_CENTRES, graph_clusters._TENTATIVE_CANDIDATES = saved


def assert_same_stars(got, want):
    np.testing.assert_array_equal(got.labels, want.labels)
    np.testing.assert_array_equal(got.kept_for, want.kept_for)
    np.testing.assert_array_equal(got.similarity, want.similarity)


@settings(max_examples=60)
@given(
    corpora,
    st.sampled_from([8, 16]),
    st.integers(0, 16),
    st.sampled_from(["cosine", "jaccard"]),
    st.sampled_from([0.5, 0.8, 1.0]),
    st.sampled_from(["first", "longest"]),
    st.booleans(),
    st.sampled_from([1, 2, 5, 128]),
    st.sampled_from([1, 7, 10**9]),
)
def test_lazy_stars_equal_stars_of_every_verified_pair(
    docs, bits, radius, measure, value, policy, empty, batch, candidates
):
    groups, graph, local, rows, units = setup(docs, bits, radius, empty=empty)
    lengths = [len(d) % 4 for d in docs]  # many ties: the policy's tie-break matters
    threshold = {"min_cosine": value} if measure == "cosine" else {"min_jaccard": value}
    found = verify_candidates(groups, local, rows, empty_as_duplicates=empty, **threshold)
    want = star_clusters(
        found.pairs,
        found.similarity,
        len(docs),
        units=found.unit,
        policy=policy,
        lengths=lengths,
    )
    with tentative_centres(batch, candidates):
        got, verified = graph_stars(
            graph, units, local, measure=measure, value=value, policy=policy, lengths=lengths
        )
    assert_same_stars(got, want)
    np.testing.assert_array_equal(units.unit, found.unit)
    assert verified <= found.n_candidates


@settings(max_examples=40)
@given(
    corpora,
    st.sampled_from([8, 16]),
    st.integers(0, 16),
    st.sampled_from([0.5, 0.8]),
    st.sampled_from([1, 3, 128]),
)
def test_lazy_stars_equal_stars_of_expanded_document_pairs(docs, bits, radius, value, batch):
    groups, graph, local, _rows, units = setup(docs, bits, radius)
    pairs, similarity = verify_pairs(docs, groups.pairs(), min_cosine=value)
    want = star_clusters(pairs, similarity, len(docs))
    with tentative_centres(batch):
        got, _ = graph_stars(graph, units, local, measure="cosine", value=value)
    np.testing.assert_array_equal(got.kept_for, want.kept_for)
    np.testing.assert_array_equal(got.labels, want.labels)
    # documents of one unit are 1.0 by definition; the expanded pair may round one ulp below
    np.testing.assert_allclose(got.similarity, want.similarity, rtol=0, atol=1e-12)


@settings(max_examples=40)
@given(corpora, st.sampled_from([8, 16]), st.integers(0, 16), st.sampled_from([0.5, 0.8]))
def test_lazy_components_equal_components_of_every_verified_pair(docs, bits, radius, value):
    groups, graph, local, rows, units = setup(docs, bits, radius)
    found = verify_candidates(groups, local, rows, min_cosine=value)
    want = cluster_labels(found.pairs, found.representative.size)[found.unit]
    got, verified = graph_components(graph, units, local, measure="cosine", value=value)
    np.testing.assert_array_equal(got, first_seen_labels(want))
    np.testing.assert_array_equal(got, want)
    assert verified <= found.n_candidates


@settings(max_examples=40)
@given(corpora, st.sampled_from([8, 16]), st.integers(0, 16), st.sampled_from(["first", "longest"]))
def test_unverified_clusters_equal_those_of_the_code_pairs(docs, bits, radius, policy):
    groups, graph, local, _rows, units = setup(docs, bits, radius, verify=False)
    lengths = [len(d) for d in docs]
    want = star_clusters(
        groups.unique_pairs,
        np.full(len(groups.unique_pairs), np.nan),
        len(docs),
        units=groups.inverse,
        policy=policy,
        lengths=lengths,
    )
    got, verified = graph_stars(graph, units, local, measure=None, policy=policy, lengths=lengths)
    assert_same_stars(got, want)
    assert verified == 0
    labels, _ = graph_components(graph, units, local, measure=None)
    np.testing.assert_array_equal(labels, group_labels(groups))


def test_a_dense_cluster_costs_comparisons_per_document_not_per_pair():
    docs = [f"w{k % 7} a b c d e f g h" for k in range(300)]  # 7 units, all within cosine 0.89
    docs += [f"a b c d e f g h x{k}" for k in range(300)]  # 300 units, one code each
    groups, graph, local, rows, units = setup(docs, 64, 64)
    found = verify_candidates(groups, local, rows, min_cosine=0.8)
    stars, verified = graph_stars(graph, units, local, measure="cosine", value=0.8)
    assert found.n_candidates == 307 * 306 // 2
    assert verified == 306  # the first document is kept and takes every other unit
    assert stars.keep.sum() == 1
    _, verified_components = graph_components(graph, units, local, measure="cosine", value=0.8)
    assert verified_components == 306


def test_units_of_one_code_with_different_features_are_verified_against_each_other():
    docs = ["a b", "b a", "a c", "x y"]
    graph = CodeGraph(
        np.zeros(4, np.int64), np.array([0, 0], np.int64), np.zeros(0, np.int32), 0
    )  # one code for all four: identical codes, three different feature sets
    features = DocumentFeatures.from_batch(featurize(docs))
    units = unit_graph(graph, features, np.arange(4), verify=True)
    assert units.unit.tolist() == [0, 0, 1, 2]
    stars, verified = graph_stars(graph, units, features, measure="cosine", value=0.5)
    assert stars.kept_for.tolist() == [0, 0, 0, 3]
    assert stars.similarity.tolist() == [1.0, 1.0, 0.5, 1.0]
    assert verified == 2


def test_unknown_measure():
    _, graph, local, _rows, units = setup(["a", "b"], 8, 8)
    with pytest.raises(ValueError, match="measure must be one of cosine, jaccard or None"):
        graph_stars(graph, units, local, measure="dice")


@pytest.mark.parametrize("steps", [1, 3, 64])
def test_the_loops_cut_into_parts_give_the_same_clusters_and_report_each_part(monkeypatch, steps):
    docs = [f"w{k % 7} a b c d e f g h" for k in range(150)]
    docs += [f"a b c d e f g h x{k}" for k in range(150)] + ["p q r", "p q s", "z"]
    _groups, graph, local, _rows, units = setup(docs, 64, 64)
    want_stars, want_verified = graph_stars(graph, units, local, measure="cosine", value=0.8)
    want_labels, _ = graph_components(graph, units, local, measure="cosine", value=0.8)
    monkeypatch.setattr(graph_clusters, "_PROGRESS_STEPS", steps)
    bar = tqdm(file=io.StringIO())
    with _progress.reporting(bar):
        stars, verified = graph_stars(graph, units, local, measure="cosine", value=0.8)
        star_parts = bar.total
        assert bar.n == star_parts
        assert min(steps, 2) <= star_parts <= steps
        labels, _ = graph_components(graph, units, local, measure="cosine", value=0.8)
        assert bar.n == bar.total
        assert min(steps, 2) <= bar.total - star_parts <= steps
    assert_same_stars(stars, want_stars)
    assert verified == want_verified
    np.testing.assert_array_equal(labels, want_labels)

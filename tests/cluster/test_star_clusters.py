import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusimhash.cluster._pairs import cluster_labels, keep_one, policy_order, star_clusters


@st.composite
def graphs(draw):
    n = draw(st.integers(0, 25))
    if n < 2:
        return n, np.zeros((0, 2), np.int64)
    edges = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=60))
    pairs = np.array([(min(a, b), max(a, b)) for a, b in edges if a != b], dtype=np.int64)
    return n, np.unique(pairs.reshape(-1, 2), axis=0)


def similarity_of(pairs):
    # a deterministic value per pair, so repeats and reversals carry the same one
    return 0.9 + ((pairs[:, 0] * 31 + pairs[:, 1] * 17) % 10) / 100


@settings(max_examples=100)
@given(graphs(), st.sampled_from(["first", "longest", "score"]), st.randoms())
def test_stars_never_chain(graph, policy, random):
    n, pairs = graph
    values = [float(random.randint(0, 3)) for _ in range(n)]
    options = {"lengths": values, "scores": values}
    stars = star_clusters(pairs, similarity_of(pairs), n, policy=policy, **options)
    edges = {tuple(p) for p in pairs.tolist()}
    kept = np.flatnonzero(stars.keep)
    # every document is kept or paired with the kept document of its cluster
    for doc, center in enumerate(stars.kept_for.tolist()):
        assert stars.kept_for[center] == center
        assert stars.labels[doc] == stars.labels[center]
        if doc != center:
            assert (min(doc, center), max(doc, center)) in edges
    # no two kept documents are paired, one kept document per cluster
    assert not any((a, b) in edges for a in kept for b in kept if a < b)
    assert len(set(stars.labels[kept].tolist())) == kept.size == len(set(stars.labels.tolist()))
    # the kept document is the one keep_one picks with the same policy
    np.testing.assert_array_equal(keep_one(stars.labels, policy=policy, **options), stars.keep)
    # stars refine connected components
    components = cluster_labels(pairs, n)
    for label in set(stars.labels.tolist()):
        assert len(set(components[stars.labels == label].tolist())) == 1
    # the order of pairs, their direction and repeats change nothing
    shuffled = np.concatenate([pairs, pairs[:, ::-1]])[
        np.argsort([random.random() for _ in range(2 * len(pairs))])
    ]
    again = star_clusters(
        shuffled, similarity_of(np.sort(shuffled, axis=1)), n, policy=policy, **options
    )
    np.testing.assert_array_equal(again.kept_for, stars.kept_for)
    np.testing.assert_array_equal(again.similarity, stars.similarity)


def test_similarity_to_kept_is_the_pairs_value():
    stars = star_clusters([[0, 3], [0, 2], [1, 2]], [0.91, 0.97, 0.99], 4)
    assert stars.kept_for.tolist() == [0, 1, 0, 0]
    assert stars.similarity.tolist() == [1.0, 1.0, 0.97, 0.91]
    assert stars.labels.tolist() == [0, 1, 0, 0]


def test_policy_decides_the_centres():
    # 1 is the longest and takes both neighbours; with "first", 0 keeps only itself and 1
    pairs, similarity = [[0, 1], [1, 2]], [0.95, 0.95]
    longest = star_clusters(pairs, similarity, 3, policy="longest", lengths=[1, 5, 1])
    assert longest.kept_for.tolist() == [1, 1, 1]
    assert star_clusters(pairs, similarity, 3).kept_for.tolist() == [0, 0, 2]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"policy": "best"}, "policy must be one of"),
        ({"policy": "score"}, "needs scores="),
        ({"policy": "longest", "lengths": [1, 2]}, r"lengths must have shape \(3,\)"),
        ({"policy": "score", "scores": [1, float("nan"), 2]}, r"NaN \(document 1\)"),
    ],
)
def test_policy_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        policy_order(3, **kwargs)


def test_star_errors():
    with pytest.raises(ValueError, match=r"similarity must have shape \(1,\)"):
        star_clusters([[0, 1]], [0.9, 0.8], 2)
    with pytest.raises(ValueError, match=r"in \[0, 2\)"):
        star_clusters([[0, 2]], [0.9], 2)


# ---- units: documents with identical features clustered as one ----


@settings(max_examples=60)
@given(graphs(), st.integers(1, 6), st.sampled_from(["first", "longest"]), st.randoms())
def test_units_give_the_clusters_of_the_expanded_pairs(graph, n_docs_per, policy, random):
    n_units, unit_pairs = graph
    if n_units == 0:
        return
    units = np.array([random.randrange(n_units) for _ in range(n_units * n_docs_per)])
    units[:n_units] = np.arange(n_units)  # every unit has a document
    n = units.size
    lengths = [float(random.randint(0, 3)) for _ in range(n)]
    similarity = similarity_of(unit_pairs)
    grouped = star_clusters(unit_pairs, similarity, n, units=units, policy=policy, lengths=lengths)
    # the same clustering over every document pair the units imply
    pairs, values = [], []
    for i in range(n):
        for j in range(i + 1, n):
            if units[i] == units[j]:
                pairs.append((i, j))
                values.append(1.0)
            else:
                a, b = sorted((units[i], units[j]))
                hit = np.flatnonzero((unit_pairs[:, 0] == a) & (unit_pairs[:, 1] == b))
                if hit.size:
                    pairs.append((i, j))
                    values.append(similarity[hit[0]])
    plain = star_clusters(
        np.array(pairs, np.int64).reshape(-1, 2), values, n, policy=policy, lengths=lengths
    )
    np.testing.assert_array_equal(grouped.kept_for, plain.kept_for)
    np.testing.assert_array_equal(grouped.similarity, plain.similarity)
    np.testing.assert_array_equal(grouped.labels, plain.labels)

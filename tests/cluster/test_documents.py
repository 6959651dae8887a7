import numpy as np
import pytest

from gpusimhash import fingerprint
from gpusimhash.cluster import _documents
from gpusimhash.cluster._documents import cluster_documents
from gpusimhash.fingerprinting import featurize
from gpusimhash.join._exact import near_duplicate_graph
from gpusimhash.join._graph import join_with_features
from gpusimhash.verify._features import DocumentFeatures
from gpusimhash.verify._threshold import plan_threshold


def test_featureless_documents_join_apart():
    docs = ["", "a b", "...", "a b", ""]
    features = DocumentFeatures.from_batch(featurize(docs))
    codes = fingerprint(docs, bits=64)
    join = lambda c: near_duplicate_graph(c, max_distance=3)
    graph = join_with_features(codes, features.sizes > 0, join)
    assert graph.candidate_documents().tolist() == [1, 3]
    together = join_with_features(codes, features.sizes > 0, join, empty_as_duplicates=True)
    assert together.candidate_documents().tolist() == [0, 1, 2, 3, 4]


CHAIN = ["a b c d e f g h", "a b c d e f g x", "a b c d e f y x", "a b c d e z y x", "q r s"]


def run(docs, method, verified=True, value=0.8, policy="first", lengths=None):
    batch = featurize(docs)
    features = DocumentFeatures.from_batch(batch)
    plan = plan_threshold(
        64, verify=verified, min_cosine=value, max_distance=64 if verified else None
    )
    codes = fingerprint(docs, bits=64)
    graph = join_with_features(
        codes, features.sizes > 0, lambda c: near_duplicate_graph(c, max_distance=plan.radius)
    )
    return cluster_documents(
        graph, features.take, plan, method=method, policy=policy, lengths=lengths
    )


def test_stars_do_not_chain_and_components_do():
    # consecutive documents share 7 of 8 words (cosine 0.875); two apart, 0.75
    stars = run(CHAIN, "star")
    assert stars.kept_for.tolist() == [0, 0, 2, 2, 4]
    assert stars.below_threshold == 0
    assert stars.similarity.tolist() == [1.0, 0.875, 1.0, 0.875, 1.0]
    components = run(CHAIN, "components")
    assert components.kept_for.tolist() == [0, 0, 0, 0, 4]
    assert components.below_threshold == 2
    assert components.similarity[2:4].tolist() == [0.75, 0.625]


def test_policy_picks_the_centres():
    stars = run(CHAIN, "star", policy="longest", lengths=[1, 5, 1, 1, 1])
    assert stars.kept_for.tolist() == [1, 1, 1, 3, 4]
    assert stars.below_threshold == 0


def test_without_verification_removed_documents_are_measured():
    clusters = run(CHAIN + ["h g f e d c b a"], "components", verified=False, value=0.3)
    assert clusters.keep.sum() >= 1
    removed = ~clusters.keep
    assert np.all(clusters.similarity[removed] <= 1.0)


def test_unknown_method():
    with pytest.raises(ValueError, match="cluster method must be one of star, components"):
        run(CHAIN, "single-link")


def test_no_removed_document_is_below_the_threshold_on_the_synthetic_corpus(tmp_path):
    from gpusimhash.datasets.synth import CorpusSpec, generate
    from gpusimhash.dedup.pipeline import dedup_file

    spec = CorpusSpec(n_docs=3000, seed=3, min_length=5, max_length=30, near_rate=0.4)
    path = tmp_path / "synthetic.txt"
    path.write_text("".join(d.text + "\n" for d in generate(spec)))
    for options in ({}, {"min_jaccard": 0.5}, {"keep": "longest", "min_cosine": 0.6}):
        result = dedup_file(path, tmp_path / "out", bits=128, **options)
        assert result.summary["results"]["removed"] > 100
        assert result.summary["results"]["removed_below_threshold"] == 0
        assert result.summary["results"]["lowest_similarity_to_kept"] >= 0.5


def test_without_verification_the_measure_reads_a_few_documents_at_a_time(monkeypatch):
    docs = [*CHAIN, "h g f e d c b a", "a b c d e f g h", ""]
    whole = run(docs, "components", verified=False, value=0.3)
    monkeypatch.setattr(_documents, "_MEASURED", 1)
    one_by_one = run(docs, "components", verified=False, value=0.3)
    np.testing.assert_array_equal(one_by_one.similarity, whole.similarity)
    np.testing.assert_array_equal(one_by_one.kept_for, whole.kept_for)
    assert (~whole.keep).sum() >= 2

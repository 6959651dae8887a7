import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusimhash import fingerprint
from gpusimhash.dedup import verification
from gpusimhash.dedup.verification import (
    check_budget,
    cluster_documents,
    feature_spill,
    join_with_features,
    plan_threshold,
)
from gpusimhash.features import FeatureBatch
from gpusimhash.search.exact import near_duplicate_graph
from gpusimhash.search.verify import DocumentFeatures, candidate_radius, featurize


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({}, ("cosine", 0.8, candidate_radius(128, min_cosine=0.8), True)),
        ({"min_jaccard": 0.7}, ("jaccard", 0.7, candidate_radius(128, min_jaccard=0.7), True)),
        ({"max_distance": 20, "min_cosine": 0.95}, ("cosine", 0.95, 20, True)),
        ({"max_distance": 500}, ("cosine", 0.8, 128, True)),
        ({"verify": False}, ("cosine", 0.8, 26, False)),
        ({"verify": False, "min_jaccard": 0.6}, ("jaccard", 0.6, 29, False)),
        ({"verify": False, "max_distance": 64}, ("cosine", pytest.approx(0.0), 64, False)),
    ],
)
def test_plan_threshold(kwargs, expected):
    plan = plan_threshold(128, **kwargs)
    assert (plan.measure, plan.value, plan.radius, plan.verify) == expected


def test_plan_threshold_refuses_two_thresholds_without_verification():
    with pytest.raises(ValueError, match="give one of max_distance, min_cosine and min_jaccard"):
        plan_threshold(64, verify=False, max_distance=3, min_cosine=0.9)
    with pytest.raises(ValueError, match="at most one of min_cosine and min_jaccard"):
        plan_threshold(64, min_cosine=0.9, min_jaccard=0.9)


@pytest.mark.parametrize("window", [1, 5, 1 << 20])
@pytest.mark.parametrize("batch_size", [1, 3, 100])
def test_spill_reads_back_what_was_appended(batch_size, window, monkeypatch):
    monkeypatch.setattr(verification, "_WINDOW", window)  # windows of a few entries
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


def test_budget_refuses_in_one_line_unless_forced():
    codes = np.zeros((1000, 16), np.uint8)
    codes[:, 0] = np.arange(1000) % 251  # 251 distinct codes, all within 8 bits
    assert check_budget(codes, 8, budget=31_375) == 251 * 250 / 2
    with pytest.raises(
        ValueError, match=r"^about 31,375 candidate pairs at Hamming radius 8 of 128"
    ):
        check_budget(codes, 8, budget=31_374)
    assert check_budget(codes, 8, budget=10, force=True) == 31_375


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


@pytest.mark.parametrize("force", [False, True])
def test_dedup_refuses_a_threshold_over_budget_unless_forced(tmp_path, force):
    from gpusimhash.dedup.pipeline import dedup_file

    path = tmp_path / "in.txt"
    path.write_text("".join(f"{' '.join(CHAIN[k % 4].split()[:7])} w{k}\n" for k in range(12)))
    options = {"min_cosine": -1.0, "max_candidate_pairs": 60, "force": force}
    if not force:
        with pytest.raises(ValueError, match=r"^about 66 candidate pairs at Hamming radius 256"):
            dedup_file(path, tmp_path / "out", bits=256, **options)
        return
    result = dedup_file(path, tmp_path / "out", bits=256, **options)
    assert result.summary["settings"]["estimated_candidate_pairs"] == 66
    assert result.summary["results"]["removed_below_threshold"] == 0


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
    monkeypatch.setattr(verification, "_MEASURED", 1)
    one_by_one = run(docs, "components", verified=False, value=0.3)
    np.testing.assert_array_equal(one_by_one.similarity, whole.similarity)
    np.testing.assert_array_equal(one_by_one.kept_for, whole.kept_for)
    assert (~whole.keep).sum() >= 2


def test_an_allocation_that_cannot_fit_is_refused_before_it_is_made(monkeypatch):
    monkeypatch.setattr(verification, "available_memory", lambda: 1000)
    codes = np.zeros((300, 8), np.uint8)
    codes[:, 0] = np.arange(300) % 251
    with pytest.raises(MemoryError, match=r"^about 31,375 candidate pairs .* need about 0 MB"):
        check_budget(codes, 8, force=True)
    with feature_spill() as spill:
        spill.append(DocumentFeatures.from_batch(featurize(["a b c"] * 40)))
        with pytest.raises(MemoryError, match="the features of 40 documents need about 0 MB"):
            spill.gather(np.arange(40))


def test_the_cli_prints_a_refusal_as_it_is(tmp_path, monkeypatch, capsys):
    from gpusimhash.cli import main

    monkeypatch.setattr(verification, "available_memory", lambda: 10)
    path = tmp_path / "in.txt"
    path.write_text("a b c\na b c\na b d\n")
    code = main(["dedup", str(path), "--out", str(tmp_path / "out"), "-q"])
    err = capsys.readouterr().err
    assert code == 1
    assert "candidate pairs at Hamming radius" in err
    assert "MB of memory available" in err


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
        patch.setattr(verification, "_WINDOW", window)
        with feature_spill() as spill:
            spill.append(whole)
            narrow = spill.gather(rows, narrow=True)
    expected = whole.take(rows)
    assert narrow.weights.dtype == _narrowest(expected.weights)
    widened = narrow.widened()
    assert widened.weights.dtype == np.float64
    for name in ("states", "offsets", "weights", "exponents", "squared_norms"):
        np.testing.assert_array_equal(getattr(widened, name), getattr(expected, name))


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
    limit = verification.Threshold(measure, 0.5, 2, True)
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

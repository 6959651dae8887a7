import math
from collections import defaultdict
from itertools import combinations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binom

from gpusimhash import fingerprint
from gpusimhash.features import FeatureBatch
from gpusimhash.fingerprinting import featurize
from gpusimhash.hashing import feature_states
from gpusimhash.text import TextFeaturizer
from gpusimhash.verify._features import DocumentFeatures
from gpusimhash.verify._pairs import verified_near_duplicates, verify_pairs
from gpusimhash.verify._threshold import candidate_radius

WORDS = ["a", "b", "c", "dd", "é", "ab", "ünï", "x"]
texts = st.lists(st.sampled_from(WORDS + ["!", ".", "  "]), max_size=10).map(" ".join)
featurizers = st.builds(
    TextFeaturizer,
    analyzer=st.sampled_from(["word", "char"]),
    ngram=st.integers(1, 3),
    weighting=st.sampled_from(["count", "binary", "logtf"]),
)


# ---- plain-Python oracle: the featurizer's own feature dicts, compared by feature string ----


def oracle(a: dict, b: dict) -> tuple[float, float, float]:
    """Cosine, set Jaccard and weighted Jaccard of two {feature: weight} dicts (NaN if empty)."""
    if not a or not b:
        return math.nan, math.nan, math.nan
    dot = sum(w * b[f] for f, w in a.items() if f in b)
    squared_a = sum(w * w for w in a.values())
    squared_b = sum(w * w for w in b.values())
    union = set(a) | set(b)
    low = sum(min(a.get(f, 0.0), b.get(f, 0.0)) for f in union)
    high = sum(max(a.get(f, 0.0), b.get(f, 0.0)) for f in union)
    shared = len(set(a) & set(b))
    weighted = low / high if high else math.nan
    return dot / math.sqrt(squared_a * squared_b), shared / len(union), weighted


def scaled(document: dict) -> dict:
    if not document:
        return document
    exponent = math.frexp(max(abs(w) for w in document.values()))[1]
    return {f: math.ldexp(w, -exponent) for f, w in document.items()}


def all_pairs(n):
    return np.array(list(combinations(range(n), 2)), dtype=np.int64).reshape(-1, 2)


# ---- DocumentFeatures ----

entries = st.lists(
    st.tuples(st.integers(0, 6), st.sampled_from([0.0, 1.0, -1.0, 0.5, 3.0, 1e-3])), max_size=12
)


@settings(max_examples=50)
@given(st.lists(entries, max_size=6))
def test_merge_sums_each_state_in_entry_order(documents):
    states = np.array([s for d in documents for s, _ in d], dtype=np.uint32)
    weights = np.array([w for d in documents for _, w in d], dtype=np.float64)
    offsets = np.cumsum([0] + [len(d) for d in documents]).astype(np.int64)
    features = DocumentFeatures.from_batch(FeatureBatch(states, offsets, weights))
    for doc, items in enumerate(documents):
        sums = defaultdict(float)
        for state, weight in items:
            sums[state] += weight
        expected = sorted((s, w) for s, w in sums.items() if w != 0.0)
        lo, hi = features.offsets[doc], features.offsets[doc + 1]
        assert features.states[lo:hi].tolist() == [s for s, _ in expected]
        assert features.weights[lo:hi].tolist() == [w for _, w in expected]
        if expected:
            e = features.exponents[doc]
            assert 0.5 <= max(abs(w) for _, w in expected) / 2.0**e < 1
            assert features.squared_norms[doc] == pytest.approx(
                sum((w / 2.0**e) ** 2 for _, w in expected), rel=1e-15
            )


@settings(max_examples=30)
@given(st.lists(texts, min_size=2, max_size=6), featurizers)
def test_similarities_equal_the_oracle_on_the_featurizers_features(documents, featurizer):
    features = DocumentFeatures.from_batch(featurizer.transform(documents))
    pairs = all_pairs(len(documents))
    got = features.similarities(pairs)
    dicts = [featurizer.features(t) for t in documents]
    expected = np.array([oracle(dicts[i], dicts[j]) for i, j in pairs]).reshape(-1, 3)
    # Jaccard is a ratio of integers; integer weights make every sum exact.
    np.testing.assert_array_equal(got.jaccard, expected[:, 1])
    if featurizer.weighting in ("count", "binary"):
        np.testing.assert_array_equal(got.cosine, expected[:, 0])
        np.testing.assert_array_equal(got.weighted_jaccard, expected[:, 2])
    else:
        np.testing.assert_allclose(got.cosine, expected[:, 0], rtol=1e-12)
        np.testing.assert_allclose(got.weighted_jaccard, expected[:, 2], rtol=1e-12)


mappings = st.dictionaries(
    st.sampled_from(WORDS), st.sampled_from([1.0, 2.0, 0.5, -1.0, 7.0, 1e300]), max_size=6
)


@settings(max_examples=30)
@given(st.lists(mappings, min_size=2, max_size=5))
def test_similarities_of_weighted_mappings(documents):
    features = DocumentFeatures.from_batch(featurize(documents))
    pairs = all_pairs(len(documents))
    got = features.similarities(pairs)
    for k, (i, j) in enumerate(pairs):
        # cosine is scale-free: the oracle sees each document scaled to max |w| in [0.5, 1)
        a, b = scaled(documents[i]), scaled(documents[j])
        cosine, jaccard, _ = oracle(a, b)
        assert got.cosine[k] == pytest.approx(cosine, rel=1e-12, nan_ok=True)
        assert -1.0 <= got.cosine[k] <= 1.0 or math.isnan(cosine)
        assert got.jaccard[k] == pytest.approx(jaccard, nan_ok=True)


def test_identical_documents_have_cosine_exactly_one():
    features = DocumentFeatures.from_batch(featurize([{"a": 0.1, "b": 0.7}] * 2))
    assert features.similarities([[0, 1]]).cosine.tolist() == [1.0]


def test_results_do_not_depend_on_batches_pair_order_or_threads():
    rng = np.random.default_rng(0)
    words = [f"w{k}" for k in range(30)]
    docs = [" ".join(rng.choice(words, size=rng.integers(0, 20))) for _ in range(300)]
    featurizer = TextFeaturizer(weighting="logtf")
    whole = DocumentFeatures.from_batch(featurizer.transform(docs))
    parts = DocumentFeatures.concatenate(
        [
            DocumentFeatures.from_batch(featurizer.transform(docs[s : s + 77]))
            for s in range(0, 300, 77)
        ]
    )
    for name in ("states", "offsets", "weights", "exponents", "squared_norms"):
        np.testing.assert_array_equal(getattr(whole, name), getattr(parts, name))
    pairs = rng.integers(0, 300, size=(5000, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    default = whole.similarities(pairs)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("NUMBA_NUM_THREADS", "1")
        single = whole.similarities(pairs[::-1])
    rows = np.unique(pairs)
    taken = whole.take(rows).similarities(np.searchsorted(rows, pairs))
    for name in ("cosine", "jaccard", "weighted_jaccard"):
        np.testing.assert_array_equal(getattr(default, name), getattr(single, name)[::-1])
        np.testing.assert_array_equal(getattr(default, name), getattr(taken, name))


def test_featureless_documents_are_nan_unless_asked():
    features = DocumentFeatures.from_batch(featurize(["", "!!", "a"]))
    assert features.sizes.tolist() == [0, 0, 1]
    assert np.isnan(features.similarities([[0, 1], [0, 2]]).cosine).all()
    asked = features.similarities([[0, 1], [0, 2]], empty_as_duplicates=True)
    assert asked.cosine[0] == 1.0
    assert math.isnan(asked.cosine[1])


@settings(max_examples=200)
@given(st.sets(st.integers(0, 30), min_size=1), st.sets(st.integers(0, 30), min_size=1))
def test_set_cosine_is_at_least_the_jaccard_bound(a, b):
    jaccard = len(a & b) / len(a | b)
    cosine = len(a & b) / math.sqrt(len(a) * len(b))
    assert cosine >= 2 * jaccard / (1 + jaccard) - 1e-12


# ---- verify_pairs ----


@settings(max_examples=25)
@given(
    st.lists(texts, min_size=2, max_size=8),
    st.sampled_from([0.0, 0.5, 0.7, 0.9, 1.0]),
    st.sampled_from(["cosine", "jaccard"]),
)
def test_verify_pairs_keeps_exactly_the_pairs_at_or_above_the_threshold(documents, value, measure):
    featurizer = TextFeaturizer(analyzer="char", ngram=2)
    candidates = all_pairs(len(documents))[::-1]
    pairs, similarity = verify_pairs(
        documents, candidates, featurizer=featurizer, **{f"min_{measure}": value}
    )
    column = 0 if measure == "cosine" else 1
    dicts = [featurizer.features(t) for t in documents]
    expected = [
        (i, j, s[column])
        for i, j in all_pairs(len(documents))
        if (s := oracle(dicts[i], dicts[j]))[column] >= value
    ]
    assert pairs.dtype == np.int64
    assert pairs.shape == (len(expected), 2)
    assert similarity.dtype == np.float64
    assert pairs.tolist() == [[i, j] for i, j, _ in expected]
    np.testing.assert_array_equal(similarity, [s for _, _, s in expected])


def test_verify_pairs_threshold_is_inclusive_and_pairs_are_normalized():
    # cosine("a b", "a c") = 1 / sqrt(4) = 0.5 exactly
    pairs, similarity = verify_pairs(["a b", "a c", "z"], [[1, 0], [0, 1], [2, 0]], min_cosine=0.5)
    assert pairs.tolist() == [[0, 1]]
    assert similarity.tolist() == [0.5]


def test_verify_pairs_featurizes_only_the_documents_in_pairs():
    documents = ["a b", 17, "a b c"]  # document 1 would be refused
    pairs, _ = verify_pairs(documents, [[0, 2]], min_cosine=0.5)
    assert pairs.tolist() == [[0, 2]]
    with pytest.raises(TypeError, match="document 1"):
        verify_pairs(documents, [[1, 2]])


def test_verify_pairs_names_the_bad_document_among_mappings():
    with pytest.raises(ValueError, match=r"document 3, feature 'x'.*not finite"):
        verify_pairs([{"a": 1}, {}, {"a": 2}, {"x": math.nan}], [[0, 2], [2, 3]])


def test_verify_pairs_empty_documents():
    documents = ["", "a", "...", ""]
    candidates = all_pairs(4)
    assert verify_pairs(documents, candidates, min_cosine=-1.0)[0].tolist() == []
    pairs, similarity = verify_pairs(documents, candidates, empty_as_duplicates=True)
    assert pairs.tolist() == [[0, 2], [0, 3], [2, 3]]
    assert similarity.tolist() == [1.0, 1.0, 1.0]


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"pairs": [[0, 0]]}, ValueError, r"two different documents, got \[0, 0\] at row 0"),
        ({"pairs": [[0, 1], [0, 3]]}, ValueError, r"in \[0, 3\), got \[0, 3\] at row 1"),
        ({"pairs": [[0, 1, 2]]}, ValueError, r"shape \(m, 2\)"),
        ({"pairs": [[0.0, 1.0]]}, TypeError, "integers"),
        ({"min_cosine": 0.5, "min_jaccard": 0.5}, ValueError, "at most one"),
        ({"min_jaccard": 1.5}, ValueError, r"min_jaccard must be in \[0, 1\]"),
        ({"min_cosine": "high"}, TypeError, "min_cosine must be a real number"),
    ],
)
def test_verify_pairs_errors(kwargs, error, match):
    arguments = {"pairs": [[0, 1]]} | kwargs
    with pytest.raises(error, match=match):
        verify_pairs(["a", "b", "c"], **arguments)


def test_verify_pairs_wants_a_sequence():
    with pytest.raises(TypeError, match="documents must be a sequence"):
        verify_pairs(iter(["a", "b"]), [[0, 1]])


# ---- verified_near_duplicates ----


def corpus(n=400, seed=0):
    rng = np.random.default_rng(seed)
    words = [f"w{k}" for k in range(60)]
    base = [list(rng.choice(words, size=rng.integers(3, 15))) for _ in range(n // 4)]
    docs = []
    for k in range(n):
        tokens = list(base[k % len(base)])
        for _ in range(rng.integers(0, 3)):
            tokens[rng.integers(len(tokens))] = str(rng.choice(words))
        docs.append(" ".join(tokens))
    return docs + ["", "  ", "."]


def truth(documents, featurizer, column, value):
    dicts = [featurizer.features(t) for t in documents]
    return [
        [i, j] for i, j in all_pairs(len(documents)) if oracle(dicts[i], dicts[j])[column] >= value
    ]


@pytest.mark.parametrize(("measure", "column"), [("cosine", 0), ("jaccard", 1)])
def test_full_radius_finds_exactly_the_true_pairs(measure, column):
    documents = corpus()
    featurizer = TextFeaturizer()
    pairs, similarity = verified_near_duplicates(
        documents, bits=64, max_distance=64, device="cpu", **{f"min_{measure}": 0.8}
    )
    assert pairs.tolist() == truth(documents, featurizer, column, 0.8)
    assert (similarity >= 0.8).all()


def test_default_radius_is_exactly_precise_and_finds_nearly_all():
    documents = corpus()
    expected = truth(documents, TextFeaturizer(), 0, 0.8)
    pairs, similarity = verified_near_duplicates(documents, device="cpu")
    found = pairs.tolist()
    assert set(map(tuple, found)) <= set(map(tuple, expected))
    assert len(found) >= 0.95 * len(expected)
    assert (similarity >= 0.8).all()
    assert found == sorted(found)
    assert all(i < j for i, j in found)


def test_radius_comes_from_candidate_recall():
    documents = corpus()
    loose, _ = verified_near_duplicates(documents, bits=64, candidate_recall=0.999, device="cpu")
    tight, _ = verified_near_duplicates(documents, bits=64, max_distance=0, device="cpu")
    assert set(map(tuple, tight.tolist())) < set(map(tuple, loose.tolist()))


def test_empty_documents_pair_up_only_when_asked():
    documents = ["", "a b", "!", "a b", ""]
    assert verified_near_duplicates(documents, device="cpu")[0].tolist() == [[1, 3]]
    pairs, similarity = verified_near_duplicates(documents, empty_as_duplicates=True, device="cpu")
    assert pairs.tolist() == [[0, 2], [0, 4], [1, 3], [2, 4]]
    assert similarity.tolist() == [1.0] * 4


def test_no_documents():
    pairs, similarity = verified_near_duplicates([], device="cpu")
    assert pairs.shape == (0, 2)
    assert similarity.shape == (0,)


def test_fingerprints_are_those_of_fingerprint():
    # the candidates of a radius-0 search are the pairs of identical public fingerprints
    documents = corpus(80)
    codes = fingerprint(documents, bits=128, seed=7)
    pairs, _ = verified_near_duplicates(
        documents, bits=128, seed=7, max_distance=0, min_cosine=-1.0, device="cpu"
    )
    same = [
        [i, j]
        for i, j in all_pairs(len(documents))
        if (codes[i] == codes[j]).all() and TextFeaturizer().features(documents[i])
    ]
    assert pairs.tolist() == same


# ---- candidate_radius ----


@settings(max_examples=100)
@given(
    st.sampled_from([64, 128, 256, 512]),
    st.floats(0.0, 1.0),
    st.floats(0.01, 0.999999),
)
def test_candidate_radius_is_the_smallest_with_the_recall(bits, cosine, recall):
    radius = candidate_radius(bits, min_cosine=cosine, candidate_recall=recall)
    p = math.acos(cosine) / math.pi
    assert binom.cdf(radius, bits, p) >= recall
    assert radius == 0 or binom.cdf(radius - 1, bits, p) < recall


def test_candidate_radius_of_jaccard_uses_the_set_bound():
    assert candidate_radius(256, min_jaccard=0.8) == candidate_radius(256, min_cosine=1.6 / 1.8)
    assert candidate_radius(128, min_cosine=1.0) == 0
    assert candidate_radius(64, min_cosine=0.9, candidate_recall=1.0) == 64


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"candidate_recall": 0.0}, ValueError, r"candidate_recall must be in \(0, 1\]"),
        ({"candidate_recall": 1.5}, ValueError, "candidate_recall"),
        ({"min_cosine": 1.2}, ValueError, "min_cosine"),
        ({"min_cosine": True}, TypeError, "min_cosine"),
    ],
)
def test_candidate_radius_errors(kwargs, error, match):
    with pytest.raises(error, match=match):
        candidate_radius(64, **kwargs)


def test_feature_states_are_what_is_compared():
    # a feature is its FNV-1a state: the oracle's strings map one to one here
    features = DocumentFeatures.from_batch(featurize([{"a": 1.0, "b": 2.0}]))
    assert features.states.tolist() == sorted(feature_states(["a", "b"]).tolist())


def test_asking_for_a_gpu_that_is_not_there_raises_before_comparing(monkeypatch):
    from gpusimhash import _backend

    monkeypatch.setattr(_backend, "gpu_available", lambda: False)
    features = DocumentFeatures.from_batch(featurize(["a b", "a c"]))
    with pytest.raises(RuntimeError, match="GPU"):
        features.similarities([[0, 1]], device="gpu")
    with pytest.raises(RuntimeError, match="GPU"):
        verify_pairs(["a b", "a c"], [[0, 1]], device="gpu")


@pytest.mark.gpu
def test_gpu_verification_equals_the_cpu_bit_for_bit():
    rng = np.random.default_rng(0)
    docs = [" ".join(rng.choice(list("abcdefghij"), size=rng.integers(0, 30))) for _ in range(500)]
    docs += ["x " * 3000]  # a long document
    features = DocumentFeatures.from_batch(featurize(docs))
    pairs = rng.integers(0, len(docs), size=(20_000, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    on_cpu = features.similarities(pairs, device="cpu", empty_as_duplicates=True)
    on_gpu = features.similarities(pairs, device="gpu", empty_as_duplicates=True)
    for name in ("cosine", "jaccard", "weighted_jaccard"):
        np.testing.assert_array_equal(getattr(on_gpu, name), getattr(on_cpu, name))

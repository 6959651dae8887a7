import itertools
import tracemalloc
from collections import Counter

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpusimhash.datasets.synth import (
    CorpusSpec,
    _zipf_cdf,
    generate,
    vocabulary,
)
from gpusimhash.evaluation import duplicate_pairs, pair_scores

SPEC = CorpusSpec(n_docs=3_000, seed=11, exact_rate=0.1, near_rate=0.3)


@pytest.fixture(scope="module")
def docs():
    return list(generate(SPEC))


def token_edit_distance(a, b):
    """Levenshtein distance over token lists (the test's own oracle)."""
    previous = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        current = [i]
        for j, y in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (x != y)))
        previous = current
    return previous[-1]


def test_ids_run_in_order(docs):
    assert [d.id for d in docs] == list(range(SPEC.n_docs))


def test_same_spec_gives_identical_corpus(docs):
    assert list(generate(SPEC)) == docs


def test_other_seed_gives_other_corpus(docs):
    other = list(generate(CorpusSpec(n_docs=SPEC.n_docs, seed=12, exact_rate=0.1, near_rate=0.3)))
    assert sum(a.text == b.text for a, b in zip(docs, other, strict=True)) < 10


@pytest.mark.parametrize(("start", "stop"), [(0, 0), (0, 1), (5, 2100), (2047, 2049), (2999, 3000)])
def test_slice_equals_full_stream(docs, start, stop):
    assert list(generate(SPEC, start=start, stop=stop)) == docs[start:stop]


def test_originals_are_their_own_group(docs):
    for d in docs:
        if d.kind == "original":
            assert d.group == d.id
            assert (d.edit_rate, d.edits) == (0.0, 0)
        else:
            assert d.group < d.id
            assert docs[d.group].kind == "original"


def test_exact_copies_are_identical(docs):
    exact = [d for d in docs if d.kind == "exact"]
    assert len(exact) > 200
    for d in exact:
        assert d.text == docs[d.group].text
        assert d.edits == 0


def test_near_copies_have_the_requested_edits(docs):
    near = [d for d in docs if d.kind == "near"]
    assert len(near) > 700
    ratios = []
    for d in near:
        original = docs[d.group].text.split()
        copy = d.text.split()
        assert d.edit_rate in SPEC.edit_rates
        assert d.edits == min(len(original), max(1, round(d.edit_rate * len(original))))
        distance = token_edit_distance(original, copy)
        assert 1 <= distance <= d.edits
        ratios.append(distance / d.edits)
    # edits only cancel by coincidence (a deletion next to an insertion of the same word)
    assert np.mean(ratios) > 0.95
    # every requested rate is used
    assert Counter(d.edit_rate for d in near).keys() == set(SPEC.edit_rates)


def test_achieved_edit_rate_matches_request(docs):
    for rate in SPEC.edit_rates:
        near = [d for d in docs if d.kind == "near" and d.edit_rate == rate]
        lengths = np.array([len(docs[d.group].text.split()) for d in near])
        edits = np.array([d.edits for d in near])
        # rounding to whole edits costs at most half an edit per document (one for the minimum)
        assert np.all(np.abs(edits - rate * lengths) <= np.maximum(0.5, 1 - rate * lengths) + 1e-9)
        assert abs(edits.sum() / lengths.sum() - rate) < 0.01 + 0.5 / lengths.mean()


def test_kind_frequencies_follow_the_spec(docs):
    counts = Counter(d.kind for d in docs[1:])
    n = SPEC.n_docs - 1
    for kind, p in (("exact", SPEC.exact_rate), ("near", SPEC.near_rate)):
        assert abs(counts[kind] - n * p) < 5 * np.sqrt(n * p * (1 - p))


def test_lengths_stay_in_range(docs):
    lengths = [len(d.text.split()) for d in docs if d.kind != "near"]
    assert min(lengths) >= SPEC.min_length
    assert max(lengths) <= SPEC.max_length
    assert min(lengths) == SPEC.min_length
    assert max(lengths) == SPEC.max_length


def test_words_follow_zipf(docs):
    words = vocabulary(SPEC)
    rank = {w: r for r, w in enumerate(words)}
    tokens = [rank[t] for d in docs if d.kind == "original" for t in d.text.split()]
    observed = np.bincount(tokens, minlength=words.size) / len(tokens)
    expected = np.diff(_zipf_cdf(SPEC), prepend=0.0)
    n = len(tokens)
    for r in range(20):
        assert abs(observed[r] - expected[r]) < 5 * np.sqrt(expected[r] / n)


def test_vocabulary_is_distinct_lower_case_and_frequent_words_are_short():
    words = vocabulary(CorpusSpec(vocabulary_size=50_000, seed=4))
    assert len(set(words)) == 50_000
    assert all(w.isalpha() and w.islower() for w in words[::97])
    lengths = np.array([len(w) for w in words])
    assert np.all(np.diff(lengths) >= 0)


def test_streaming_keeps_memory_bounded():
    spec = CorpusSpec(n_docs=10_000_000, seed=2)
    stream = generate(spec)
    tracemalloc.start()
    try:
        for _ in itertools.islice(stream, 6_000):
            pass
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 16 * 2**20


def test_far_slice_does_not_generate_the_prefix():
    spec = CorpusSpec(n_docs=10_000_000, seed=2)
    tail = list(generate(spec, start=9_999_990))
    assert [d.id for d in tail] == list(range(9_999_990, 10_000_000))
    for d in tail:
        if d.kind == "exact":
            assert d.text == next(generate(spec, start=d.group, stop=d.group + 1)).text


@pytest.mark.parametrize(
    "kwargs",
    [
        {"n_docs": 0},
        {"seed": -1},
        {"vocabulary_size": 1},
        {"zipf_exponent": 0.0},
        {"min_length": 0},
        {"min_length": 9, "max_length": 8},
        {"exact_rate": 1.5},
        {"exact_rate": 0.6, "near_rate": 0.6},
        {"edit_rates": ()},
        {"edit_rates": (0.0,)},
    ],
)
def test_bad_spec_is_refused(kwargs):
    with pytest.raises(ValueError, match=next(iter(kwargs)).split("_")[0]):
        CorpusSpec(**kwargs)


def test_bad_range_is_refused():
    with pytest.raises(ValueError, match="start"):
        list(generate(CorpusSpec(n_docs=5), start=3, stop=9))


@given(st.lists(st.integers(0, 5), max_size=40))
def test_duplicate_pairs_match_brute_force(groups):
    expected = [
        [i, j] for i, j in itertools.combinations(range(len(groups)), 2) if groups[i] == groups[j]
    ]
    assert duplicate_pairs(groups).tolist() == expected


def test_pair_scores():
    groups = [0, 0, 0, 3, 3, 5]
    scores = pair_scores(np.array([[1, 0], [0, 1], [3, 4], [4, 5], [2, 2]]), groups)
    assert scores == {
        "true_pairs": 4,
        "predicted_pairs": 3,
        "true_positives": 2,
        "precision": 2 / 3,
        "recall": 0.5,
    }
    assert pair_scores(np.empty((0, 2)), [1, 2])["precision"] == 1.0
    with pytest.raises(ValueError, match="positions"):
        pair_scores([[0, 7]], groups)

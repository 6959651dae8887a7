"""The feature join finds exactly the pairs a brute-force comparison of every pair keeps."""

import dataclasses
import itertools
import time
import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusimhash import _memory, verified_near_duplicates, verify_pairs
from gpusimhash._memory import MemoryRefusal
from gpusimhash.datasets.synth import CorpusSpec, generate
from gpusimhash.features import FeatureBatch
from gpusimhash.fingerprinting import featurize
from gpusimhash.verify import _feature_join, _product_join
from gpusimhash.verify._feature_join import feature_join
from gpusimhash.verify._features import DocumentFeatures


def brute_force(features, measure, value):
    """Every pair ``i < j`` whose exact similarity reaches ``value``, with it, sorted."""
    i, j = np.triu_indices(features.n_docs, 1)
    pairs = np.stack([i, j], axis=1).astype(np.int64)
    similarity = getattr(features.similarities(pairs), measure)
    keep = similarity >= value
    return pairs[keep], similarity[keep]


PLANS = st.sampled_from(["index", "product"])


def assert_exact(features, measure, value, plan="index"):
    """The join's pairs and similarities equal brute force's, bit for bit."""
    found = feature_join(features, measure, value, plan=plan)
    expected_pairs, expected_similarity = brute_force(features, measure, value)
    order = np.lexsort((found.pairs[:, 1], found.pairs[:, 0]))
    np.testing.assert_array_equal(found.pairs[order], expected_pairs)
    np.testing.assert_array_equal(found.similarity[order], expected_similarity)
    assert found.candidates >= len(expected_pairs)


WEIGHTS = st.sampled_from(["ones", "counts", "floats", "signed", "tiny", "huge"])


@st.composite
def corpora(draw, kinds=WEIGHTS):
    """Small corpora over a small vocabulary (many overlaps, repeats and near-copies)."""
    n_docs = draw(st.integers(0, 40))
    vocabulary = draw(st.integers(1, 12))
    kind = draw(kinds)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    docs = [rng.integers(0, vocabulary, rng.integers(0, 9)) for _ in range(n_docs)]
    if n_docs > 1 and draw(st.booleans()):  # exact copies and copies with one feature more
        for k in range(n_docs // 2):
            extra = rng.integers(0, vocabulary, rng.integers(0, 2))
            docs[n_docs // 2 + k] = np.concatenate([docs[k], extra])
    sizes = np.array([d.size for d in docs], np.int64)
    states = np.concatenate(docs + [np.zeros(0, np.int64)]).astype(np.uint32)
    offsets = np.zeros(n_docs + 1, np.int64)
    np.cumsum(sizes, out=offsets[1:])
    weights = {
        "ones": None,
        "counts": rng.integers(1, 4, states.size).astype(np.float64),
        "floats": rng.uniform(0.01, 3.0, states.size),
        "signed": rng.uniform(-2.0, 2.0, states.size),
        "tiny": rng.uniform(1e-300, 1e-299, states.size),
        "huge": rng.uniform(1e300, 1e301, states.size),
    }[kind]
    return DocumentFeatures.from_batch(FeatureBatch(states, offsets, weights))


THRESHOLDS = st.sampled_from([1e-6, 0.1, 0.3, 0.5, 2 / 3, 0.7, 0.75, 0.8, 0.9, 0.95, 1.0])


@settings(max_examples=150, deadline=None)
@given(features=corpora(), value=THRESHOLDS, plan=PLANS)
def test_cosine_is_exact_for_any_weights(features, value, plan):
    assert_exact(features, "cosine", value, plan)


@settings(max_examples=150, deadline=None)
@given(features=corpora(), value=THRESHOLDS, plan=PLANS)
def test_jaccard_is_exact(features, value, plan):
    assert_exact(features, "jaccard", value, plan)


@settings(max_examples=100, deadline=None)
@given(
    features=corpora(),
    measure=st.sampled_from(["cosine", "jaccard"]),
    value=THRESHOLDS,
    window=st.integers(1, 9),
)
def test_small_windows_and_full_rooms_change_nothing(features, measure, value, window):
    # many windows of candidates, and rooms so small that blocks resume: still exact
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_feature_join, "WINDOW_DOCS", window)
        patch.setattr(_feature_join, "PAIRS_PER_BLOCK", 1)
        assert_exact(features, measure, value)


@settings(max_examples=40, deadline=None)
@given(
    features=corpora(kinds=st.just("counts")),
    value=THRESHOLDS,
    dtype=st.sampled_from([np.float32, np.int16, np.int8]),
    plan=PLANS,
)
def test_exactly_narrowed_weights_give_the_same_pairs(features, value, dtype, plan):
    # integer weights narrowed exactly, as the spill stores them, change nothing
    narrow = dataclasses.replace(features, weights=features.weights.astype(dtype))
    wide = feature_join(features, "cosine", value, plan="index")
    thin = feature_join(narrow, "cosine", value, plan=plan)
    mine, theirs = np.lexsort(thin.pairs.T[::-1]), np.lexsort(wide.pairs.T[::-1])
    np.testing.assert_array_equal(thin.pairs[mine], wide.pairs[theirs])
    np.testing.assert_array_equal(thin.similarity[mine], wide.similarity[theirs])


@pytest.mark.parametrize(
    ("measure", "value", "texts"),
    [
        # 4 of 5 words shared: cosine exactly 0.8, and Jaccard exactly 4 / 6
        ("cosine", 0.8, ["a b c d e", "a b c d f", "a b c g h"]),
        ("jaccard", 4 / 6, ["a b c d e", "a b c d f", "a b c g h"]),
        # Jaccard exactly 0.5: two of four in the union
        ("jaccard", 0.5, ["p q r", "p q", "q r s t"]),
    ],
)
@pytest.mark.parametrize("plan", ["index", "product"])
def test_ties_at_the_threshold_are_found(measure, value, texts, plan):
    features = DocumentFeatures.from_batch(featurize(texts))
    found = feature_join(features, measure, value, plan=plan)
    assert [0, 1] in found.pairs.tolist()
    assert_exact(features, measure, value, plan)


@pytest.mark.parametrize("plan", ["index", "product"])
def test_the_pairs_of_real_text_match_brute_force(plan):
    features = real_text_features()
    for measure, value in (("cosine", 0.8), ("cosine", 0.9), ("jaccard", 0.8)):
        assert_exact(features, measure, value, plan)


def real_texts():
    """300 short texts over a 12-word vocabulary, many near-copies among them."""
    words = "fast json parser for python http client async library tools plot data"
    rng = np.random.default_rng(7)
    return [" ".join(rng.choice(words.split(" "), rng.integers(1, 9))) for _ in range(300)]


def real_text_features():
    return DocumentFeatures.from_batch(featurize(real_texts()))


@pytest.mark.parametrize(("measure", "value"), [("min_cosine", 0.8), ("min_jaccard", 0.7)])
def test_verified_near_duplicates_finds_every_pair_by_default(measure, value):
    texts = real_texts()
    pairs, similarity = verified_near_duplicates(texts, **{measure: value})
    i, j = np.triu_indices(len(texts), 1)
    expected, expected_similarity = verify_pairs(
        texts, np.stack([i, j], axis=1), **{measure: value}
    )
    np.testing.assert_array_equal(pairs, expected)
    np.testing.assert_array_equal(similarity, expected_similarity)
    from_codes, _ = verified_near_duplicates(texts, candidates="codes", **{measure: value})
    assert set(map(tuple, from_codes.tolist())) <= set(map(tuple, pairs.tolist()))


@pytest.mark.parametrize("plan", ["index", "product"])
def test_featureless_documents_pair_with_no_one(plan):
    features = DocumentFeatures.from_batch(featurize(["", "a b", "", "a b"]))
    assert feature_join(features, "cosine", 0.5, plan=plan).pairs.tolist() == [[1, 3]]


@settings(max_examples=100, deadline=None)
@given(
    features=corpora(),
    measure=st.sampled_from(["cosine", "jaccard"]),
    value=THRESHOLDS,
    plan=PLANS,
    data=st.data(),
)
def test_rows_join_the_documents_taken_as_a_take_gives_them(features, measure, value, plan, data):
    # the index copies the rows' features once, straight into size-key order: same pairs
    rows = np.array(
        data.draw(st.lists(st.integers(0, max(features.n_docs - 1, 0)), max_size=40))
        if features.n_docs
        else [],
        dtype=np.int64,
    )
    found = feature_join(features, measure, value, rows=rows, plan=plan)
    taken = feature_join(features.take(rows), measure, value, plan=plan)
    order, expected = np.lexsort(found.pairs.T[::-1]), np.lexsort(taken.pairs.T[::-1])
    np.testing.assert_array_equal(found.pairs[order], taken.pairs[expected])
    np.testing.assert_array_equal(found.similarity[order], taken.similarity[expected])
    assert (found.candidates, found.indexed) == (taken.candidates, taken.indexed)


@pytest.mark.parametrize("plan", ["index", "product"])
def test_rows_outside_the_documents_are_refused(plan):
    features = DocumentFeatures.from_batch(featurize(["a b", "b c"]))
    with pytest.raises(ValueError, match=r"rows must lie in \[0, 2\), got 0 to 2"):
        feature_join(features, "cosine", 0.5, rows=np.array([0, 2]), plan=plan)


@pytest.mark.parametrize("value", [0.0, -0.5, 1.5])
def test_thresholds_outside_zero_one_are_refused(value):
    features = DocumentFeatures.from_batch(featurize(["a"]))
    with pytest.raises(ValueError, match=r"threshold in \(0, 1\]"):
        feature_join(features, "cosine", value)


def test_an_unknown_plan_is_refused():
    features = DocumentFeatures.from_batch(featurize(["a"]))
    with pytest.raises(ValueError, match="plan must be one of index, product, got 'dense'"):
        feature_join(features, "cosine", 0.5, plan="dense")


def test_the_index_is_the_default_and_the_product_runs_when_asked(monkeypatch):
    # the product is never even weighed by default: its tails would cost time on every corpus
    features = real_text_features()
    monkeypatch.setattr(_feature_join, "tails", lambda *a: pytest.fail("tails computed"))
    found = feature_join(features, "cosine", 0.8)
    assert found.indexed == _feature_join.feature_index(features, "cosine", 0.8).indexed
    monkeypatch.setattr(_feature_join, "tails", _product_join.tails)
    monkeypatch.setattr(_feature_join, "feature_index", lambda *a: pytest.fail("index built"))
    product = feature_join(features, "cosine", 0.8, plan="product")
    mine, theirs = np.lexsort(product.pairs.T[::-1]), np.lexsort(found.pairs.T[::-1])
    np.testing.assert_array_equal(product.pairs[mine], found.pairs[theirs])
    np.testing.assert_array_equal(product.similarity[mine], found.similarity[theirs])


@settings(max_examples=60, deadline=None)
@given(features=corpora(), value=THRESHOLDS, measure=st.sampled_from(["cosine", "jaccard"]))
def test_the_products_work_bounds_its_candidates(features, value, measure):
    # work counts ordered pairs of tail entries sharing a feature, each entry with itself too
    tails = _product_join.tails(features, measure, value)
    found = feature_join(features, measure, value, plan="product")
    assert found.indexed == tails.documents.size
    assert 2 * found.candidates + found.indexed <= tails.work()


def test_an_unknown_measure_is_refused():
    features = DocumentFeatures.from_batch(featurize(["a"]))
    with pytest.raises(ValueError, match="measure must be cosine or jaccard"):
        feature_join(features, "weighted_jaccard", 0.5)


@pytest.mark.parametrize("plan", ["index", "product"])
def test_more_pairs_than_the_budget_are_refused(monkeypatch, plan):
    monkeypatch.setattr(_feature_join, "READS_PER_PAIR", 10**9)  # the reads' check passes
    features = real_text_features()
    found = feature_join(features, "cosine", 0.8, plan=plan)
    assert len(found.pairs) > 10
    with pytest.raises(ValueError, match="document pairs .* over the budget of 10: raise"):
        feature_join(features, "cosine", 0.8, max_pairs=10, plan=plan)
    at_budget = feature_join(features, "cosine", 0.8, max_pairs=len(found.pairs), plan=plan)
    np.testing.assert_array_equal(at_budget.pairs, found.pairs)


@pytest.mark.parametrize("n_threads", [1, 3])
def test_the_budget_counts_the_pairs_of_every_thread(monkeypatch, n_threads):
    # each thread's ranges alone stay under the budget: their sum does not
    monkeypatch.setattr(_feature_join, "READS_PER_PAIR", 10**9)  # the reads' check passes
    monkeypatch.setattr(_feature_join, "threads", lambda: n_threads)
    features = real_text_features()
    found = feature_join(features, "cosine", 0.8)
    index = _feature_join.feature_index(features, "cosine", 0.8)
    bounds = _feature_join.range_bounds(index, 2 * n_threads)
    monkeypatch.setattr(_feature_join, "threads", lambda: 1)
    alone = [
        len(_feature_join.probe_range(index, a, b).pairs) for a, b in itertools.pairwise(bounds)
    ]
    assert sum(alone) == len(found.pairs)
    assert max(alone) < len(found.pairs) - 1 or n_threads == 1
    monkeypatch.setattr(_feature_join, "threads", lambda: n_threads)
    with pytest.raises(ValueError, match="document pairs .* over the budget"):
        feature_join(features, "cosine", 0.8, max_pairs=len(found.pairs) - 1)
    assert len(feature_join(features, "cosine", 0.8, max_pairs=len(found.pairs)).pairs) == len(
        found.pairs
    )


def test_a_failing_range_stops_the_others_at_their_next_round(monkeypatch):
    # range 0 is refused at once; the others keep probing rounds until they are told to stop
    monkeypatch.setattr(_feature_join, "threads", lambda: 3)
    index = _feature_join.feature_index(real_text_features(), "cosine", 0.8)
    rounds, stopped = [], []

    def probe(index, start, stop, count):
        if start == 0:
            raise ValueError("refused")
        deadline = time.monotonic() + 10
        try:
            while time.monotonic() < deadline:
                count.add(0)
                rounds.append(start)
                time.sleep(0.001)
        except _feature_join._ProbeCancelled:
            stopped.append(start)
            raise
        return _feature_join.FeatureJoin(np.zeros((0, 2), np.int64), np.zeros(0), 0, 0)

    monkeypatch.setattr(_feature_join, "_probe_by_size", probe)
    started = time.monotonic()
    with pytest.raises(ValueError, match="refused"):
        _feature_join.probe_range(index, 0, index.n_docs)
    assert time.monotonic() - started < 5  # not the 10 s the other ranges would take
    assert stopped  # they were stopped, every one that probed a round among them
    assert set(rounds) <= set(stopped)


def counted_reads(index):
    """The postings each probe reads, counted apart: per tail entry of ``x``, the postings of
    its feature from documents in ``[first_partner[x], x)``."""
    starts, entry_rank, ordered = index.index[:3]
    posting_offsets, posting_docs = index.index[6], index.index[7]
    first_partner, offsets = index.index[10], index.arrays[1]
    reads = np.zeros(index.n_docs, np.int64)
    for x in range(index.n_docs):
        for k in range(starts[x], offsets[x + 1]):
            r = entry_rank[ordered[k]]
            docs = posting_docs[posting_offsets[r] : posting_offsets[r + 1]]
            reads[x] += int(np.count_nonzero((docs >= first_partner[x]) & (docs < x)))
    return reads


@settings(max_examples=60, deadline=None)
@given(features=corpora(), value=THRESHOLDS, measure=st.sampled_from(["cosine", "jaccard"]))
def test_the_index_counts_its_probes_reads(features, value, measure):
    index = _feature_join.feature_index(features, measure, value)
    np.testing.assert_array_equal(index.doc_reads, counted_reads(index))
    assert index.reads == index.doc_reads.sum()


@settings(max_examples=100, deadline=None)
@given(
    features=corpora(),
    measure=st.sampled_from(["cosine", "jaccard"]),
    value=THRESHOLDS,
    n_ranges=st.integers(1, 5),
    n_threads=st.integers(1, 3),
    window=st.sampled_from([2, 5, 1 << 15]),
    room=st.sampled_from([1, 1 << 18]),
)
def test_ranges_probed_apart_find_the_joins_pairs_once(
    features, measure, value, n_ranges, n_threads, window, room
):
    # ranges of positions cut by their reads, each probed on its own (on threads, in windows
    # and rooms small enough to resume) from one index: every pair once, the index unchanged
    whole = feature_join(features, measure, value, plan="index")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_feature_join, "WINDOW_DOCS", window)
        patch.setattr(_feature_join, "PAIRS_PER_BLOCK", room)
        patch.setattr(_feature_join, "threads", lambda: n_threads)
        index = _feature_join.feature_index(features, measure, value)
        cursor = index.index[-1].copy()
        bounds = _feature_join.range_bounds(index, n_ranges)
        found = [
            _feature_join.probe_range(index, int(a), int(b)) for a, b in itertools.pairwise(bounds)
        ]
    np.testing.assert_array_equal(index.index[-1], cursor)
    pairs = np.concatenate([f.pairs for f in found])
    similarity = np.concatenate([f.similarity for f in found])
    order, expected = np.lexsort(pairs.T[::-1]), np.lexsort(whole.pairs.T[::-1])
    np.testing.assert_array_equal(pairs[order], whole.pairs[expected])
    np.testing.assert_array_equal(similarity[order], whole.similarity[expected])
    assert sum(f.candidates for f in found) == whole.candidates
    expected_pairs, expected_similarity = brute_force(features, measure, value)
    np.testing.assert_array_equal(pairs[order], expected_pairs)
    np.testing.assert_array_equal(similarity[order], expected_similarity)


@settings(max_examples=60, deadline=None)
@given(
    features=corpora(),
    n_ranges=st.integers(1, 6),
    ratio=st.one_of(st.just(1.0), st.floats(0.05, 1.0)),
)
def test_ranges_cut_the_positions_by_their_reads(features, n_ranges, ratio):
    index = _feature_join.feature_index(features, "cosine", 0.5)
    bounds = _feature_join.range_bounds(index, n_ranges, ratio=ratio)
    assert bounds.size == n_ranges + 1
    assert bounds[0] == 0
    assert bounds[-1] == index.n_docs
    assert (np.diff(bounds) >= 0).all()
    # each range's work (reads, and one per document) is within one document's of its part of
    # the whole: even, or each ``ratio`` times the one before
    work = index.doc_reads + 1
    done = np.concatenate([[0], np.cumsum(work)])
    each = done[bounds[1:]] - done[bounds[:-1]]
    parts = ratio ** np.arange(n_ranges)
    assert (np.abs(each - work.sum() * parts / parts.sum()) <= work.max(initial=0)).all()


def test_ranges_outside_the_positions_are_refused():
    index = _feature_join.feature_index(
        DocumentFeatures.from_batch(featurize(["a b", "a b c"])), "cosine", 0.5
    )
    with pytest.raises(ValueError, match=r"the range must lie in \[0, 2\], got \[1, 3\)"):
        _feature_join.probe_range(index, 1, 3)
    with pytest.raises(ValueError, match="n_ranges must be at least 1, got 0"):
        _feature_join.range_bounds(index, 0)
    with pytest.raises(ValueError, match=r"ratio must be in \(0, 1\], got 0"):
        _feature_join.range_bounds(index, 2, ratio=0)


def test_an_index_that_would_read_too_much_is_refused_before_probing(monkeypatch):
    features = real_text_features()
    index = _feature_join.feature_index(features, "cosine", 0.5)
    assert index.reads > 10 * _feature_join.READS_PER_PAIR
    probed = []
    monkeypatch.setattr(_feature_join, "probe_range", lambda *a, **k: probed.append(a))
    budget = -(-index.reads // _feature_join.READS_PER_PAIR) - 1  # one pair short
    with pytest.raises(ValueError, match=rf"would read {index.reads:,} postings .* raise the"):
        feature_join(features, "cosine", 0.5, max_pairs=budget, plan="index")
    assert probed == []
    feature_join(features, "cosine", 0.5, max_pairs=budget + 1, plan="index")
    assert len(probed) == 1


@pytest.mark.parametrize(
    ("max_length", "measure", "value"),
    [(40, "cosine", 0.8), (200, "cosine", 0.8), (200, "jaccard", 0.5)],
)
def test_an_index_takes_at_most_its_estimated_memory(max_length, measure, value):
    texts = [d.text for d in generate(CorpusSpec(n_docs=3000, seed=2, max_length=max_length))]
    features = DocumentFeatures.from_batch(featurize(texts))
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        _feature_join.feature_index(features, measure, value)
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    per_entry = peak / features.states.size
    assert (
        0.6 * _feature_join.INDEX_BYTES_PER_ENTRY < per_entry <= _feature_join.INDEX_BYTES_PER_ENTRY
    )


def test_an_index_larger_than_the_memory_is_refused_before_it_is_built(monkeypatch):
    features = real_text_features()
    need = _feature_join.INDEX_BYTES_PER_ENTRY * features.states.size
    monkeypatch.setattr(_memory, "available_memory", lambda: need - 1)
    ranked = []
    monkeypatch.setattr(_feature_join, "frequency_ranks", lambda *a: ranked.append(a))
    what = rf"index of {features.n_docs:,} documents \({features.states.size:,} feature entries\)"
    with pytest.raises(
        MemoryRefusal, match=rf"{what} needs about .* MB, more than .*\(--candidates codes\)"
    ):
        feature_join(features, "cosine", 0.8)
    with pytest.raises(MemoryRefusal, match="on every worker, more than the 0 MB this Dask worker"):
        _feature_join.check_index_memory(features.n_docs, features.states.size, need - 1)
    assert ranked == []  # nothing built
    monkeypatch.setattr(_memory, "available_memory", lambda: need)
    with pytest.raises(TypeError):  # past the check: the stand-in for the ranks returns None
        feature_join(features, "cosine", 0.8)
    assert len(ranked) == 1


# states sharing a low or a high 16-bit half, as the two radix passes must order them
HALVES = [0, 1, 5, 0xFFFF, 0x10000, 0x10005, 2**31, 2**32 - 1, 0xFFFF0000, 0xFFFF0001]


@settings(max_examples=60, deadline=None)
@given(
    states=st.lists(st.sampled_from(HALVES) | st.integers(0, 2**32 - 1)),
    dtype=st.sampled_from([np.uint32, np.int64]),
)
def test_frequency_ranks_order_features_by_frequency_then_state(states, dtype):
    states = np.array(states, dtype=dtype)  # int64: the np.unique path
    rank, n_ranks = _product_join.frequency_ranks(states)
    distinct, counts = np.unique(states, return_counts=True)
    expected = sorted(distinct.tolist(), key=lambda s: (-counts[distinct == s][0], s))
    assert n_ranks == distinct.size
    assert rank.dtype == np.int32
    assert [expected[r] for r in rank.tolist()] == states.tolist()

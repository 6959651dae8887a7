"""The cluster's feature join: shares of one index give the single machine's pairs of codes."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusimhash import _memory
from gpusimhash._memory import MemoryRefusal
from gpusimhash.codes import code_words
from gpusimhash.datasets.synth import CorpusSpec, generate
from gpusimhash.dedup.candidates import feature_graph
from gpusimhash.distributed import _features as features
from gpusimhash.distributed import _pairs
from gpusimhash.fingerprinting import featurize, fingerprint_batch
from gpusimhash.verify import _feature_join
from gpusimhash.verify._features import DocumentFeatures
from gpusimhash.verify._threshold import plan_threshold

TEXTS = [d.text for d in generate(CorpusSpec(n_docs=600, seed=5))]
BATCH = featurize(TEXTS)
FEATURES = DocumentFeatures.from_batch(BATCH)
CODES = fingerprint_batch(BATCH, "cpu", bits=64, seed=0)


def _single_machine_pairs(limit):
    """The pairs of codes one machine joins, named by each code's lowest row."""
    graph = feature_graph(CODES, FEATURES, limit)
    lowest = np.full(graph.n_unique, CODES.shape[0])
    np.minimum.at(lowest, graph.inverse, np.arange(CODES.shape[0]))
    rows = []
    for a in range(graph.n_unique):
        for b in graph.neighbours[graph.offsets[a] : graph.offsets[a + 1]]:
            if a < b:
                rows.append(sorted((lowest[a], lowest[b])))
    return np.array(sorted(rows), dtype=np.int64).reshape(-1, 2)


def _parts(bounds):
    """The partitions' featured documents, as `featured_documents` hands them out."""
    out = []
    for lo, hi in itertools.pairwise(bounds):
        rows = np.arange(lo, hi)
        out.append((rows - lo, code_words(CODES[rows]), FEATURES.take(rows), hi - lo))
    return out


@settings(max_examples=12, deadline=None)
@given(
    cuts=st.lists(st.integers(0, len(TEXTS)), max_size=4),
    shares=st.integers(1, 5),
    n_threads=st.integers(1, 3),
    n_tasks=st.integers(1, 4),
    measure=st.sampled_from([("min_cosine", 0.8), ("min_cosine", 0.6), ("min_jaccard", 0.7)]),
)
def test_shares_give_the_single_machines_pairs_once(cuts, shares, n_threads, n_tasks, measure):
    limit = plan_threshold(64, **{measure[0]: measure[1]})
    bounds = [0, *sorted(cuts), len(TEXTS)]
    indexed = features.index_documents(_parts(bounds), limit, shares)
    with pytest.MonkeyPatch.context() as patch:  # each share on a worker of that many threads
        patch.setattr(_feature_join, "threads", lambda: n_threads)
        found = [features.probe_share(indexed, s, None) for s in range(shares)]
    # kept once each by a shuffle (the components), or by the one task of the whole group
    routed = [_pairs.route_pairs(f[0], n_tasks) for f in found]
    kept = [_pairs.distinct_pairs([r[j] for r in routed]) for j in range(n_tasks)]
    pairs = np.concatenate(kept)
    expected = _single_machine_pairs(limit)
    assert len(expected) > 20
    assert (pairs[:, 0] < pairs[:, 1]).all()
    np.testing.assert_array_equal(pairs[np.lexsort(pairs.T[::-1])], expected)
    direct = np.concatenate([f[0] for f in found])
    np.testing.assert_array_equal(_pairs.distinct(direct), expected)
    assert features.index_summary(indexed)[0] == np.unique(CODES, axis=0).shape[0]
    assert sum(features.share_counts(f)[0] for f in found) == direct.shape[0]
    # one representative per code: the shares' pairs are distinct as they come
    distinct = np.unique(direct, axis=0).shape[0] == direct.shape[0]
    assert distinct or indexed.shared_codes


def test_a_code_of_two_feature_sets_is_deduplicated():
    # documents 0 and 1 share a code but not their features: both pair with document 2
    texts = ["red fox jumps", "red fox leaps", "red fox jumps high"]
    batch = featurize(texts)
    words = np.zeros((3, 1), np.uint64)
    words[2] = 1
    parts = [(np.arange(3), words, DocumentFeatures.from_batch(batch), 3)]
    indexed = features.index_documents(parts, plan_threshold(64, min_cosine=0.5), 1)
    assert indexed.shared_codes
    pairs, passing = features.probe_share(indexed, 0, None)
    assert passing == 3  # (0, 1) within the code, (0, 2), (1, 2)
    assert pairs.tolist() == [[0, 2]]


def test_the_budget_is_the_whole_joins():
    limit = plan_threshold(64)
    indexed = features.index_documents(_parts([0, len(TEXTS)]), limit, 2)
    passing = sum(features.probe_share(indexed, s, None)[1] for s in range(2))
    features.check_passing(passing, limit, passing)
    with pytest.raises(
        ValueError, match=rf"{passing:,} document pairs .* budget of {passing - 1:,}"
    ):
        features.check_passing(passing, limit, passing - 1)


@settings(max_examples=60, deadline=None)
@given(
    pairs=st.lists(
        st.tuples(st.integers(-3, 2**33), st.integers(-3, 2**33))
        | st.tuples(st.integers(0, 40), st.integers(0, 40)),
        max_size=60,
    )
)
def test_distinct_pairs_are_numpys_distinct_rows(pairs):
    array = np.array(pairs, dtype=np.int64).reshape(-1, 2)
    np.testing.assert_array_equal(_pairs.distinct(array), np.unique(array, axis=0))


def test_an_index_over_a_workers_memory_is_refused_before_it_is_built(monkeypatch):
    limit, parts = plan_threshold(64), _parts([0, 300, 600])
    built = features.index_documents(parts, limit, 2).index  # outside a worker: no limit
    documents, entries = built.n_docs, built.arrays[0].size  # the representatives'
    assert documents < len(TEXTS)  # fewer than the documents: their duplicates are left out
    room = _feature_join.INDEX_BYTES_PER_ENTRY * entries
    monkeypatch.setattr(features, "worker_room", lambda: room - 1)
    what = rf"index of {documents:,} documents \({entries:,} feature entries\) .* on every worker"
    with pytest.raises(MemoryRefusal, match=what):
        features.index_documents(parts, limit, 2)
    monkeypatch.setattr(features, "worker_room", lambda: room)
    assert features.index_documents(parts, limit, 2).index.n_docs == documents


def test_a_shares_pairs_over_a_workers_memory_are_refused_as_they_are_found(monkeypatch):
    limit, parts = plan_threshold(64), _parts([0, 300, 600])
    indexed = features.index_documents(parts, limit, 2)
    _, passing = features.probe_share(indexed, 0, None)  # outside a worker: no limit
    assert passing > 0
    monkeypatch.setattr(features, "worker_room", lambda: 20 * passing - 1)
    what = rf"{passing:,} document pairs .* this Dask worker had left of its memory limit"
    with pytest.raises(MemoryRefusal, match=what):
        features.probe_share(indexed, 0, None)
    monkeypatch.setattr(features, "worker_room", lambda: 20 * passing)
    assert features.probe_share(indexed, 0, None)[1] == passing


@pytest.mark.slow
def test_a_workers_room_is_its_memory_limit_less_what_it_holds():
    distributed = pytest.importorskip("distributed")
    assert features.worker_room() is None  # not in a worker
    limit = 4 << 30
    with distributed.Client(
        processes=False, n_workers=1, memory_limit=limit, dashboard_address=":0"
    ) as client:
        room = client.submit(features.worker_room).result()
    assert limit - room == pytest.approx(_memory.resident_memory(), rel=0.5)  # this process

"""The compiled loops give the same bits on any number of threads.

Each loop computes every result from its own document, pair or block alone, so the thread count
(``NUMBA_NUM_THREADS``, which ``--threads`` sets, caps it) changes only the speed.
"""

import numpy as np
import pytest

from gpusimhash._cpu import _loops, _threads, _verify_loops
from gpusimhash.fingerprinting import featurize
from gpusimhash.verify._feature_join import feature_join
from gpusimhash.verify._features import DocumentFeatures

THREADS = ("1", "2", "3")


def random_batch(rng):
    sizes = rng.integers(0, 60, 400)
    offsets = np.zeros(sizes.size + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    states = rng.integers(0, 50, offsets[-1], dtype=np.uint64).astype(np.uint32)  # repeats
    weights = rng.standard_normal(offsets[-1]) * 10.0 ** rng.integers(-5, 5, offsets[-1])
    return states, offsets, weights


def each_thread_count(monkeypatch, compute):
    results = []
    for n in THREADS:
        monkeypatch.setenv("NUMBA_NUM_THREADS", n)
        assert 1 <= _threads.threads() <= int(n)  # the cap holds
        results.append(compute())
    return results


def assert_same_bits(results):
    first, *others = results
    for other in others:
        for a, b in zip(first, other, strict=True):
            assert a.dtype == b.dtype
            np.testing.assert_array_equal(a.view(np.uint8), b.view(np.uint8))


@pytest.mark.parametrize("seed", [0, 1])
def test_merging_similarities_and_codes_ignore_the_thread_count(monkeypatch, seed):
    rng = np.random.default_rng(seed)
    states, offsets, weights = random_batch(rng)
    left = rng.integers(0, offsets.size - 1, 5000)
    right = rng.integers(0, offsets.size - 1, 5000)
    hashes = rng.integers(0, 2**32, states.size, dtype=np.uint64).astype(np.uint32)
    fixed = rng.integers(-1000, 1000, states.size, dtype=np.int64)

    def compute():
        merged = _verify_loops.merge_documents(states, offsets, weights)
        return (
            *merged,
            *_verify_loops.pair_similarities(*merged, left, right),
            _verify_loops.feature_hashes(*merged[:3]),
            _loops.accumulate_codes(hashes, offsets, fixed, 128),
            _loops.accumulate_unit_codes(hashes, offsets, 256),
        )

    assert_same_bits(each_thread_count(monkeypatch, compute))


@pytest.mark.parametrize(("measure", "value"), [("cosine", 0.6), ("jaccard", 0.5)])
def test_the_feature_join_ignores_the_thread_count(monkeypatch, measure, value):
    words = ["fast", "json", "parser", "python", "http", "client", "async", "library", "data"]
    rng = np.random.default_rng(7)
    texts = [" ".join(rng.choice(words, rng.integers(1, 9))) for _ in range(2000)]
    features = DocumentFeatures.from_batch(featurize(texts))

    def compute():
        found = feature_join(features, measure, value, plan="index")
        order = np.lexsort((found.pairs[:, 1], found.pairs[:, 0]))
        return found.pairs[order], found.similarity[order], np.array([found.candidates])

    assert_same_bits(each_thread_count(monkeypatch, compute))

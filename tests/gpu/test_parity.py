"""CPU and GPU give the same codes, exactly (skipped where no CUDA device answers)."""

from __future__ import annotations

import numpy as np
import pytest

from gpusimhash import _gpu, fingerprint, fingerprint_device
from gpusimhash._cpu._fingerprint import fingerprint_batch as cpu_fingerprint_batch
from gpusimhash.features import FeatureBatch
from gpusimhash.text import TextFeaturizer

pytestmark = pytest.mark.gpu

BITS = (8, 40, 64, 128, 256, 4096)


def _batch(rng, n_docs, max_len, weighted):
    offsets = np.zeros(n_docs + 1, dtype=np.int64)
    np.cumsum(rng.integers(0, max_len + 1, n_docs), out=offsets[1:])
    states = rng.integers(0, 2**32, offsets[-1], dtype=np.uint64).astype(np.uint32)
    weights = rng.normal(size=offsets[-1]) * 10.0 ** rng.integers(-5, 5) if weighted else None
    return FeatureBatch(states, offsets, weights)


def _texts(rng, n_docs):
    alphabet = list("abcdefghij ABC  .,_-\n") + ["é", "İ", "ß", "Σ", "日", "𝐀", "😀", "\u00a0"]
    lengths = rng.integers(0, 60, n_docs)
    return ["".join(rng.choice(alphabet, size=length)) for length in lengths]


@pytest.mark.parametrize("n_docs", [0, 1, 255, 257])
@pytest.mark.parametrize("weighted", [False, True])
def test_batch_parity(n_docs, weighted):
    batch = _batch(np.random.default_rng(n_docs), n_docs, 40, weighted)
    for bits in BITS:
        gpu = _gpu.fingerprint_batch(batch, bits=bits, seed=12345).get()
        np.testing.assert_array_equal(gpu, cpu_fingerprint_batch(batch, bits=bits, seed=12345))


def test_batch_parity_beyond_one_grid():
    # more work items than threads_per_block * blocks * 2 on any current GPU
    batch = _batch(np.random.default_rng(1), 400_000, 12, True)
    gpu = _gpu.fingerprint_batch(batch, bits=256, seed=5).get()
    np.testing.assert_array_equal(gpu, cpu_fingerprint_batch(batch, bits=256, seed=5))


def test_single_huge_document():
    rng = np.random.default_rng(2)
    for weighted in (False, True):
        batch = _batch(rng, 1, 0, weighted)
        states = rng.integers(0, 2**32, 3_000_000, dtype=np.uint64).astype(np.uint32)
        weights = rng.normal(size=states.size) if weighted else None
        batch = FeatureBatch(states, np.array([0, states.size], dtype=np.int64), weights)
        gpu = _gpu.fingerprint_batch(batch, bits=128, seed=0).get()
        np.testing.assert_array_equal(gpu, cpu_fingerprint_batch(batch, bits=128, seed=0))


def test_batch_boundaries_of_the_memory_budget(monkeypatch):
    monkeypatch.setattr(_gpu, "_memory_budget", lambda bytes_per_item: 1000)
    batch = _batch(np.random.default_rng(3), 3000, 30, True)
    gpu = _gpu.fingerprint_batch(batch, bits=64, seed=9).get()
    np.testing.assert_array_equal(gpu, cpu_fingerprint_batch(batch, bits=64, seed=9))
    texts = _texts(np.random.default_rng(4), 3000)
    featurizer = TextFeaturizer("char", 3)
    gpu = _gpu.fingerprint_text(texts, featurizer, bits=64, seed=9).get()
    expected = cpu_fingerprint_batch(featurizer.transform(texts), bits=64, seed=9)
    np.testing.assert_array_equal(gpu, expected)


@pytest.mark.parametrize("analyzer", ["word", "char"])
@pytest.mark.parametrize("weighting", ["count", "binary", "logtf", "tfidf"])
def test_text_parity(analyzer, weighting):
    rng = np.random.default_rng(7)
    texts = [*_texts(rng, 2000), "", "x" * 100_000, "😀 " * 5000]
    for ngram in (1, 3):
        featurizer = TextFeaturizer(analyzer, ngram, weighting)
        if weighting == "tfidf":
            featurizer.fit(texts[:1000])
        for bits in (64, 256):
            gpu = _gpu.fingerprint_text(texts, featurizer, bits=bits, seed=3).get()
            expected = cpu_fingerprint_batch(featurizer.transform(texts), bits=bits, seed=3)
            np.testing.assert_array_equal(gpu, expected)


def test_public_fingerprint_gpu_equals_cpu():
    texts = _texts(np.random.default_rng(8), 5000)
    for kwargs in ({}, {"featurizer": TextFeaturizer("word", 2, "logtf")}):
        gpu = fingerprint(texts, bits=128, seed=1, device="gpu", batch_size=1000, **kwargs)
        cpu = fingerprint(texts, bits=128, seed=1, device="cpu", batch_size=1000, **kwargs)
        np.testing.assert_array_equal(gpu, cpu)
    vectors = [{"apple": 3, "pie": 1.5}, {}, {"x": -2.0}]
    np.testing.assert_array_equal(
        fingerprint(vectors, device="gpu"), fingerprint(vectors, device="cpu")
    )


def test_device_entry_point_keeps_codes_on_the_device():
    import cupy

    batch = _batch(np.random.default_rng(9), 500, 20, True)
    device_batch = FeatureBatch(
        cupy.asarray(batch.states), cupy.asarray(batch.offsets), cupy.asarray(batch.weights)
    )
    codes = fingerprint_device(device_batch, bits=64, seed=4)
    assert isinstance(codes, cupy.ndarray)
    np.testing.assert_array_equal(codes.get(), cpu_fingerprint_batch(batch, bits=64, seed=4))
    texts = _texts(np.random.default_rng(10), 100)
    np.testing.assert_array_equal(
        fingerprint_device(texts, bits=64).get(), fingerprint(texts, device="cpu")
    )
    bad = FeatureBatch(device_batch.states, device_batch.offsets, device_batch.weights * np.nan)
    with pytest.raises(ValueError, match="finite"):
        fingerprint_device(bad)


def test_back_to_back_device_calls_on_host_input():
    """Review item 5: the second call must not rewrite a pinned buffer under the first's copy."""
    batches = [_batch(np.random.default_rng(seed), 200_000, 40, True) for seed in (11, 12)]
    codes = [fingerprint_device(batch, bits=64, seed=2) for batch in batches]
    for batch, device_codes in zip(batches, codes, strict=True):
        expected = cpu_fingerprint_batch(batch, bits=64, seed=2)
        np.testing.assert_array_equal(device_codes.get(), expected)


def test_utf8_and_arrow_input_parity():
    import pyarrow as pa

    from gpusimhash.utf8 import Utf8Texts

    texts = [t for t in _texts(np.random.default_rng(13), 3000) if "\ud800" not in t]
    expected = fingerprint(texts, bits=128, seed=6, device="cpu")
    for documents in (Utf8Texts.from_strings(texts), pa.array(texts), pa.array(texts).slice(0)):
        gpu = fingerprint(documents, bits=128, seed=6, device="gpu", batch_size=700)
        np.testing.assert_array_equal(gpu, expected)
    device_codes = fingerprint_device(pa.array(texts, pa.large_string()), bits=128, seed=6)
    np.testing.assert_array_equal(device_codes.get(), expected)

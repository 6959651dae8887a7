"""GPU verification (kernels/verify.cu) run on the CPU through g++ (cuda_emu).

``Verifier`` drives the emulated kernel on NumPy arrays exactly as it drives CuPy on a device.
Every similarity must equal the CPU loop's (``_cpu._verify_loops.pair_similarities``) bit for
bit, NaNs included: same walk, same sums in the same order.
"""

from __future__ import annotations

import numpy as np
import pytest
from cuda_emu import emulator
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusimhash._cpu._verify_loops import merge_documents, pair_similarities
from gpusimhash._gpu.verify import Verifier


def _verifier(library, features, threads=32, grid=3):
    launcher = emulator.EmulatedLauncher(library, threads_per_block=threads, max_blocks=grid)
    return Verifier(np, launcher, *features)


def _features(rng, n_docs, max_len, n_states=60, empty_share=0.2, negative=True):
    """Merged random documents: states from a small pool (shared features), mixed weights."""
    sizes = rng.integers(0, max_len + 1, n_docs)
    sizes[rng.random(n_docs) < empty_share] = 0
    offsets = np.zeros(n_docs + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    states = (rng.integers(0, n_states, offsets[-1]) * 2654435761 % 2**32).astype(np.uint32)
    weights = rng.lognormal(0.0, 1.5, offsets[-1])
    if negative:
        weights *= rng.choice([-1.0, 1.0], offsets[-1], p=[0.2, 0.8])
    return merge_documents(states, offsets, weights)


def _assert_same(gpu, cpu):
    """Equal float64 bit patterns (NaN where NaN), measure by measure."""
    for name, a, b in zip(("cosine", "jaccard", "weighted"), gpu, cpu, strict=True):
        assert a.dtype == np.float64, name
        np.testing.assert_array_equal(a.view(np.uint64), b.view(np.uint64), err_msg=name)


def _compare(library, features, left, right, **launch):
    left = np.asarray(left, dtype=np.int64)
    right = np.asarray(right, dtype=np.int64)
    gpu = _verifier(library, features, **launch).pair_similarities(left, right)
    _assert_same(gpu, pair_similarities(*features, left, right))
    return gpu


def _all_pairs(n):
    left, right = np.triu_indices(n, 1)
    return left, right


def test_random_documents_equal_the_cpu_bit_for_bit(emulated_kernels):
    rng = np.random.default_rng(0)
    features = _features(rng, 40, 25)
    left, right = _all_pairs(40)
    cosine, jaccard, weighted = _compare(emulated_kernels, features, left, right)
    # real values, not only NaNs: most pairs share features, some are featureless
    assert np.isfinite(cosine).sum() > 300
    assert np.isnan(cosine).sum() > 50
    assert ((jaccard > 0) & (jaccard < 1)).sum() > 100
    assert np.isfinite(weighted).sum() > 300


def test_empty_documents_give_nan(emulated_kernels):
    features = merge_documents(
        np.array([5, 5, 9], np.uint32), np.array([0, 0, 3, 3], np.int64), np.ones(3)
    )
    cosine, jaccard, weighted = _compare(emulated_kernels, features, [0, 1, 0, 2], [1, 2, 2, 1])
    assert np.isnan(cosine[[0, 2, 3]]).all()
    assert np.isnan(jaccard[[0, 2]]).all()
    assert np.isnan(weighted[[0, 2, 3]]).all()


def test_every_featureless_or_cancelled_document(emulated_kernels):
    """Weights summing to zero drop a feature: a document can merge down to nothing."""
    states = np.array([3, 3, 4], np.uint32)
    weights = np.array([1.5, -1.5, 2.0])
    features = merge_documents(states, np.array([0, 2, 3], np.int64), weights)
    assert features[1].tolist() == [0, 0, 1]
    cosine, _, _ = _compare(emulated_kernels, features, [0, 1], [1, 1])
    assert np.isnan(cosine[0])
    assert cosine[1] == 1.0


def test_duplicate_states_before_the_merge(emulated_kernels):
    """Repeated states are summed by merge_documents; the walk then sees distinct ones."""
    rng = np.random.default_rng(1)
    states = rng.integers(0, 5, 400).astype(np.uint32)  # many repeats per document
    offsets = np.arange(0, 401, 20, dtype=np.int64)
    features = merge_documents(states, offsets, rng.normal(size=400))
    _compare(emulated_kernels, features, *_all_pairs(20))


def test_unmerged_runs_with_equal_states_walk_as_on_the_cpu(emulated_kernels):
    """Sorted runs that still hold equal states (not merged) take the same walk as the CPU's."""
    states = np.array([1, 1, 2, 1, 2, 2, 2], np.uint32)
    offsets = np.array([0, 3, 7], np.int64)
    weights = np.array([0.5, 2.0, -1.0, 3.0, 0.25, 0.25, 4.0])
    exponents = np.array([2, 3], np.int64)
    squared_norms = np.array([0.328125, 0.3046875])
    features = (states, offsets, weights, exponents, squared_norms)
    _compare(emulated_kernels, features, [0, 1, 0], [1, 0, 0])


def test_a_document_paired_with_itself(emulated_kernels):
    rng = np.random.default_rng(2)
    features = _features(rng, 12, 30, empty_share=0.0)
    diagonal = np.arange(12)
    cosine, jaccard, weighted = _compare(emulated_kernels, features, diagonal, diagonal)
    np.testing.assert_allclose(cosine, 1.0, rtol=1e-15)
    assert (jaccard == 1.0).all()
    assert (weighted == 1.0).all()


def test_long_documents_and_many_pairs_over_a_small_grid(emulated_kernels):
    """Documents of thousands of features; more pairs than threads, so the grid strides."""
    rng = np.random.default_rng(3)
    features = _features(rng, 6, 6000, n_states=9000, empty_share=0.0)
    assert features[1][-1] > 10_000
    left = rng.integers(0, 6, 150)
    right = rng.integers(0, 6, 150)
    _compare(emulated_kernels, features, left, right, threads=32, grid=2)


def test_wide_dynamic_range_of_weights(emulated_kernels):
    """Weights from 1e-300 to 1e300: the power-of-two scaling keeps the products finite."""
    rng = np.random.default_rng(4)
    states = rng.integers(0, 30, 300).astype(np.uint32)
    weights = 10.0 ** rng.uniform(-300, 300, 300) * rng.choice([-1.0, 1.0], 300)
    features = merge_documents(states, np.arange(0, 301, 30, dtype=np.int64), weights)
    cosine, _, _ = _compare(emulated_kernels, features, *_all_pairs(10))
    assert np.isfinite(cosine).all()


def test_uint64_states(emulated_kernels):
    rng = np.random.default_rng(5)
    states, offsets, weights, exponents, norms = _features(rng, 15, 20, empty_share=0.1)
    wide = states.astype(np.uint64) << np.uint64(31)  # same order, above 2**32
    _compare(emulated_kernels, (wide, offsets, weights, exponents, norms), *_all_pairs(15))


def test_no_pairs_launches_nothing(emulated_kernels):
    features = _features(np.random.default_rng(6), 3, 4)
    verifier = _verifier(emulated_kernels, features)
    out = verifier.pair_similarities(np.zeros(0, np.int64), np.zeros(0, np.int64))
    assert [a.shape for a in out] == [(0,)] * 3
    assert verifier.launch.launched == []


@settings(max_examples=25)
@given(
    seed=st.integers(0, 2**32 - 1),
    n_docs=st.integers(1, 30),
    max_len=st.integers(0, 40),
    n_states=st.integers(1, 80),
)
def test_property_equal_to_the_cpu(emulated_kernels, seed, n_docs, max_len, n_states):
    rng = np.random.default_rng(seed)
    features = _features(rng, n_docs, max_len, n_states=n_states)
    left = rng.integers(0, n_docs, 60)
    right = rng.integers(0, n_docs, 60)
    _compare(emulated_kernels, features, left, right, threads=32, grid=1 + seed % 3)


def test_bad_pairs_and_arrays_raise_before_any_launch(emulated_kernels):
    features = _features(np.random.default_rng(7), 4, 5)
    verifier = _verifier(emulated_kernels, features)
    with pytest.raises(ValueError, match=r"\[0, 4\), got 4"):
        verifier.pair_similarities(np.array([0, 4]), np.array([1, 1]))
    with pytest.raises(ValueError, match="got -1"):
        verifier.pair_similarities(np.array([0, 1]), np.array([-1, 1]))
    with pytest.raises(TypeError, match="left must have dtype int64"):
        verifier.pair_similarities(np.array([0], np.int32), np.array([1]))
    with pytest.raises(ValueError, match=r"right must have shape \(2,\)"):
        verifier.pair_similarities(np.array([0, 1]), np.array([1]))
    assert verifier.launch.launched == []
    states, offsets, weights, exponents, norms = features
    with pytest.raises(TypeError, match="states must have dtype uint32 or uint64"):
        _verifier(emulated_kernels, (states.astype(np.int64), *features[1:]))
    with pytest.raises(ValueError, match="offsets must be non-decreasing"):
        _verifier(emulated_kernels, (states, offsets[::-1].copy(), *features[2:]))
    with pytest.raises(ValueError, match="exponents must have shape"):
        _verifier(emulated_kernels, (states, offsets, weights, exponents[:-1], norms))

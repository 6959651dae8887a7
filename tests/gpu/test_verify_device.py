"""GPU verification on a real GPU (CuPy): the compiled kernel against the CPU loop, bit for bit.

Skipped without CuPy and a CUDA device (``pytest -m gpu`` on a GPU machine; run.sh in
bench/device_check runs it). test_verify_emulated.py covers the same kernel on the CPU.
"""

from __future__ import annotations

import numpy as np
import pytest

from gpusimhash import _backend
from gpusimhash._cpu._verify_loops import merge_documents, pair_similarities
from gpusimhash._gpu import verify as gpu_verify

pytestmark = pytest.mark.gpu


def _features(rng: np.random.Generator, n_docs: int, max_len: int) -> tuple[np.ndarray, ...]:
    sizes = rng.integers(0, max_len + 1, n_docs)
    sizes[rng.random(n_docs) < 0.1] = 0
    sizes[0] = 5000  # a long document
    offsets = np.zeros(n_docs + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    states = (rng.integers(0, 3000, offsets[-1]) * 2654435761 % 2**32).astype(np.uint32)
    weights = rng.lognormal(0.0, 2.0, offsets[-1]) * rng.choice([-1.0, 1.0], offsets[-1])
    return merge_documents(states, offsets, weights)


@pytest.mark.parametrize("states", ["uint32", "uint64"])
def test_device_kernel_equals_the_cpu(states: str) -> None:
    cupy = _backend.require_gpu()
    rng = np.random.default_rng(8)
    features = list(_features(rng, 3000, 60))
    if states == "uint64":
        features[0] = features[0].astype(np.uint64) << np.uint64(32)
    left = np.concatenate([rng.integers(0, 3000, 100_000), np.arange(3000)])
    right = np.concatenate([rng.integers(0, 3000, 100_000), np.arange(3000)])
    gpu = gpu_verify.pair_similarities(*features, cupy.asarray(left), right)
    cpu = pair_similarities(*features, left, right)
    for a, b in zip(gpu, cpu, strict=True):
        np.testing.assert_array_equal(a.view(np.uint64), b.view(np.uint64))


def test_device_verifier_keeps_the_features_on_the_device() -> None:
    cupy = _backend.require_gpu()
    features = _features(np.random.default_rng(9), 100, 20)
    verifier = gpu_verify.device_verifier(*features)
    assert isinstance(verifier.states, cupy.ndarray)
    left, right = cupy.arange(99, dtype=cupy.int64), cupy.arange(1, 100, dtype=cupy.int64)
    cosine, _, _ = verifier.pair_similarities(left, right)
    expected, _, _ = pair_similarities(*features, np.arange(99), np.arange(1, 100))
    np.testing.assert_array_equal(cosine.get().view(np.uint64), expected.view(np.uint64))
    with pytest.raises(ValueError, match=r"\[0, 100\)"):
        verifier.pair_similarities(left, right + 1)

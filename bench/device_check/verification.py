"""The verification part of the device check (issue 10), as sections for check.py's Report.

- ``verify_parity``: the GPU pair similarities (kernels/verify.cu through
  ``gpusimhash._gpu.verify``) equal to the CPU loop's (``_cpu._verify_loops.pair_similarities``)
  bit for bit, NaNs included: on the real documents (words by count, character 3-grams by
  log tf) and on random features (negative weights, empty and long documents, a wide range of
  magnitudes), for random pairs, neighbouring pairs and documents paired with themselves.
- ``verify_bench``: pairs per second on the device (features and pairs already there, median
  GPU time) against the CPU loop on all cores (compiled and warmed, best of two), same pairs.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from gpusimhash._cpu._verify_loops import merge_documents, pair_similarities
from gpusimhash.text import TextFeaturizer

Features = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def merged(texts: list[str], featurizer: TextFeaturizer) -> Features:
    """Sorted distinct features of each text (DocumentFeatures' arrays), on the host."""
    batch = featurizer.transform(texts)
    return merge_documents(
        np.ascontiguousarray(batch.states, dtype=np.uint32),
        np.ascontiguousarray(batch.offsets, dtype=np.int64),
        np.ascontiguousarray(batch.entry_weights(), dtype=np.float64),
    )


def random_features(rng: np.random.Generator, n_docs: int) -> Features:
    """Random documents: 0-200 features from a small pool, a few of 20,000, signed weights."""
    sizes = rng.integers(0, 201, n_docs)
    sizes[rng.random(n_docs) < 0.1] = 0
    sizes[rng.random(n_docs) < 0.001] = 20_000
    offsets = np.zeros(n_docs + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    nnz = int(offsets[-1])
    states = (rng.integers(0, 5_000, nnz) * 2654435761 % 2**32).astype(np.uint32)
    weights = 10.0 ** rng.uniform(-30, 30, nnz) * rng.choice([-1.0, 1.0], nnz, p=[0.3, 0.7])
    return merge_documents(states, offsets, weights)


def pairs_of(rng: np.random.Generator, n_docs: int, n_random: int) -> tuple[np.ndarray, ...]:
    """Random pairs, each document with the next one, and 1,000 documents with themselves."""
    neighbours = np.arange(n_docs - 1, dtype=np.int64)
    itself = rng.integers(0, n_docs, 1000)
    left = np.concatenate([rng.integers(0, n_docs, n_random), neighbours, itself])
    right = np.concatenate([rng.integers(0, n_docs, n_random), neighbours + 1, itself])
    return left, right


def compare(name: str, features: Features, left: np.ndarray, right: np.ndarray) -> dict:
    """One parity record: GPU and CPU similarities of the same pairs, as float64 bit patterns."""
    from gpusimhash._gpu import verify as gpu_verify

    gpu = gpu_verify.pair_similarities(*features, left, right)
    cpu = pair_similarities(*features, left, right)
    record: dict[str, Any] = {"what": name, "docs": int(features[1].size - 1), "pairs": left.size}
    for measure, a, b in zip(("cosine", "jaccard", "weighted"), gpu, cpu, strict=True):
        record[f"{measure}_differing"] = int((a.view(np.uint64) != b.view(np.uint64)).sum())
        record[f"{measure}_nan"] = int(np.isnan(b).sum())
    record["identical"] = all(
        record[f"{m}_differing"] == 0 for m in ("cosine", "jaccard", "weighted")
    )
    print(f"verify parity {record}", flush=True)
    return record


def parity(real: list[str], rng: np.random.Generator) -> list[dict]:
    """GPU against CPU pair similarities on real and random documents."""
    records = []
    for name, featurizer in (
        ("word1-count", TextFeaturizer()),
        ("char3-logtf", TextFeaturizer("char", 3, "logtf")),
    ):
        features = merged(real, featurizer)
        left, right = pairs_of(rng, len(real), 1_000_000)
        records.append(compare(f"real/{name}", features, left, right))
    features = random_features(rng, 20_000)
    left, right = pairs_of(rng, 20_000, 200_000)
    records.append(compare("random", features, left, right))
    return records


def bench(real: list[str], rng: np.random.Generator, n_pairs: int) -> dict:
    """Pairs per second on the device and on all CPU cores, same features and pairs."""
    import cupy
    from cupyx.profiler import benchmark

    from gpusimhash._gpu import verify as gpu_verify

    features = merged(real, TextFeaturizer())
    left = rng.integers(0, len(real), n_pairs)
    right = rng.integers(0, len(real), n_pairs)
    verifier = gpu_verify.device_verifier(*features)
    device_left, device_right = cupy.asarray(left), cupy.asarray(right)
    timing = benchmark(
        lambda: verifier.pair_similarities(device_left, device_right), n_repeat=10, n_warmup=2
    )
    gpu_s = float(np.median(timing.gpu_times[0]))
    pair_similarities(*features, left[:1000], right[:1000])  # compiled and warm
    cpu_s = float("inf")
    for _ in range(2):
        start = time.perf_counter()
        pair_similarities(*features, left, right)
        cpu_s = min(cpu_s, time.perf_counter() - start)
    record = {
        "docs": len(real),
        "features": int(features[1][-1]),
        "pairs": n_pairs,
        "gpu_s": gpu_s,
        "cpu_s": cpu_s,
        "gpu_pairs_per_s": n_pairs / gpu_s,
        "cpu_pairs_per_s": n_pairs / cpu_s,
        "gpu_over_cpu": cpu_s / gpu_s,
    }
    print(f"verify bench {record}", flush=True)
    return record

"""The verification part of the device check, as sections for check.py's Report.

- ``verify_parity``: the GPU pair similarities (kernels/verify.cu through
  ``gpusimhash._gpu.verify``; the CPU stand-in in a dry run) equal to the CPU loop's
  (``_cpu._verify_loops.pair_similarities``) bit for bit, NaNs included: on the real documents (words by count, character 3-grams by
  log tf) and on random features (negative weights, empty and long documents, a wide range of
  magnitudes), for random pairs, neighbouring pairs and documents paired with themselves.
- ``verify_bench_gpu`` and ``verify_bench_cpu``: pairs per second on the device and on all CPU
  cores, same features and pairs, each record naming the memory its side reads: on the device
  from device memory (features, pairs and similarities already there, median GPU time) and
  from host memory (features uploaded, pairs copied in, similarities copied back, best wall
  time of three); on the CPU from host memory (compiled and warmed, best of two).
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


def compare(side: Any, name: str, features: Features, left: np.ndarray, right: np.ndarray) -> dict:
    """One parity record: ``side``'s and the CPU's similarities, as float64 bit patterns."""
    gpu = side.pair_similarities(features, left, right)
    cpu = pair_similarities(*features, left, right)
    record: dict[str, Any] = {
        "side": side.name,
        "what": name,
        "docs": int(features[1].size - 1),
        "pairs": left.size,
    }
    for measure, a, b in zip(("cosine", "jaccard", "weighted"), gpu, cpu, strict=True):
        record[f"{measure}_differing"] = int((a.view(np.uint64) != b.view(np.uint64)).sum())
        record[f"{measure}_nan"] = int(np.isnan(b).sum())
    record["identical"] = all(
        record[f"{m}_differing"] == 0 for m in ("cosine", "jaccard", "weighted")
    )
    print(f"verify parity {record}", flush=True)
    return record


def parity(side: Any, real: list[str], n_pairs: int) -> list[dict]:
    """``side``'s pair similarities against the CPU loop's on real and random documents."""
    rng = np.random.default_rng(10)
    records = []
    for name, featurizer in (
        ("word1-count", TextFeaturizer()),
        ("char3-logtf", TextFeaturizer("char", 3, "logtf")),
    ):
        features = merged(real, featurizer)
        left, right = pairs_of(rng, len(real), n_pairs)
        records.append(compare(side, f"real/{name}", features, left, right))
    features = random_features(rng, 20_000)
    left, right = pairs_of(rng, 20_000, n_pairs // 5)
    records.append(compare(side, "random", features, left, right))
    return records


def bench_inputs(real: list[str], n_pairs: int) -> tuple[Features, np.ndarray, np.ndarray]:
    """The benchmark's features (words by count) and pairs: the same in every process."""
    rng = np.random.default_rng(11)
    left = rng.integers(0, len(real), n_pairs)
    right = rng.integers(0, len(real), n_pairs)
    return merged(real, TextFeaturizer()), left, right


def memory(features: Features, n_pairs: int) -> dict[str, int]:
    """Bytes of the features, the pairs and the similarities each side reads or writes."""
    return {
        "features_bytes": int(sum(a.nbytes for a in features)),
        "pairs_bytes": 16 * n_pairs,
        "similarities_bytes": 24 * n_pairs,
    }


def bench_gpu(real: list[str], n_pairs: int) -> dict:
    """Pairs per second on the device: from device memory, and from host memory and back."""
    import cupy
    from cupyx.profiler import benchmark

    from gpusimhash._gpu import verify as gpu_verify

    features, left, right = bench_inputs(real, n_pairs)
    verifier = gpu_verify.device_verifier(*features)
    device_left, device_right = cupy.asarray(left), cupy.asarray(right)
    timing = benchmark(
        lambda: verifier.pair_similarities(device_left, device_right), n_repeat=10, n_warmup=2
    )
    resident_s = float(np.median(timing.gpu_times[0]))
    gpu_verify.pair_similarities(*features, left[:1000], right[:1000])  # warm
    from_host_s = float("inf")
    for _ in range(3):  # features uploaded, pairs copied in, similarities copied back
        cupy.cuda.Device().synchronize()
        start = time.perf_counter()
        gpu_verify.pair_similarities(*features, left, right)
        from_host_s = min(from_host_s, time.perf_counter() - start)
    record = {
        "docs": len(real),
        "features": int(features[1][-1]),
        "pairs": n_pairs,
        **memory(features, n_pairs),
        "resident_s": resident_s,
        "resident_memory": "features, pairs and similarities in device memory (median GPU time)",
        "from_host_s": from_host_s,
        "from_host_memory": (
            "features and pairs in host memory, copied to the device; similarities copied back"
        ),
        "resident_pairs_per_s": n_pairs / resident_s,
        "from_host_pairs_per_s": n_pairs / from_host_s,
    }
    print(f"verify bench (gpu) {record}", flush=True)
    return record


def bench_cpu(real: list[str], n_pairs: int) -> dict:
    """Pairs per second of the CPU loop on all cores (compiled and warm, best of two)."""
    features, left, right = bench_inputs(real, n_pairs)
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
        **memory(features, n_pairs),
        "cpu_s": cpu_s,
        "cpu_memory": "features, pairs and similarities in host memory",
        "cpu_pairs_per_s": n_pairs / cpu_s,
    }
    print(f"verify bench (cpu) {record}", flush=True)
    return record

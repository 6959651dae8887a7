"""The fingerprint part of the device check: parity, GPU benchmarks, the fair CPU baseline.

Every figure comes from one run on one machine:

- ``parity``: GPU codes equal to CPU codes, exactly, on random and real documents, from str,
  from UTF-8 and from feature batches, plus two back-to-back ``fingerprint_device`` calls on
  host input (the pinned-buffer race). A dry run compares the CPU stand-in instead.
- ``copy_bandwidth_bytes_per_s`` and ``accumulate``: the accumulation kernels on
  device-resident features, as a fraction of the device-to-device copy bandwidth.
- ``device_text``: device-resident UTF-8 to codes: PyPI summaries (goal: 50M documents/s) and
  documents of about 1 KB (goal: 10 GB/s of text).
- ``end_to_end_gpu``: host input to host codes on the GPU (UTF-8 bytes, str list, CSR). The
  CSR figure is given three ways: the public call (vocabulary hashed, matrix validated and
  gathered: ``csr_api_s``), the gather and fingerprint of host arrays with the vocabulary
  already hashed (``csr_kernel_s``, the CPU baseline's ``csr_kernel_*`` work), and the
  accumulation on device-resident features alone (``csr_device_s``).
- ``cpu_baseline``: the CPU path, fairly, measured last: one single-threaded process per core
  (spawned: never forked from a process whose Numba threads have started), inputs loaded from
  ``.npy`` files, compiled code warmed in every worker before timing (a barrier waits for all
  of them), best of 2; and one process on all cores. Text as UTF-8 bytes (``Utf8Texts``, the
  CPU's fastest text input). CSR both as the kernel work (``csr_kernel_processes_s``) and as
  the public call on all cores (``csr_api_s``), the same work as the GPU's ``csr_api_s``.

``ratios`` (check.py) divides the stored CPU and GPU figures of the same work.
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from gpusimhash import fingerprint
from gpusimhash._cpu._fingerprint import fingerprint_batch as cpu_fingerprint_batch
from gpusimhash.features import FeatureBatch
from gpusimhash.hashing import feature_states
from gpusimhash.text import TextFeaturizer
from gpusimhash.utf8 import Utf8Texts

FEATURIZERS = {
    "word1-count": lambda: TextFeaturizer(),
    "word2-binary": lambda: TextFeaturizer("word", 2, "binary"),
    "char3-logtf": lambda: TextFeaturizer("char", 3, "logtf"),
    "word1-tfidf": lambda: TextFeaturizer(weighting="tfidf"),
}
INPUT_ARRAYS = ("text_data", "text_offsets", "indptr", "indices", "data", "states")

# ---- parity ------------------------------------------------------------------------------


def _record(side: str, what: str, bits: int, gpu: np.ndarray, cpu: np.ndarray) -> dict:
    same = gpu.shape == cpu.shape and bool((gpu == cpu).all())
    differing = int((gpu != cpu).any(axis=1).sum()) if gpu.shape == cpu.shape else -1
    print(f"parity {what} bits={bits}: {'identical' if same else f'{differing} rows differ'}")
    return {
        "side": side,
        "what": what,
        "bits": bits,
        "docs": int(cpu.shape[0]),
        "identical": same,
        "rows_differing": differing,
    }


def parity(side: Any, corpora: dict[str, list[str]], batches: list[FeatureBatch]) -> list[dict]:
    """``side``'s codes against the CPU's, exactly: text as str and UTF-8, feature batches."""
    records = []
    for corpus, texts in corpora.items():
        utf8 = Utf8Texts.from_strings(texts)
        for name, make in FEATURIZERS.items():
            made = make()
            if made.weighting == "tfidf":
                made.fit(texts[:10_000])
            batch = made.transform(texts)
            for bits in (64, 256):
                cpu = cpu_fingerprint_batch(batch, bits=bits, seed=bits)
                gpu = side.fingerprint_text(texts, made, bits, bits)
                records.append(_record(side.name, f"text/{corpus}/{name}", bits, gpu, cpu))
                gpu = side.fingerprint_text(utf8, made, bits, bits)
                records.append(_record(side.name, f"utf8/{corpus}/{name}", bits, gpu, cpu))
    for batch in batches:
        for bits in (64, 256, 1024):
            weighted = batch.weights is not None
            gpu = side.fingerprint_batch(batch, bits, 7)
            cpu = cpu_fingerprint_batch(batch, bits=bits, seed=7)
            records.append(_record(side.name, f"batch/weighted={weighted}", bits, gpu, cpu))
    # back to back on host input: the second call must not rewrite the first one's staging
    for batch, codes in zip(batches[:2], side.back_to_back(batches[:2], 64, 3), strict=True):
        cpu = cpu_fingerprint_batch(batch, bits=64, seed=3)
        records.append(_record(side.name, "back-to-back fingerprint_device", 64, codes, cpu))
    return records


def warm_up(texts: list[str], batches: list[FeatureBatch]) -> bool:
    """Compile every kernel (NVRTC) here, not in a timed section."""
    from gpusimhash import _gpu

    utf8 = Utf8Texts.from_strings(texts[:1000])
    for make in FEATURIZERS.values():
        featurizer = make()
        if featurizer.weighting == "tfidf":
            featurizer.fit(texts[:1000])
        _gpu.fingerprint_text(utf8, featurizer, bits=64, seed=0)
        _gpu.fingerprint_text(texts[:1000], featurizer, bits=256, seed=0)
    for batch in batches:
        for bits in (64, 256, 1024):
            _gpu.fingerprint_batch(batch, bits=bits, seed=0)
    return True


# ---- GPU benchmarks ----------------------------------------------------------------------


def gpu_seconds(function: Callable[[], Any], repeat: int = 10) -> float:
    """Median GPU time of ``function()`` (cupyx.profiler.benchmark, after warm-up)."""
    from cupyx.profiler import benchmark

    result = benchmark(function, n_repeat=repeat, n_warmup=2)
    return float(np.median(result.gpu_times[0]))


def wall_seconds(function: Callable[[], Any], repeat: int = 3) -> float:
    """Best wall seconds of ``function()``, the device synchronized around it."""
    import cupy

    best = float("inf")
    for _ in range(repeat):
        cupy.cuda.Device().synchronize()
        start = time.perf_counter()
        function()
        cupy.cuda.Device().synchronize()
        best = min(best, time.perf_counter() - start)
    return best


def copy_bandwidth() -> float:
    """Device-to-device copy bandwidth, bytes read plus written per second."""
    import cupy

    source = cupy.empty(2**31, dtype=cupy.uint8)  # contents do not matter to a copy
    target = cupy.empty_like(source)
    return 2 * source.nbytes / gpu_seconds(lambda: cupy.copyto(target, source), repeat=20)


def accumulate_bench(texts: Utf8Texts, bandwidth: float) -> list[dict]:
    """Accumulation kernels on device-resident features of the real documents."""
    import cupy

    from gpusimhash import _gpu

    engine = _gpu.device_engine()
    data, offsets = (cupy.asarray(a) for a in texts.compact())
    code_points, doc_starts, _ = engine.decode_utf8(data, offsets)
    longest = int(np.diff(texts.offsets).max()) + 1
    states, doc_offsets, _ = engine.text_batch(
        code_points, doc_starts, TextFeaturizer(), longest=longest
    )
    plan = engine.plan_tasks(doc_offsets)  # exact: the moved bytes count only real tasks
    n_docs, nnz = doc_offsets.size - 1, int(doc_offsets[-1])
    states = states[:nnz]
    largest = min(engine.task_size, int((doc_offsets[1:] - doc_offsets[:-1]).max()))
    weights = cupy.random.standard_normal(nnz)
    records = []
    for weighted in (False, True):
        for bits in (64, 256):
            used = weights if weighted else None

            def run(used: Any = used, bits: int = bits) -> Any:
                return engine.accumulate(
                    states, doc_offsets, used, plan, bits=bits, seed=1, largest_task=largest
                )

            seconds = gpu_seconds(run)
            moved = nnz * (4 + (8 if weighted else 0)) + (n_docs + 1) * 8 + n_docs * bits // 8
            moved += sum(int(a.nbytes) for a in plan.values())
            records.append(
                {
                    "docs": n_docs,
                    "features": nnz,
                    "bits": bits,
                    "weighted": weighted,
                    "ms": seconds * 1e3,
                    "features_per_s": nnz / seconds,
                    "bytes": moved,
                    "bytes_per_s": moved / seconds,
                    "fraction_of_copy_bandwidth": moved / seconds / bandwidth,
                }
            )
    return records


def device_text(short: Utf8Texts, long: Utf8Texts) -> list[dict]:
    """Device-resident UTF-8 to codes (decode, featurize, accumulate), 64-bit codes."""
    import cupy

    from gpusimhash import _gpu

    engine = _gpu.device_engine()
    records = []
    for label, texts in (("pypi summaries", short), ("about 1 KB", long)):
        data, offsets = (cupy.asarray(a) for a in texts.compact())
        longest = int(np.diff(texts.offsets).max()) + 1  # bytes bound the code points
        for name in ("word1-count", "char3-logtf"):
            featurizer = FEATURIZERS[name]()

            def run(
                data: Any = data,
                offsets: Any = offsets,
                featurizer: Any = featurizer,
                longest: int = longest,
            ) -> Any:
                # the pipeline's text compute: sizes from host bounds, no round trip
                code_points, doc_starts, _ = engine.decode_utf8(data, offsets)
                states, doc_offsets, weights = engine.text_batch(
                    code_points, doc_starts, featurizer, longest=longest
                )
                plan = engine.plan_tasks(doc_offsets, capacity=states.size)
                largest = min(engine.task_size, longest)
                return engine.accumulate(
                    states, doc_offsets, weights, plan, bits=64, seed=0, largest_task=largest
                )

            seconds = gpu_seconds(run, repeat=5)
            record = {
                "documents": label,
                "featurizer": name,
                "docs": len(texts),
                "bytes": texts.nbytes,
                "ms": seconds * 1e3,
                "docs_per_s": len(texts) / seconds,
                "bytes_per_s": texts.nbytes / seconds,
            }
            print(f"device text {record}", flush=True)
            records.append(record)
    return records


def csr_batch(arrays: dict[str, np.ndarray], start: int, stop: int) -> FeatureBatch:
    """The FeatureBatch of CSR rows ``start:stop``: states gathered from the hashed vocabulary."""
    indptr, indices, data, states = (arrays[k] for k in ("indptr", "indices", "data", "states"))
    first, last = indptr[start], indptr[stop]
    return FeatureBatch(
        states[indices[first:last]],
        (indptr[start : stop + 1] - first).astype(np.int64),
        data[first:last],
    )


def csr_arrays(csr: Any, vocabulary: list[str]) -> dict[str, np.ndarray]:
    """The CSR matrix's arrays and its hashed vocabulary (hashed once, here)."""
    return {
        "indptr": csr.indptr.astype(np.int64),
        "indices": csr.indices,
        "data": csr.data.astype(np.float64),
        "states": feature_states(vocabulary),
    }


def end_to_end_gpu(texts: list[str], utf8: Utf8Texts, csr: Any, vocabulary: list[str]) -> dict:
    """Host input to host codes on the GPU (64-bit codes); CSR three ways (module docstring)."""
    import cupy

    from gpusimhash import _gpu

    n = len(texts)
    timings: dict[str, Any] = {"docs": n}
    timings["utf8_s"] = wall_seconds(lambda: fingerprint(utf8, bits=64, device="gpu"))
    timings["str_s"] = wall_seconds(lambda: fingerprint(texts, bits=64, device="gpu"))
    char3 = TextFeaturizer("char", 3)
    timings["utf8_char3_s"] = wall_seconds(
        lambda: fingerprint(utf8, bits=64, device="gpu", featurizer=char3)
    )
    timings["csr_api_s"] = wall_seconds(
        lambda: fingerprint(csr, vocabulary=vocabulary, bits=64, device="gpu", batch_size=n)
    )
    arrays = csr_arrays(csr, vocabulary)
    timings["csr_kernel_s"] = wall_seconds(
        lambda: _gpu.fingerprint_batch(csr_batch(arrays, 0, n), bits=64, seed=0).get()
    )
    batch = csr_batch(arrays, 0, n)
    engine = _gpu.device_engine()
    states, offsets, weights = (
        cupy.asarray(a) for a in (batch.states, batch.offsets, batch.weights)
    )
    plan = engine.plan_tasks(offsets, capacity=int(states.size))
    timings["csr_device_s"] = gpu_seconds(
        lambda: engine.accumulate(states, offsets, weights, plan, bits=64, seed=0), repeat=5
    )
    for key in [k for k in timings if k.endswith("_s")]:
        timings[key.removesuffix("_s") + "_docs_per_s"] = n / timings[key]
    timings["csr_host_preparation_s"] = timings["csr_api_s"] - timings["csr_kernel_s"]
    print(f"end to end (gpu) {timings}", flush=True)
    return timings


def long_documents(lines: list[str], n_docs: int, size: int = 1024) -> list[str]:
    """Documents of about ``size`` characters, made of consecutive corpus lines."""
    documents, current, length = [], [], 0
    for line in itertools.cycle(lines):
        current.append(line)
        length += len(line) + 1
        if length >= size:
            documents.append(" ".join(current))
            current, length = [], 0
            if len(documents) == n_docs:
                break
    return documents


# ---- the CPU baseline (spawned workers) --------------------------------------------------

_WORKER: dict[str, Any] = {}


def _worker_start(folder: str, barrier: Any) -> None:
    """Load the inputs, go single-threaded, warm the timed jobs, wait for the others."""
    os.environ["NUMBA_NUM_THREADS"] = "1"  # the cap of the compiled loops' threads
    arrays = {name: np.load(Path(folder) / f"{name}.npy") for name in INPUT_ARRAYS}
    _WORKER.update(arrays, texts=Utf8Texts(arrays["text_data"], arrays["text_offsets"]))
    _text_job((0, min(100, len(_WORKER["texts"]))))
    _csr_job((0, min(100, arrays["indptr"].size - 1)))
    barrier.wait(timeout=300)


def _ready(_: int) -> bool:
    return True


def _text_job(bounds: tuple[int, int]) -> int:
    start, stop = bounds
    codes = fingerprint(_WORKER["texts"][start:stop], bits=64, device="cpu", batch_size=1 << 20)
    return int(codes.shape[0])


def _csr_job(bounds: tuple[int, int]) -> int:
    codes = cpu_fingerprint_batch(csr_batch(_WORKER, *bounds), bits=64, seed=0)
    return int(codes.shape[0])


def _ranges(n: int, pieces: int) -> list[tuple[int, int]]:
    cuts = np.linspace(0, n, pieces + 1).astype(int)
    return [(int(a), int(b)) for a, b in itertools.pairwise(cuts) if b > a]


def cpu_baseline(
    texts: Utf8Texts, csr: Any, vocabulary: list[str], workers: int, limit_s: float
) -> dict:
    """Seconds of the CPU path over all documents: a process per core, and one process.

    Every wait on the workers is bounded by ``limit_s`` (a worker that dies in its start is
    restarted by the pool, so an unbounded wait could last for ever).
    """
    n = len(texts)
    result: dict[str, Any] = {"workers": workers, "docs": n, "start_method": "spawn"}
    deadline = time.perf_counter() + limit_s
    context = multiprocessing.get_context("spawn")
    compact = texts.compact()
    arrays = {"text_data": compact[0], "text_offsets": compact[1], **csr_arrays(csr, vocabulary)}
    with tempfile.TemporaryDirectory(prefix="gsh-baseline-") as folder:
        for name in INPUT_ARRAYS:
            np.save(Path(folder) / f"{name}.npy", arrays[name])
        barrier = context.Barrier(workers)
        start = time.perf_counter()
        with context.Pool(workers, _worker_start, (folder, barrier)) as pool:

            def wait(job: Callable[[Any], int], items: list[Any]) -> list[int]:
                left = deadline - time.perf_counter()
                return pool.map_async(job, items, chunksize=1).get(timeout=max(left, 1.0))

            wait(_ready, list(range(workers)))  # every worker loaded, warmed, at the barrier
            result["workers_ready_s"] = time.perf_counter() - start
            for name, job in (("text", _text_job), ("csr_kernel", _csr_job)):
                best = float("inf")
                for _ in range(2):
                    began = time.perf_counter()
                    done = wait(job, _ranges(n, workers * 4))
                    best = min(best, time.perf_counter() - began)
                    if sum(done) != n:
                        raise RuntimeError(f"{name} jobs returned {sum(done)} codes, not {n}")
                result[f"{name}_processes_s"] = best
    fingerprint(texts[:1000], bits=64, device="cpu")  # warm this process too
    began = time.perf_counter()
    fingerprint(texts, bits=64, device="cpu", batch_size=131_072)
    result["text_one_process_s"] = time.perf_counter() - began
    fingerprint(csr[:1000], vocabulary=vocabulary, bits=64, device="cpu")
    began = time.perf_counter()
    fingerprint(csr, vocabulary=vocabulary, bits=64, device="cpu", batch_size=n)
    result["csr_api_s"] = time.perf_counter() - began
    result["text_s"] = min(result["text_processes_s"], result["text_one_process_s"])
    result["csr_kernel_s"] = result["csr_kernel_processes_s"]
    for name in ("text", "csr_kernel", "csr_api"):
        result[f"{name}_docs_per_s"] = n / result[f"{name}_s"]
    print(f"CPU baseline: {result}", flush=True)
    return result

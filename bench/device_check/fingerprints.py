"""The fingerprint part of the device check (issue 12), as sections for check.py's Report.

Every figure comes from this one run on this one machine:

- ``cpu_baseline``: the CPU path, fairly: compiled code warmed in every worker before timing,
  one single-threaded process per core (no oversubscription), the inputs inherited through fork
  (nothing pickled but the ranges and the codes), the vocabulary hashed once; and one process
  with all cores. Text comes as UTF-8 bytes (`Utf8Texts`: the CPU's fastest text input, the
  layout of an Arrow string column); CSR as its arrays.
- ``parity``: GPU codes equal to CPU codes, exactly, on random and real documents, from str,
  from UTF-8 and from feature batches, plus two back-to-back ``fingerprint_device`` calls on
  host input (the pinned-buffer race of the review).
- ``copy_bandwidth_bytes_per_s`` and ``accumulate``: the accumulation kernels on
  device-resident features, as a fraction of the device-to-device copy bandwidth.
- ``device_text``: device-resident UTF-8 to codes: PyPI summaries (goal: 50M documents/s) and
  documents of about 1 KB (goal: 10 GB/s of text).
- ``end_to_end``: host input to host codes (UTF-8 bytes, str list, CSR), against the CPU
  baseline (goals: 5M documents/s from UTF-8, 10x the CPU).
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
import time
from collections.abc import Callable, Iterator
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

# Inputs of the CPU workers, set before the fork pool starts (inherited, never pickled).
_SHARED: dict[str, Any] = {}


def _cpu_worker_start() -> None:
    """Make a worker single-threaded and compile (warm) what the timed jobs run."""
    import numba

    numba.set_num_threads(1)
    texts: Utf8Texts = _SHARED["texts"]
    fingerprint(texts[:100], bits=64, device="cpu")
    _csr_job((0, 100))


def _text_job(bounds: tuple[int, int]) -> np.ndarray:
    start, stop = bounds
    return fingerprint(_SHARED["texts"][start:stop], bits=64, device="cpu", batch_size=1 << 20)


def _csr_job(bounds: tuple[int, int]) -> np.ndarray:
    start, stop = bounds
    indptr, indices, data, states = (_SHARED[k] for k in ("indptr", "indices", "data", "states"))
    first, last = indptr[start], indptr[stop]
    batch = FeatureBatch(
        states[indices[first:last]],
        (indptr[start : stop + 1] - first).astype(np.int64),
        data[first:last],
    )
    return cpu_fingerprint_batch(batch, bits=64, seed=0)


def _ranges(n: int, pieces: int) -> list[tuple[int, int]]:
    cuts = np.linspace(0, n, pieces + 1).astype(int)
    return [(int(a), int(b)) for a, b in itertools.pairwise(cuts) if b > a]


def cpu_baseline(texts: Utf8Texts, csr: Any, vocabulary: list[str], workers: int) -> dict:
    """Seconds of the CPU path over all documents: process per core, and one process."""
    _SHARED.update(
        texts=texts,
        indptr=csr.indptr.astype(np.int64),
        indices=csr.indices,
        data=csr.data.astype(np.float64),
        states=feature_states(vocabulary),  # hashed once, here
    )
    n = len(texts)
    result: dict[str, Any] = {"workers": workers, "docs": n}
    context = multiprocessing.get_context("fork")
    with context.Pool(workers, initializer=_cpu_worker_start) as pool:
        pool.map(abs, range(workers * 4))  # every worker started and warmed
        for name, job in (("text", _text_job), ("csr", _csr_job)):
            best = float("inf")
            for _ in range(2):
                start = time.perf_counter()
                pool.map(job, _ranges(n, workers * 4), chunksize=1)
                best = min(best, time.perf_counter() - start)
            result[f"{name}_processes_s"] = best
    fingerprint(texts[:1000], bits=64, device="cpu")  # warm this process too
    start = time.perf_counter()
    fingerprint(texts, bits=64, device="cpu", batch_size=131_072)
    result["text_one_process_s"] = time.perf_counter() - start
    result["text_s"] = min(result["text_processes_s"], result["text_one_process_s"])
    result["csr_s"] = result["csr_processes_s"]
    for name in ("text", "csr"):
        result[f"{name}_docs_per_s"] = n / result[f"{name}_s"]
    print(f"CPU baseline: {result}", flush=True)
    return result


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


def _record(what: str, bits: int, gpu: np.ndarray, cpu: np.ndarray) -> dict:
    same = gpu.shape == cpu.shape and bool((gpu == cpu).all())
    differing = int((gpu != cpu).any(axis=1).sum()) if gpu.shape == cpu.shape else -1
    print(f"parity {what} bits={bits}: {'identical' if same else f'{differing} rows differ'}")
    return {
        "what": what,
        "bits": bits,
        "docs": int(cpu.shape[0]),
        "identical": same,
        "rows_differing": differing,
    }


def parity(corpora: dict[str, list[str]], batches: list[FeatureBatch]) -> list[dict]:
    """GPU against CPU codes, exactly: text as str and as UTF-8, and feature batches."""
    from gpusimhash import _gpu, fingerprint_device

    records = []
    for corpus, texts in corpora.items():
        utf8 = Utf8Texts.from_strings(texts)
        for name, make in FEATURIZERS.items():
            made = make()
            if made.weighting == "tfidf":
                made.fit(texts[:10_000])
            for bits in (64, 256):
                cpu = cpu_fingerprint_batch(made.transform(texts), bits=bits, seed=bits)
                gpu = _gpu.fingerprint_text(texts, made, bits=bits, seed=bits).get()
                records.append(_record(f"text/{corpus}/{name}", bits, gpu, cpu))
                gpu = _gpu.fingerprint_text(utf8, made, bits=bits, seed=bits).get()
                records.append(_record(f"utf8/{corpus}/{name}", bits, gpu, cpu))
    for batch in batches:
        for bits in (64, 256, 1024):
            weighted = batch.weights is not None
            gpu = _gpu.fingerprint_batch(batch, bits=bits, seed=7).get()
            cpu = cpu_fingerprint_batch(batch, bits=bits, seed=7)
            records.append(_record(f"batch/weighted={weighted}", bits, gpu, cpu))
    # back to back on host input: the second call must not rewrite the first one's staging
    first, second = (fingerprint_device(batch, bits=64, seed=3) for batch in batches[:2])
    for batch, codes in zip(batches[:2], (first, second), strict=True):
        cpu = cpu_fingerprint_batch(batch, bits=64, seed=3)
        records.append(_record("back-to-back fingerprint_device", 64, codes.get(), cpu))
    return records


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


def end_to_end(
    texts: list[str], utf8: Utf8Texts, csr: Any, vocabulary: list[str], cpu: dict | None
) -> dict:
    """Host input to host codes on the GPU (64-bit codes), and the ratio to the CPU baseline."""
    n = len(texts)
    timings: dict[str, float] = {"docs": n}
    timings["gpu_utf8_s"] = wall_seconds(lambda: fingerprint(utf8, bits=64, device="gpu"))
    timings["gpu_str_s"] = wall_seconds(lambda: fingerprint(texts, bits=64, device="gpu"))
    char3 = TextFeaturizer("char", 3)
    timings["gpu_utf8_char3_s"] = wall_seconds(
        lambda: fingerprint(utf8, bits=64, device="gpu", featurizer=char3)
    )
    timings["gpu_csr_s"] = wall_seconds(
        lambda: fingerprint(csr, vocabulary=vocabulary, bits=64, device="gpu", batch_size=n)
    )
    for key in [k for k in timings if k.endswith("_s")]:
        timings[key.removesuffix("_s") + "_docs_per_s"] = n / timings[key]
    if cpu:
        timings["gpu_over_cpu_utf8"] = cpu["text_s"] / timings["gpu_utf8_s"]
        timings["gpu_over_cpu_csr"] = cpu["csr_s"] / timings["gpu_csr_s"]
    print(f"end to end {timings}", flush=True)
    return timings


def long_documents(lines: list[str], n_docs: int, size: int = 1024) -> list[str]:
    """Documents of about ``size`` characters, made of consecutive corpus lines."""
    documents, current, length = [], [], 0
    for line in lines:
        current.append(line)
        length += len(line) + 1
        if length >= size:
            documents.append(" ".join(current))
            current, length = [], 0
            if len(documents) == n_docs:
                break
    return documents


def sections(
    real: list[str],
    csr: Any,
    vocabulary: list[str],
    *,
    workers: int,
    parity_docs: int,
    cpu_only: bool,
    random_texts: Callable[[int], list[str]],
    random_batch: Callable[[int, bool], FeatureBatch],
) -> Iterator[tuple[str, Callable[[], Any]]]:
    """``(name, function)`` of each section, in order; later ones use earlier results."""
    utf8 = Utf8Texts.from_strings(real)
    results: dict[str, Any] = {}

    def cpu() -> dict:
        results["cpu"] = cpu_baseline(utf8, csr, vocabulary, workers)
        return results["cpu"]

    yield "cpu_baseline", cpu
    if cpu_only:
        return
    from gpusimhash import _gpu

    def warm_up() -> bool:  # NVRTC compiles every kernel here, not in a timed section
        _gpu.fingerprint_text(utf8[:1000], TextFeaturizer(), bits=64, seed=0)
        _gpu.fingerprint_text(real[:1000], TextFeaturizer("char", 3, "logtf"), bits=64, seed=0)
        for weighted in (False, True):
            _gpu.fingerprint_batch(random_batch(1000, weighted), bits=64, seed=0)
        return True

    yield "fingerprint_warm_up", warm_up

    def parity_section() -> list[dict]:
        corpora = {"random": random_texts(parity_docs), "real": real[:parity_docs]}
        batches = [random_batch(parity_docs, False), random_batch(parity_docs, True)]
        return parity(corpora, batches)

    yield "parity", parity_section

    def bandwidth() -> float:
        results["bandwidth"] = copy_bandwidth()
        return results["bandwidth"]

    yield "copy_bandwidth_bytes_per_s", bandwidth
    yield "accumulate", lambda: accumulate_bench(utf8, results["bandwidth"])
    long = Utf8Texts.from_strings(long_documents(real, 200_000))
    yield "device_text", lambda: device_text(utf8, long)
    yield "end_to_end", lambda: end_to_end(real, utf8, csr, vocabulary, results.get("cpu"))


def cpu_count() -> int:
    """Cores this process may use."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1

"""GPU fingerprinting: the CuPy layer over the xp-generic engine and pipeline.

``engine.Engine`` is the work and ``pipeline`` the batching, staging and overlap, both written
once over an array module (the tests drive them with NumPy and the emulated kernels);
``kernels`` finds, compiles and launches the CUDA sources. This layer adds only what needs a
device: the engine with its Unicode tables uploaded once, the staging (two persistent pinned
host buffers and device buffers, one copy stream, events), and batch budgets from free memory.

Nothing here imports CuPy at import time: ``_backend.require_gpu()`` hands it over on first use.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from gpusimhash import _backend
from gpusimhash._gpu import pipeline
from gpusimhash._gpu.engine import Engine
from gpusimhash._gpu.kernels import Launcher
from gpusimhash.features import FeatureBatch
from gpusimhash.text import TextFeaturizer, check_texts
from gpusimhash.unicode_tables import load_tables
from gpusimhash.utf8 import Utf8Texts

# Share of the free device memory one batch may use.
MEMORY_FRACTION = 0.5


@functools.cache
def device_engine() -> Engine:
    """Return the process's GPU engine, with the Unicode tables uploaded once."""
    cupy = _backend.require_gpu()
    tables = load_tables()
    device_tables = (
        cupy.asarray(tables.word.astype(np.uint8)),
        cupy.asarray(tables.lower.astype(np.uint32)),
    )
    return Engine(cupy, Launcher(), device_tables)


class _Staging:
    """`pipeline.Staging` on CuPy: pinned host buffers, device buffers, a copy stream, events."""

    def __init__(self) -> None:
        self.cupy = _backend.require_gpu()
        self.stream = self.cupy.cuda.Stream(non_blocking=True)
        self.host: list[np.ndarray] = [np.zeros(0, np.uint8)] * pipeline.SLOTS
        self.device: list[Any] = [self.cupy.zeros(0, self.cupy.uint8)] * pipeline.SLOTS

    def host_buffer(self, slot: int, nbytes: int) -> np.ndarray:
        if self.host[slot].size < nbytes:  # the pipeline synchronized the slot's last copy
            import cupyx  # ships with CuPy; reached only once a GPU is known usable

            self.host[slot] = cupyx.empty_pinned(max(nbytes, 2 * self.host[slot].size), np.uint8)
        return self.host[slot]

    def device_buffer(self, slot: int, nbytes: int) -> Any:
        if self.device[slot].size < nbytes:  # allocated on the compute stream, ordered after it
            self.device[slot] = self.cupy.empty(max(nbytes, 2 * self.device[slot].size), np.uint8)
        return self.device[slot]

    def copy(self, slot: int, nbytes: int) -> Any:
        if nbytes:
            self.device[slot][:nbytes].set(self.host[slot][:nbytes], stream=self.stream)
        return self.stream.record()

    def record_compute(self) -> Any:
        return self.cupy.cuda.get_current_stream().record()

    def compute_waits(self, event: Any) -> None:
        self.cupy.cuda.get_current_stream().wait_event(event)

    def copy_waits(self, event: Any) -> None:
        self.stream.wait_event(event)

    def synchronize(self, event: Any) -> None:
        event.synchronize()


@functools.cache
def device_pipeline() -> pipeline.Pipeline:
    """Return the process's pipeline: persistent staging buffers and one copy stream."""
    return pipeline.Pipeline(_Staging())


def _memory_budget(bytes_per_item: int) -> int:
    """Items of ``bytes_per_item`` that fit in the budgeted share of free device memory."""
    cupy = _backend.require_gpu()
    free, _ = cupy.cuda.runtime.memGetInfo()
    free += cupy.get_default_memory_pool().free_bytes()
    return max(1, int(free * MEMORY_FRACTION) // bytes_per_item)


def _codes(results: list[Any], bits: int) -> Any:
    """One device array of the jobs' codes."""
    cupy = _backend.require_gpu()
    if not results:
        return cupy.zeros((0, bits // 8), dtype=cupy.uint8)
    return results[0] if len(results) == 1 else cupy.concatenate(results)


def jobs(
    kind: str, first: int, batch: Any, featurizer: TextFeaturizer, *, bits: int, seed: int
) -> Iterator[pipeline.Job]:
    """Return the pipeline jobs of one input batch (``"text"``, ``"utf8"`` or ``"vectors"``)."""
    engine = device_engine()
    if kind == "vectors":
        budget = _memory_budget(pipeline.BYTES_PER_ENTRY)
        return pipeline.feature_jobs(engine, batch, bits=bits, seed=seed, budget=budget)
    featurizer.weigh(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.uint32))  # fitted?
    budget = _memory_budget(pipeline.BYTES_PER_CODE_POINT)
    if kind == "utf8":
        return pipeline.utf8_jobs(
            engine, batch, featurizer, bits=bits, seed=seed, budget=budget, first_index=first
        )
    check_texts(batch, first)
    return pipeline.text_jobs(engine, batch, featurizer, bits=bits, seed=seed, budget=budget)


def fingerprint_batches(
    batches: Iterable[tuple[str, int, Any]], featurizer: TextFeaturizer, *, bits: int, seed: int
) -> Any:
    """Fingerprint a stream of input batches through one pipeline; codes stay on the device.

    Parameters
    ----------
    batches : iterable of (kind, first_index, batch)
        ``"vectors"`` (FeatureBatch), ``"text"`` (sequence of str) or ``"utf8"`` (Utf8Texts).
    featurizer : TextFeaturizer
        For text (fitted, for tfidf).
    bits, seed : int
        Validated fingerprint length and seed.

    Returns
    -------
    codes : cupy.ndarray, shape (n_docs, bits // 8), dtype uint8
        Bit-identical to the CPU engine's.
    """
    device_engine()  # made here: the jobs are prepared on the pipeline's worker thread
    stream = (
        job
        for kind, first, batch in batches
        for job in jobs(kind, first, batch, featurizer, bits=bits, seed=seed)
    )
    return _codes(device_pipeline().run(stream), bits)


def fingerprint_batch(batch: FeatureBatch, *, bits: int, seed: int) -> Any:
    """Fingerprint a host FeatureBatch on the GPU (codes stay there)."""
    return fingerprint_batches([("vectors", 0, batch)], TextFeaturizer(), bits=bits, seed=seed)


def fingerprint_text(
    texts: Sequence[str] | Utf8Texts,
    featurizer: TextFeaturizer,
    *,
    bits: int,
    seed: int,
    first_index: int = 0,
) -> Any:
    """Featurize and fingerprint raw texts (str or UTF-8) on the GPU (codes stay there).

    Raises
    ------
    TypeError
        A document that is not a str.
    ValueError
        ``tfidf`` weighting before ``fit``; bytes that are not valid UTF-8.
    """
    kind = "utf8" if isinstance(texts, Utf8Texts) else "text"
    return fingerprint_batches([(kind, first_index, texts)], featurizer, bits=bits, seed=seed)

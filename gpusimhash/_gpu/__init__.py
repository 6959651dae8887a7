"""GPU fingerprinting: the CuPy layer over the xp-generic engine.

``engine.Engine`` is the work, written once over an array module and a kernel launcher;
``kernels`` finds, compiles and launches the CUDA sources. This layer adds what only a device
has: compiled modules, Unicode tables uploaded once, batches sized to free device
memory, and pinned, double-buffered host-to-device copies on their own stream that overlap the
previous batch's kernels.

Nothing here imports CuPy at import time: ``_backend.require_gpu()`` hands it over on first use.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from gpusimhash import _backend
from gpusimhash._gpu.engine import Engine, encode_texts, split_documents
from gpusimhash._gpu.kernels import Launcher
from gpusimhash.features import FeatureBatch
from gpusimhash.text import TextFeaturizer, check_texts
from gpusimhash.unicode_tables import load_tables

# Device bytes budgeted per entry (accumulation) and per code point (text), temporaries included.
BYTES_PER_ENTRY = 64
BYTES_PER_CODE_POINT = 160
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


def _memory_budget(bytes_per_item: int) -> int:
    """Items of ``bytes_per_item`` that fit in the budgeted share of free device memory."""
    cupy = _backend.require_gpu()
    free, _ = cupy.cuda.runtime.memGetInfo()
    free += cupy.get_default_memory_pool().free_bytes()
    return max(1, int(free * MEMORY_FRACTION) // bytes_per_item)


class _Uploader:
    """Host-to-device copies through pinned buffers on a copy stream, double-buffered.

    ``upload`` returns at once: the copy runs on its own stream while the compute stream works
    on the previous batch, and the compute stream waits for it only where the data is used.
    The copy stream first waits for the compute work enqueued so far, so device memory freed by
    earlier batches is never overwritten while a kernel still reads it.
    """

    def __init__(self) -> None:
        self.cupy = _backend.require_gpu()
        self.stream = self.cupy.cuda.Stream(non_blocking=True)
        self.pending: list[tuple[Any, list[np.ndarray]]] = []

    def upload(self, arrays: Sequence[np.ndarray | None]) -> tuple[list[Any], Any]:
        """Start copying host arrays (None passes through); return device arrays and an event."""
        import cupyx  # the CuPy extras ship with CuPy; only reached once a GPU is known usable

        cupy = self.cupy
        while len(self.pending) >= 2:  # keep two batches' pinned buffers alive at most
            event, _ = self.pending.pop(0)
            event.synchronize()
        self.stream.wait_event(cupy.cuda.get_current_stream().record())
        pinned_buffers: list[np.ndarray] = []
        device_arrays: list[Any] = []
        with self.stream:
            for array in arrays:
                if array is None:
                    device_arrays.append(None)
                    continue
                pinned = cupyx.empty_pinned(array.shape, array.dtype)
                np.copyto(pinned, array)
                device = cupy.empty(array.shape, array.dtype)
                device.set(pinned, stream=self.stream)
                pinned_buffers.append(pinned)
                device_arrays.append(device)
        event = self.stream.record()
        self.pending.append((event, pinned_buffers))
        return device_arrays, event


def _pipelined(
    ranges: list[tuple[int, int]],
    prepare: Callable[[int, int], list[np.ndarray | None]],
    compute: Callable[[list[Any]], Any],
    codes: Any,
) -> Any:
    """Run ``compute`` on each range's uploaded arrays while the next range is copied."""
    cupy = _backend.require_gpu()
    uploader = _Uploader()
    compute_stream = cupy.cuda.get_current_stream()
    if not ranges:
        return codes
    upcoming = uploader.upload(prepare(*ranges[0]))
    for index, (start, stop) in enumerate(ranges):
        arrays, event = upcoming
        if index + 1 < len(ranges):
            upcoming = uploader.upload(prepare(*ranges[index + 1]))
        compute_stream.wait_event(event)
        codes[start:stop] = compute(arrays)
    return codes


def fingerprint_batch(batch: FeatureBatch, *, bits: int, seed: int) -> Any:
    """Fingerprint a host FeatureBatch on the GPU.

    Parameters
    ----------
    batch : FeatureBatch
        Validated documents (NumPy arrays).
    bits, seed : int
        Validated fingerprint length and seed.

    Returns
    -------
    codes : cupy.ndarray, shape (batch.n_docs, bits // 8), dtype uint8
        Bit-identical to ``gpusimhash._cpu.fingerprint_batch``.
    """
    cupy = _backend.require_gpu()
    engine = device_engine()
    codes = cupy.zeros((batch.n_docs, bits // 8), dtype=cupy.uint8)
    offsets = np.asarray(batch.offsets, dtype=np.int64)
    budget = _memory_budget(BYTES_PER_ENTRY)
    ranges = list(split_documents(np.diff(offsets), budget))

    def prepare(start: int, stop: int) -> list[np.ndarray | None]:
        first, last = int(offsets[start]), int(offsets[stop])
        local = offsets[start : stop + 1] - first
        plan = engine.plan_tasks(local)  # planned on the host: no device round trip
        weights = None if batch.weights is None else batch.weights[first:last]
        return [batch.states[first:last], local, weights, *plan.values()]

    def compute(arrays: list[Any]) -> Any:
        states, local, weights, *plan = arrays
        return engine.accumulate(
            states, local, weights, dict(zip(_PLAN_KEYS, plan, strict=True)), bits=bits, seed=seed
        )

    return _pipelined(ranges, prepare, compute, codes)


_PLAN_KEYS = ("task_docs", "task_starts", "partial_rows", "split_docs")


def fingerprint_text(
    texts: Sequence[str], featurizer: TextFeaturizer, *, bits: int, seed: int, first_index: int = 0
) -> Any:
    """Featurize and fingerprint raw texts on the GPU.

    Parameters
    ----------
    texts : sequence of str
        The documents.
    featurizer : TextFeaturizer
        How text becomes features (fitted, for tfidf).
    bits, seed : int
        Validated fingerprint length and seed.
    first_index : int
        Position of ``texts[0]`` in the caller's input, for error messages.

    Returns
    -------
    codes : cupy.ndarray, shape (len(texts), bits // 8), dtype uint8
        Bit-identical to ``_cpu.fingerprint_batch(featurizer.transform(texts), ...)``.

    Raises
    ------
    TypeError
        A document that is not a str.
    ValueError
        ``tfidf`` weighting before ``fit``.
    """
    cupy = _backend.require_gpu()
    check_texts(texts, first_index)
    featurizer.weigh(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.uint32))  # fitted?
    engine = device_engine()
    codes = cupy.zeros((len(texts), bits // 8), dtype=cupy.uint8)
    lengths = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
    ranges = list(split_documents(lengths + 1, _memory_budget(BYTES_PER_CODE_POINT)))

    def prepare(start: int, stop: int) -> list[np.ndarray | None]:
        return list(encode_texts(texts[start:stop], first_index + start))

    def compute(arrays: list[Any]) -> Any:
        code_points, doc_starts = arrays
        states, offsets, weights = engine.text_batch(code_points, doc_starts, featurizer)
        plan = engine.plan_tasks(offsets)
        return engine.accumulate(states, offsets, weights, plan, bits=bits, seed=seed)

    return _pipelined(ranges, prepare, compute, codes)

"""GPU fingerprinting: finds and compiles kernels/*.cu, owns launch configuration, launches.

The work is written once against an array module ``xp`` and a kernel launcher (class
``Engine``): on a GPU, ``xp`` is CuPy and the launcher runs the compiled kernels; in the tests,
``xp`` is NumPy and the launcher runs the same kernel source compiled by g++ (tests/cuda_emu),
so the CPU checks everything here except CuPy itself. The CuPy layer below the engine adds what
only a device has: compiled modules, Unicode tables uploaded once, batches sized to free device
memory, and pinned, double-buffered host-to-device copies on their own stream that overlap the
previous batch's kernels.

Nothing here imports CuPy at import time: ``_backend.require_gpu()`` hands it over on first use.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from gpusimhash import _backend, _validate
from gpusimhash.features import FeatureBatch
from gpusimhash.text import TextFeaturizer, check_texts
from gpusimhash.unicode_tables import load_tables

# Every kernel file and the kernel names (template instantiations included) compiled from it.
KERNELS = {
    "simhash.cu": (
        "simhash_max_abs",
        "simhash_accumulate<true>",
        "simhash_accumulate<false>",
        "simhash_pack_partials",
    ),
    "text.cu": ("text_classify", "text_span_states"),
}
COMMON_HEADER = "common.cuh"
# fmad=false: no multiply-add contraction anywhere, so device float math is plain IEEE.
COMPILE_OPTIONS = ("--std=c++17", "--fmad=false")
THREADS_PER_BLOCK = 256
BLOCKS_PER_SM = 32
# Entries per accumulation task: longer documents are split and their slot sums merged.
TASK_SIZE = 1024
# Bit-sliced counter planes of the unit-weight kernel (GSH_COUNT_PLANES in simhash.cu): a task's
# entry count must fit in them.
COUNT_PLANES = 11
# Flags written by text_classify.
FLAG_WORD, FLAG_KEEP, FLAG_TOKEN_START = 1, 2, 4
# Device bytes budgeted per entry (accumulation) and per code point (text), temporaries included.
BYTES_PER_ENTRY = 64
BYTES_PER_CODE_POINT = 160
# Share of the free device memory one batch may use.
MEMORY_FRACTION = 0.5

Launch = Callable[[str, int, tuple], None]


# ---- kernel source -------------------------------------------------------------------------


def kernel_dir() -> Path:
    """Return the folder holding the kernel sources.

    Returns
    -------
    Path
        ``gpusimhash/kernels`` in an installed wheel, else ``kernels/`` of the checkout.

    Raises
    ------
    FileNotFoundError
        Neither folder holds the kernels.
    """
    package = Path(__file__).resolve().parent
    candidates = (package / "kernels", package.parent / "kernels")
    for folder in candidates:
        if (folder / COMMON_HEADER).is_file():
            return folder
    raise FileNotFoundError(
        f"CUDA kernel sources not found in {candidates[0]} (wheel) or {candidates[1]} (checkout)"
    )


def kernel_source(filename: str) -> str:
    """Return the source compiled for one kernel file: ``common.cuh`` then the file.

    Each part starts with a ``#line`` marker naming its file, so compiler messages point at the
    right file and line. The text is the compile cache's key: editing either file recompiles.

    Parameters
    ----------
    filename : str
        A key of ``KERNELS``.

    Returns
    -------
    str
    """
    folder = kernel_dir()
    parts = []
    for path in (folder / COMMON_HEADER, folder / filename):
        parts.append(f'#line 1 "{path}"\n{path.read_text(encoding="utf-8")}\n')
    return "".join(parts)


@functools.cache
def _compiled(source: str, names: tuple[str, ...]) -> Any:
    """Compile one kernel file with CuPy (once per process and source text)."""
    cupy = _backend.require_gpu()
    return cupy.RawModule(code=source, options=COMPILE_OPTIONS, name_expressions=names)


@functools.cache
def _kernel(name: str) -> Any:
    """Return the compiled kernel ``name`` (a key of some ``KERNELS`` entry)."""
    for filename, names in KERNELS.items():
        if name in names:
            return _compiled(kernel_source(filename), names).get_function(name)
    raise KeyError(f"no kernel named {name!r}")


def grid_size(n_items: int, threads_per_block: int, max_blocks: int) -> int:
    """Blocks for ``n_items`` threads' worth of work (kernels loop over the rest).

    Parameters
    ----------
    n_items : int
        Work items, at least 1.
    threads_per_block : int
        Block size.
    max_blocks : int
        Cap on the grid (the kernels use grid-stride loops).

    Returns
    -------
    int
    """
    return max(1, min(-(-n_items // threads_per_block), max_blocks))


# ---- the engine: xp-generic orchestration ----------------------------------------------------


def _exclusive_cumsum(xp: ModuleType, counts: Any) -> Any:
    """Return the starts of consecutive groups of the given sizes (int64)."""
    starts = xp.zeros(counts.size, dtype=xp.int64)
    if counts.size > 1:
        starts[1:] = xp.cumsum(counts[:-1])
    return starts


def _group_of(xp: ModuleType, counts: Any, total: int) -> Any:
    """For ``total`` items in consecutive groups of ``counts`` sizes, each item's group."""
    ends = xp.cumsum(counts)
    return xp.searchsorted(ends, xp.arange(total, dtype=xp.int64), side="right")


def _offsets_of(xp: ModuleType, doc: Any, n_docs: int) -> Any:
    """CSR row starts of items sorted by document."""
    return xp.searchsorted(doc, xp.arange(n_docs + 1, dtype=xp.int64), side="left")


def _windows(xp: ModuleType, first: Any, counts: Any, n: int) -> tuple[Any, Any, Any]:
    """Windows of ``n`` items per document, or one window over a shorter non-empty one.

    The same windows as ``gpusimhash.text``: each window's first item, length and document.
    """
    per_doc = xp.where(counts >= n, counts - n + 1, xp.minimum(counts, 1))
    total = int(per_doc.sum())
    doc = _group_of(xp, per_doc, total)
    rank = xp.arange(total, dtype=xp.int64) - _exclusive_cumsum(xp, per_doc)[doc]
    return first[doc] + rank, xp.minimum(counts, n)[doc], doc


class Engine:
    """Fingerprinting written once over an array module and a kernel launcher.

    Parameters
    ----------
    xp : module
        ``cupy`` on a GPU; ``numpy`` with an emulated launcher in the tests.
    launch : callable
        ``launch(kernel_name, n_items, args)`` runs a kernel over at least one thread per item
        (any grid: the kernels loop); never called with ``n_items == 0``.
    tables : tuple of arrays
        The Unicode tables as ``xp`` arrays: ``word`` (uint8) and ``lower`` (uint32).
    task_size : int
        Entries per accumulation task.
    """

    def __init__(
        self, xp: ModuleType, launch: Launch, tables: tuple[Any, Any], *, task_size: int = TASK_SIZE
    ) -> None:
        if not 1 <= task_size < 2**COUNT_PLANES:
            raise ValueError(f"task_size must be in [1, {2**COUNT_PLANES}), got {task_size}")
        self.xp = xp
        self.launch = launch
        self.word_table, self.lower_table = tables
        self.task_size = task_size

    def plan_tasks(self, offsets: Any) -> dict[str, Any]:
        """Split documents into accumulation tasks of at most ``task_size`` entries.

        Parameters
        ----------
        offsets : array, shape (n_docs + 1,), dtype int64
            CSR row starts (an ``xp`` array, or NumPy to plan on the host).

        Returns
        -------
        dict
            ``task_docs``, ``task_starts``, ``partial_rows``, ``split_docs`` (int64 arrays of the
            same module as ``offsets``).
        """
        xp = np if isinstance(offsets, np.ndarray) else self.xp
        n_docs = offsets.size - 1
        counts = offsets[1:] - offsets[:-1]
        tasks_per_doc = -(-counts // self.task_size)
        n_tasks = int(tasks_per_doc.sum())
        task_docs = _group_of(xp, tasks_per_doc, n_tasks)
        rank = xp.arange(n_tasks, dtype=xp.int64) - _exclusive_cumsum(xp, tasks_per_doc)[task_docs]
        split_docs = xp.flatnonzero(tasks_per_doc > 1).astype(xp.int64)
        partial_rows = xp.full(n_docs, -1, dtype=xp.int64)
        partial_rows[split_docs] = xp.arange(split_docs.size, dtype=xp.int64)
        return {
            "task_docs": task_docs.astype(xp.int64),
            "task_starts": offsets[:-1][task_docs] + rank * self.task_size,
            "partial_rows": partial_rows,
            "split_docs": split_docs,
        }

    def accumulate(
        self,
        states: Any,
        offsets: Any,
        weights: Any | None,
        plan: dict[str, Any],
        *,
        bits: int,
        seed: int,
    ) -> Any:
        """Fingerprint a batch of documents already on the device.

        Parameters
        ----------
        states : array, shape (nnz,), dtype uint32
        offsets : array, shape (n_docs + 1,), dtype int64
        weights : array, shape (nnz,), dtype float64, or None
            None: every weight is 1.
        plan : dict
            ``plan_tasks(offsets)`` output, on the device.
        bits, seed : int
            Validated fingerprint length and seed.

        Returns
        -------
        codes : array, shape (n_docs, bits // 8), dtype uint8
        """
        xp = self.xp
        n_docs = offsets.size - 1
        words = -(-bits // 32)
        codes = xp.zeros((n_docs, bits // 8), dtype=xp.uint8)
        n_tasks = plan["task_docs"].size
        if n_tasks == 0:
            return codes
        n_split = plan["split_docs"].size
        partials = xp.zeros((n_split, bits), dtype=xp.int64)
        max_abs_bits = xp.zeros(n_docs, dtype=xp.uint64)
        task_args = (plan["task_docs"], plan["task_starts"])
        if weights is None:
            name, weights = "simhash_accumulate<false>", xp.zeros(1, dtype=xp.float64)
        else:
            name = "simhash_accumulate<true>"
            self.launch(
                "simhash_max_abs",
                n_tasks,
                (
                    weights,
                    offsets,
                    *task_args,
                    np.int64(n_tasks),
                    np.int64(self.task_size),
                    max_abs_bits,
                ),
            )
        self.launch(
            name,
            n_tasks * words,
            (
                states,
                weights,
                offsets,
                *task_args,
                max_abs_bits,
                plan["partial_rows"],
                partials,
                codes,
                np.int64(n_tasks),
                np.int64(self.task_size),
                np.int32(bits),
                np.uint32(seed),
            ),
        )
        if n_split:
            self.launch(
                "simhash_pack_partials",
                n_split * words,
                (partials, plan["split_docs"], np.int64(n_split), np.int32(bits), codes),
            )
        return codes

    def text_occurrences(
        self, code_points: Any, doc_starts: Any, featurizer: TextFeaturizer
    ) -> tuple[Any, Any]:
        """Feature states of every feature occurrence of a batch of texts, on the device.

        Parameters
        ----------
        code_points : array, dtype uint32
            The documents joined by newlines, with one more newline at the end.
        doc_starts : array, shape (n_docs,), dtype int64
            Where each document starts in ``code_points``.
        featurizer : TextFeaturizer
            Analyzer, n and lower-casing.

        Returns
        -------
        states : array, dtype uint32
            One per occurrence, in document order then position order (as on the CPU).
        doc : array, dtype int64
            The document of each occurrence.
        """
        xp = self.xp
        n = code_points.size
        normalized = xp.empty(n, dtype=xp.uint32)
        flags = xp.empty(n, dtype=xp.uint8)
        self.launch(
            "text_classify",
            n,
            (
                code_points,
                np.int64(n),
                self.word_table,
                self.lower_table,
                np.int32(featurizer.lowercase),
                normalized,
                flags,
            ),
        )
        # the normalized text: tokens, each followed by one space
        kept = xp.flatnonzero(flags & FLAG_KEEP)
        text = xp.ascontiguousarray(normalized[kept])
        kept_flags = flags[kept]
        token_starts = xp.flatnonzero(kept_flags & FLAG_TOKEN_START)
        token_stops = xp.flatnonzero((kept_flags & FLAG_WORD) == 0)
        n_tokens = token_starts.size
        if n_tokens == 0:
            return xp.zeros(0, dtype=xp.uint32), xp.zeros(0, dtype=xp.int64)
        doc_first_token = xp.searchsorted(token_starts, xp.searchsorted(kept, doc_starts))
        token_counts = xp.diff(doc_first_token, append=xp.asarray([n_tokens]))
        n_gram = featurizer.ngram
        if featurizer.analyzer == "word":
            first, span, doc = _windows(xp, doc_first_token, token_counts, n_gram)
            starts, stops = token_starts[first], token_stops[first + span - 1]
        else:
            first_token = xp.minimum(doc_first_token, n_tokens - 1)
            last_token = xp.maximum(doc_first_token + token_counts - 1, 0)
            text_first = token_starts[first_token]
            text_length = xp.where(token_counts > 0, token_stops[last_token] - text_first, 0)
            starts, span, doc = _windows(xp, text_first, text_length, n_gram)
            stops = starts + span
        states = xp.empty(starts.size, dtype=xp.uint32)
        if starts.size:
            self.launch(
                "text_span_states",
                starts.size,
                (
                    text,
                    xp.ascontiguousarray(starts),
                    xp.ascontiguousarray(stops),
                    np.int64(starts.size),
                    states,
                ),
            )
        return states, doc.astype(xp.int64)

    def text_batch(
        self, code_points: Any, doc_starts: Any, featurizer: TextFeaturizer
    ) -> tuple[Any, Any, Any | None]:
        """Featurize texts on the device, as ``featurizer.transform`` does on the CPU.

        Parameters
        ----------
        code_points, doc_starts : array
            As for ``text_occurrences``.
        featurizer : TextFeaturizer
            How text becomes weighted features; weights are computed from tables the
            featurizer itself fills on the host, so they are the CPU's doubles.

        Returns
        -------
        states : array, dtype uint32
        offsets : array, shape (n_docs + 1,), dtype int64
        weights : array, dtype float64, or None
            None for ``count`` (one entry per occurrence) and ``binary`` weighting.
        """
        xp = self.xp
        n_docs = doc_starts.size
        states, doc = self.text_occurrences(code_points, doc_starts, featurizer)
        if featurizer.weighting == "count":
            return states, _offsets_of(xp, doc, n_docs), None
        keys = (doc.astype(xp.uint64) << xp.uint64(32)) | states.astype(xp.uint64)
        distinct, counts = xp.unique(keys, return_counts=True)
        states = (distinct & xp.uint64(0xFFFFFFFF)).astype(xp.uint32)
        offsets = _offsets_of(xp, (distinct >> xp.uint64(32)).astype(xp.int64), n_docs)
        return states, offsets, self._weights(featurizer, counts.astype(xp.int64), states)

    def _weights(self, featurizer: TextFeaturizer, counts: Any, states: Any) -> Any | None:
        """Weights of distinct features from their counts, as the featurizer computes them."""
        xp = self.xp
        # raises the featurizer's own error when tfidf is not fitted
        featurizer.weigh(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.uint32))
        if featurizer.weighting == "binary" or counts.size == 0:
            return None
        if featurizer.weighting == "tfidf":
            vocabulary, idf, unseen = _idf_table(featurizer)
            vocabulary = xp.asarray(vocabulary)
            if vocabulary.size:
                at = xp.minimum(xp.searchsorted(vocabulary, states), vocabulary.size - 1)
                found = vocabulary[at] == states
                idf_of = xp.where(found, xp.asarray(idf)[at], unseen)
            else:
                idf_of = xp.full(states.size, unseen, dtype=xp.float64)
            return counts.astype(xp.float64) * idf_of
        # weights that depend on the count alone: a table the featurizer fills on the host
        largest = int(counts.max())
        table = featurizer.weigh(
            np.arange(1, largest + 1, dtype=np.int64), np.zeros(largest, dtype=np.uint32)
        )
        return xp.asarray(table)[counts - 1]


def _idf_table(featurizer: TextFeaturizer) -> tuple[np.ndarray, np.ndarray, float]:
    """Return the fitted vocabulary, its idf and the idf of an unseen feature."""
    vocabulary = featurizer.fitted_states
    idf = featurizer.weigh(np.ones(vocabulary.size, dtype=np.int64), vocabulary)
    # the smallest state not in the vocabulary stands for every unseen one
    candidates = np.arange(vocabulary.size + 1, dtype=np.uint32)
    unseen_state = np.setdiff1d(candidates, vocabulary, assume_unique=True)[:1]
    unseen = featurizer.weigh(np.ones(1, dtype=np.int64), unseen_state)
    return vocabulary, idf, float(unseen[0])


def encode_texts(texts: Sequence[str], first_index: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Join texts for the device: UTF-32 code points and each document's start.

    Parameters
    ----------
    texts : sequence of str
        The documents.
    first_index : int
        Position of ``texts[0]`` in the caller's input, for error messages.

    Returns
    -------
    code_points : ndarray, dtype uint32
        The documents joined by newlines, with one more newline at the end.
    doc_starts : ndarray, shape (len(texts),), dtype int64

    Raises
    ------
    TypeError
        A document that is not a str (the message names it).
    """
    check_texts(texts, first_index)
    joined = "\n".join(texts) + "\n"
    code_points = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    lengths = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
    return code_points, _exclusive_cumsum(np, lengths + 1)


def split_documents(sizes: np.ndarray, budget: int) -> Iterator[tuple[int, int]]:
    """Consecutive document ranges whose sizes add up to at most ``budget`` each.

    A single document larger than the budget gets a range of its own.

    Parameters
    ----------
    sizes : ndarray, shape (n_docs,), dtype int64
        Size of each document (entries, code points).
    budget : int
        Largest total size of a range, at least 1.

    Yields
    ------
    (start, stop) : tuple of int
        Document index range.
    """
    ends = np.cumsum(sizes)
    start = 0
    while start < sizes.size:
        before = int(ends[start - 1]) if start else 0
        stop = int(np.searchsorted(ends, before + budget, side="right"))
        stop = max(stop, start + 1)
        yield start, stop
        start = stop


# ---- the CuPy layer -------------------------------------------------------------------------


class _Launcher:
    """Launch compiled kernels with the grid from ``grid_size``."""

    def __init__(self, threads_per_block: int = THREADS_PER_BLOCK) -> None:
        cupy = _backend.require_gpu()
        device = cupy.cuda.Device()
        sm_count = device.attributes["MultiProcessorCount"]
        self.threads_per_block = threads_per_block
        self.max_blocks = sm_count * BLOCKS_PER_SM

    def __call__(self, name: str, n_items: int, args: tuple) -> None:
        blocks = grid_size(n_items, self.threads_per_block, self.max_blocks)
        _kernel(name)((blocks,), (self.threads_per_block,), args)


@functools.cache
def _engine() -> Engine:
    """Return the process's GPU engine, with the Unicode tables uploaded once."""
    cupy = _backend.require_gpu()
    tables = load_tables()
    device_tables = (
        cupy.asarray(tables.word.astype(np.uint8)),
        cupy.asarray(tables.lower.astype(np.uint32)),
    )
    return Engine(cupy, _Launcher(), device_tables)


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
        pinned_buffers, device_arrays = [], []
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
    upcoming = uploader.upload(prepare(*ranges[0])) if ranges else None
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
    engine = _engine()
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
    engine = _engine()
    codes = cupy.zeros((len(texts), bits // 8), dtype=cupy.uint8)
    lengths = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
    ranges = list(split_documents(lengths + 1, _memory_budget(BYTES_PER_CODE_POINT)))

    def prepare(start: int, stop: int) -> list[np.ndarray | None]:
        return list(encode_texts(texts[start:stop], first_index + start))

    def compute(arrays: list[Any]) -> Any:
        states, offsets, weights = engine.text_batch(*arrays, featurizer)
        plan = engine.plan_tasks(offsets)
        return engine.accumulate(states, offsets, weights, plan, bits=bits, seed=seed)

    return _pipelined(ranges, prepare, compute, codes)


def fingerprint_device(
    documents: FeatureBatch | Sequence[str],
    *,
    bits: int = 64,
    seed: int = 0,
    featurizer: TextFeaturizer | None = None,
) -> Any:
    """Compute fingerprints on the GPU and keep them there, for GPU callers.

    Parameters
    ----------
    documents : FeatureBatch or sequence of str
        A batch whose arrays are CuPy (fingerprinted where they are) or NumPy (copied to the
        device), or raw texts, featurized on the device.
    bits : int
        Fingerprint length: a multiple of 8 in ``[8, 4096]``.
    seed : int
        Global hash seed in ``[0, 2**32)``.
    featurizer : TextFeaturizer, optional
        For texts (default: lower-cased word tokens weighted by count).

    Returns
    -------
    codes : cupy.ndarray, shape (n_docs, bits // 8), dtype uint8
        The codes ``gpusimhash.fingerprint`` returns, left on the device.

    Raises
    ------
    RuntimeError
        No usable GPU.
    TypeError
        Arrays of the wrong dtype, or a document that is not a str.
    ValueError
        Bad ``bits`` or ``seed``, malformed offsets, NaN or infinite weights.

    Examples
    --------
    >>> from gpusimhash import _backend
    >>> if _backend.gpu_available():
    ...     codes = fingerprint_device(["the cat sat", "a dog ran"], bits=64)
    ...     assert codes.shape == (2, 8)
    """
    bits = _validate.bits(bits)
    seed = _validate.seed(seed)
    cupy = _backend.require_gpu()
    if not isinstance(documents, FeatureBatch):
        featurizer = TextFeaturizer() if featurizer is None else featurizer
        return fingerprint_text(list(documents), featurizer, bits=bits, seed=seed)
    if not isinstance(documents.states, cupy.ndarray):
        return fingerprint_batch(documents, bits=bits, seed=seed)
    states, offsets, weights = check_device_batch(cupy, documents)
    engine = _engine()
    return engine.accumulate(
        states, offsets, weights, engine.plan_tasks(offsets), bits=bits, seed=seed
    )


def check_device_batch(xp: ModuleType, batch: FeatureBatch) -> tuple[Any, Any, Any | None]:
    """Validate a FeatureBatch whose arrays live on the device (of module ``xp``).

    Parameters
    ----------
    xp : module
        The arrays' module.
    batch : FeatureBatch
        The batch.

    Returns
    -------
    states, offsets, weights
        C-contiguous arrays of the batch.

    Raises
    ------
    TypeError
        An array of another module or dtype.
    ValueError
        Wrong shapes, offsets that do not start at 0, decrease or end past ``nnz``, or NaN or
        infinite weights.
    """
    arrays = {"states": batch.states, "offsets": batch.offsets, "weights": batch.weights}
    expected = {"states": "uint32", "offsets": "int64", "weights": "float64"}
    for name, array in arrays.items():
        if array is None and name == "weights":
            continue
        if not isinstance(array, xp.ndarray) or array.dtype != np.dtype(expected[name]):
            kind = getattr(array, "dtype", type(array).__name__)
            raise TypeError(f"{name} must be a {xp.__name__} {expected[name]} array, got {kind}")
        if array.ndim != 1:
            raise ValueError(f"{name} must be one-dimensional, got shape {array.shape}")
    states, offsets = xp.ascontiguousarray(batch.states), xp.ascontiguousarray(batch.offsets)
    nnz = states.size
    if offsets.size < 1 or int(offsets[0]) != 0 or int(offsets[-1]) != nnz:
        raise ValueError(f"offsets must run from 0 to nnz = {nnz}, got shape {offsets.shape}")
    if bool((offsets[1:] < offsets[:-1]).any()):
        raise ValueError("offsets must be non-decreasing")
    weights = batch.weights
    if weights is not None:
        weights = xp.ascontiguousarray(weights)
        if weights.shape != (nnz,):
            raise ValueError(f"weights must have shape ({nnz},), got {weights.shape}")
        if not bool(xp.isfinite(weights).all()):
            raise ValueError("weights must be finite (no NaN or infinity)")
    return states, offsets, weights

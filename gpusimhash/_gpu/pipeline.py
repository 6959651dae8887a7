"""Host-to-device batch pipeline, written once over a staging interface and an array module.

A device supplies `Staging`: two persistent slots, each a host buffer (pinned on a GPU) and a
device buffer, a copy stream and a compute stream with events between them. `Pipeline.run`
takes jobs (host arrays and the computation to run on their device copies) and, for each job:

1. packs its host arrays into the slot's host buffer, after the host has seen the slot's
   previous copy finish (a pinned buffer is never rewritten while a copy may read it);
2. starts one copy of the packed bytes on the copy stream, after the copy stream has waited for
   the compute work that last read the slot's device buffer;
3. makes the compute stream wait for the copy and enqueues the computation;
4. prepares the next job on a worker thread meanwhile, so host preparation and the copy of
   batch ``i + 1`` overlap the kernels (and host round trips) of batch ``i``.

When ``run`` returns (or raises), every copy it started has finished: nothing in flight still
reads a host buffer that a later call will rewrite. The CuPy staging lives in
``gpusimhash._gpu``; the tests drive this module with NumPy and an emulated staging that checks
those rules (tests/gpu/cuda_emu/emulator.py).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from gpusimhash import _segments
from gpusimhash._gpu.engine import Engine, split_documents
from gpusimhash.features import FeatureBatch
from gpusimhash.text import TextFeaturizer
from gpusimhash.utf8 import Utf8Texts

# Byte alignment of each array packed into a staging buffer (covers every dtype's alignment).
ALIGNMENT = 256
SLOTS = 2

Compute = Callable[[list[Any]], Any]
Job = tuple[Sequence[np.ndarray | None], Compute]


@dataclass(frozen=True)
class Checked:
    """A job's result with a check that reads the device (a host round trip).

    ``Pipeline.run`` calls ``check`` one job later, once the next job's work is enqueued, so the
    round trip waits for this job while the device already works on the next one.

    Attributes
    ----------
    value : Any
        The result.
    check : callable
        Raises if the job's input was bad.
    """

    value: Any
    check: Callable[[], None]


class Staging(Protocol):
    """What a device provides to the pipeline (CuPy on a GPU, NumPy in the tests)."""

    def host_buffer(self, slot: int, nbytes: int) -> np.ndarray:
        """Return slot's host buffer (uint8, at least ``nbytes``), persistent between calls."""
        ...

    def device_buffer(self, slot: int, nbytes: int) -> Any:
        """Return slot's device buffer (uint8, at least ``nbytes``), persistent between calls."""
        ...

    def copy(self, slot: int, nbytes: int) -> Any:
        """Start copying slot's first ``nbytes`` host bytes to its device buffer; return an event."""
        ...

    def record_compute(self) -> Any:
        """Return an event after the compute work enqueued so far."""
        ...

    def compute_waits(self, event: Any) -> None:
        """Make later compute work wait for ``event`` (the host does not wait)."""
        ...

    def copy_waits(self, event: Any) -> None:
        """Make later copies wait for ``event`` (the host does not wait)."""
        ...

    def synchronize(self, event: Any) -> None:
        """Block the host until ``event`` has happened."""
        ...


def packed_layout(arrays: Sequence[np.ndarray | None]) -> tuple[list[int], int]:
    """Byte offset of each array in a staging buffer, and the bytes used in all.

    Parameters
    ----------
    arrays : sequence of ndarray or None
        One-dimensional host arrays (None takes no space).

    Returns
    -------
    offsets : list of int
        Where each array starts, a multiple of ``ALIGNMENT``.
    total : int
        Bytes used.
    """
    offsets, total = [], 0
    for array in arrays:
        offsets.append(total)
        if array is not None:
            total += -(-array.nbytes // ALIGNMENT) * ALIGNMENT
    return offsets, total


class Pipeline:
    """Double-buffered host-to-device copies overlapping the previous batch's computation.

    One per engine (persistent buffers, one copy stream); ``run`` holds a lock, so concurrent
    callers take turns.

    Parameters
    ----------
    staging : Staging
        The device's buffers, streams and events.
    """

    def __init__(self, staging: Staging) -> None:
        self.staging = staging
        self._copied: list[Any | None] = [None] * SLOTS  # last copy out of each host buffer
        self._released: list[Any | None] = [None] * SLOTS  # compute after its last reader
        self._lock = threading.Lock()

    def _upload(self, slot: int, arrays: Sequence[np.ndarray | None]) -> tuple[list[Any], Any]:
        """Pack ``arrays`` into ``slot`` and start their copy; return device views and the event."""
        staging = self.staging
        offsets, total = packed_layout(arrays)
        copied = self._copied[slot]
        if copied is not None:  # the host buffer is still the source of a copy
            staging.synchronize(copied)
            self._copied[slot] = None
        host = staging.host_buffer(slot, total)
        for array, at in zip(arrays, offsets, strict=True):
            if array is not None and array.nbytes:
                host[at : at + array.nbytes] = (
                    np.ascontiguousarray(array).reshape(-1).view(np.uint8)
                )
        released = self._released[slot]
        if released is not None:  # kernels may still read the device buffer
            staging.copy_waits(released)
        device = staging.device_buffer(slot, total)
        event = staging.copy(slot, total)
        self._copied[slot] = event
        views: list[Any] = []
        for array, at in zip(arrays, offsets, strict=True):
            if array is None:
                views.append(None)
            else:
                views.append(device[at : at + array.nbytes].view(array.dtype))
        return views, event

    def drain(self) -> None:
        """Wait (on the host) for every copy started so far."""
        for slot, event in enumerate(self._copied):
            if event is not None:
                self.staging.synchronize(event)
                self._copied[slot] = None

    def run(self, jobs: Iterable[Job]) -> list[Any]:
        """Upload and compute each job in turn, preparing the next one while the device works.

        Parameters
        ----------
        jobs : iterable of (host arrays, compute)
            ``compute(device_arrays)`` enqueues device work on the uploaded copies and returns
            its result (new device arrays: the copies are reused two jobs later), or a
            `Checked` result, whose check runs after the next job's compute is enqueued. The
            iterable is consumed lazily, one job ahead, on a worker thread: job ``i + 1`` is
            prepared while job ``i`` computes.

        Returns
        -------
        list
            Each job's result, in order.
        """
        results: list[Any] = []
        iterator = iter(jobs)
        with self._lock, ThreadPoolExecutor(1, thread_name_prefix="gsh-prepare") as worker:
            try:
                job = next(iterator, None)
                slot = 0
                pending: Checked | None = None
                while job is not None:
                    arrays, event = self._upload(slot, job[0])
                    # the next job is prepared on a worker thread while this one computes (its
                    # host round trips included); only this thread touches streams and buffers
                    following = worker.submit(next, iterator, None)
                    self.staging.compute_waits(event)
                    result = job[1](arrays)
                    self._released[slot] = self.staging.record_compute()
                    if pending is not None:  # the previous job's round trip, behind this job
                        pending.check()
                    pending = result if isinstance(result, Checked) else None
                    results.append(result.value if isinstance(result, Checked) else result)
                    job = following.result()
                    slot = (slot + 1) % SLOTS
                if pending is not None:
                    pending.check()
            finally:
                self.drain()
        return results


# Device bytes budgeted per entry (accumulation) and per code point or byte (text), temporaries
# included; and the most items of one batch, so that batches stay small enough to overlap.
BYTES_PER_ENTRY = 64
BYTES_PER_CODE_POINT = 160
MAX_BATCH_ENTRIES = 32 << 20
MAX_BATCH_CODE_POINTS = 32 << 20


def _accumulate(
    engine: Engine, bits: int, seed: int, largest_task: int, arrays: list[Any]
) -> Any:  # the compute of a FeatureBatch job
    states, offsets, weights, *plan = arrays
    plan_arrays = dict(zip(PLAN_KEYS, plan, strict=True))
    return engine.accumulate(
        states, offsets, weights, plan_arrays, bits=bits, seed=seed, largest_task=largest_task
    )


PLAN_KEYS = ("task_docs", "task_starts", "partial_rows", "split_docs", "class_ends")


def feature_jobs(
    engine: Engine, batch: FeatureBatch, *, bits: int, seed: int, budget: int
) -> Iterator[Job]:
    """Jobs fingerprinting a host FeatureBatch, in ranges of at most ``budget`` entries.

    Parameters
    ----------
    engine : Engine
        Runs the kernels.
    batch : FeatureBatch
        Validated documents (NumPy arrays).
    bits, seed : int
        Validated fingerprint length and seed.
    budget : int
        Entries per job (a document counts one more, for its own arrays).

    Yields
    ------
    Job
        Its result is the codes of the range's documents.
    """
    offsets = np.asarray(batch.offsets, dtype=np.int64)
    counts = np.diff(offsets)
    for start, stop in split_documents(counts + 1, min(budget, MAX_BATCH_ENTRIES)):
        first, last = int(offsets[start]), int(offsets[stop])
        local = offsets[start : stop + 1] - first
        plan = engine.plan_tasks(local)  # planned on the host: no device round trip
        largest = min(engine.task_size, int(counts[start:stop].max()))
        compute = functools.partial(_accumulate, engine, bits, seed, largest)
        weights = None if batch.weights is None else batch.weights[first:last]
        yield [batch.states[first:last], local, weights, *(plan[key] for key in PLAN_KEYS)], compute


def _text_codes(
    engine: Engine,
    featurizer: TextFeaturizer,
    bits: int,
    seed: int,
    surrogates: bool,
    first_index: int,
    host_offsets: np.ndarray,
    longest: int,
    arrays: list[Any],
) -> Checked:  # the compute of a text job: decode, featurize, accumulate, no host round trip
    data, offsets, doc_starts = arrays
    code_points, decoded_starts, first_error = engine.decode_utf8(
        data, offsets, surrogates=surrogates
    )
    # invalid bytes leave newlines behind (never out-of-range code points), so the work goes on
    # and the error is read one job later, when the next job's work is enqueued behind it
    starts = decoded_starts if doc_starts is None else doc_starts
    states, doc_offsets, weights = engine.text_batch(
        code_points, starts, featurizer, longest=longest
    )
    plan = engine.plan_tasks(doc_offsets, capacity=states.size)
    largest = min(engine.task_size, longest)
    codes = engine.accumulate(
        states, doc_offsets, weights, plan, bits=bits, seed=seed, largest_task=largest
    )

    def check() -> None:
        bad = int(first_error[0])
        if bad != 2**64 - 1:
            doc = int(np.searchsorted(host_offsets, bad, side="right")) - 1
            raise ValueError(
                f"document {first_index + doc}: not valid UTF-8 "
                f"(byte {bad - int(host_offsets[doc])} of the document)"
            )

    return Checked(codes, check)


def utf8_jobs(
    engine: Engine,
    texts: Utf8Texts,
    featurizer: TextFeaturizer,
    *,
    bits: int,
    seed: int,
    budget: int,
    first_index: int = 0,
) -> Iterator[Job]:
    """Jobs fingerprinting UTF-8 documents: bytes go to the device, decoded and featurized there.

    Parameters
    ----------
    engine : Engine
        Runs the kernels.
    texts : Utf8Texts
        Host documents.
    featurizer : TextFeaturizer
        How text becomes features (fitted, for tfidf).
    bits, seed : int
        Validated fingerprint length and seed.
    budget : int
        Bytes per job (a document counts one more, for its separator).
    first_index : int
        Position of ``texts[0]`` in the caller's input, for error messages.

    Yields
    ------
    Job
        Its result is the codes of the range's documents; invalid UTF-8 raises ValueError
        naming the document.
    """
    sizes = np.diff(texts.offsets) + 1
    for start, stop in split_documents(sizes, min(budget, MAX_BATCH_CODE_POINTS)):
        data, offsets = texts[start:stop].compact()
        longest = int(sizes[start:stop].max())  # bytes: at least the code points
        compute = functools.partial(
            _text_codes,
            engine,
            featurizer,
            bits,
            seed,
            False,
            first_index + start,
            offsets,
            longest,
        )
        yield [data, offsets, None], compute


def text_jobs(
    engine: Engine,
    texts: Sequence[str],
    featurizer: TextFeaturizer,
    *,
    bits: int,
    seed: int,
    budget: int,
) -> Iterator[Job]:
    """Jobs fingerprinting Python strings: joined, sent as UTF-8 and decoded on the device.

    Parameters
    ----------
    engine : Engine
        Runs the kernels.
    texts : sequence of str
        Checked documents (``check_texts``).
    featurizer : TextFeaturizer
        How text becomes features (fitted, for tfidf).
    bits, seed : int
        Validated fingerprint length and seed.
    budget : int
        Code points per job (a document counts one more, for its separator).

    Yields
    ------
    Job
        Its result is the codes of the range's documents.
    """
    lengths = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
    for start, stop in split_documents(lengths + 1, min(budget, MAX_BATCH_CODE_POINTS)):
        # one string for the whole range: "surrogatepass" keeps lone surrogates, as UTF-32 did
        joined = ("\n".join(texts[start:stop]) + "\n").encode("utf-8", "surrogatepass")
        data = np.frombuffer(joined, dtype=np.uint8)
        offsets = np.array([0, data.size], dtype=np.int64)  # one document, the decoder's view
        doc_starts = _segments.starts(lengths[start:stop] + 1)
        longest = int(lengths[start:stop].max()) + 1
        compute = functools.partial(
            _text_codes, engine, featurizer, bits, seed, True, start, offsets, longest
        )
        yield [data, offsets, doc_starts], compute

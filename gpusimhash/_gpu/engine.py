"""Fingerprinting written once over an array module and a kernel launcher.

On a GPU, ``xp`` is CuPy and the launcher runs the compiled kernels (``gpusimhash._gpu``); in the
tests, ``xp`` is NumPy and the launcher runs the same kernel source compiled by g++
(tests/gpu/cuda_emu), so the CPU checks all of this orchestration.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from types import ModuleType
from typing import Any

import numpy as np

from gpusimhash import _segments
from gpusimhash._gpu.kernels import COUNT_PLANES, FLAG_KEEP, FLAG_TOKEN_START, UNIT_KERNELS
from gpusimhash.text import TextFeaturizer, check_texts

# Entries per accumulation task: longer documents are split and their slot sums merged.
TASK_SIZE = 1024

Launch = Callable[[str, int, tuple[Any, ...]], None]


def seed_suffix(seed: int) -> tuple[np.uint64, np.int32]:
    """Return the seed suffix ``":" + str(seed)`` as the kernels take it (``SeedSuffix``).

    Parameters
    ----------
    seed : int
        Global seed in ``[0, 2**32)``.

    Returns
    -------
    digits : np.uint64
        The decimal digits, 4 bits each, the last one in the lowest bits.
    length : np.int32
        How many digits.

    Examples
    --------
    >>> digits, length = seed_suffix(907)
    >>> hex(int(digits)), int(length)
    ('0x907', 3)
    """
    text = str(seed)
    return np.uint64(int(text, 16)), np.int32(len(text))


def size_classes(largest_task: int) -> int:
    """Return how many unit-weight size classes hold tasks of up to ``largest_task`` entries.

    Class ``c`` holds the tasks that ``UNIT_KERNELS[c]``'s planes count and ``UNIT_KERNELS[c - 1]``'s
    do not (``entries < 2**planes``); the host launches the first ``size_classes`` of them.

    Parameters
    ----------
    largest_task : int
        Entries of the largest task (or more: a bound).

    Returns
    -------
    int

    Examples
    --------
    >>> size_classes(15), size_classes(16), size_classes(1024)
    (1, 2, 3)
    """
    for count, (planes, _) in enumerate(UNIT_KERNELS, start=1):
        if largest_task < 2**planes:
            return count
    raise ValueError(f"a task of {largest_task} entries needs more than {COUNT_PLANES} planes")


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
        self._idf_cache: tuple[tuple[int, int], np.ndarray, tuple[Any, Any, float]] | None = None

    def plan_tasks(self, offsets: Any, capacity: int | None = None) -> dict[str, Any]:
        """Split documents into accumulation tasks of at most ``task_size`` entries.

        Parameters
        ----------
        offsets : array, shape (n_docs + 1,), dtype int64
            CSR row starts (an ``xp`` array, or NumPy to plan on the host).
        capacity : int, optional
            None: exact task lists (on a device, host round trips for their sizes). Else an
            upper bound of the entries (``offsets[-1]``) that sizes the lists instead, with no
            round trip: the lists are padded with document ``-1``, which the kernels skip.

        Returns
        -------
        dict
            ``task_docs``, ``task_starts``, ``partial_rows``, ``split_docs`` and ``class_ends``
            (int64 arrays of the same module as ``offsets``): the tasks are ordered by size class
            (``size_classes``), class ``c`` ending at ``class_ends[c]``, padding after them all.
        """
        device = type(self.xp.empty(0, dtype=np.int64))
        xp = self.xp if isinstance(offsets, device) else np
        plan = self._tasks(xp, offsets, capacity)
        return {**plan, **self._by_size_class(xp, offsets, plan["task_docs"], plan["task_starts"])}

    def _tasks(self, xp: ModuleType, offsets: Any, capacity: int | None) -> dict[str, Any]:
        """Return the task lists of ``plan_tasks`` in document order (padding last)."""
        n_docs = offsets.size - 1
        counts = offsets[1:] - offsets[:-1]
        tasks_per_doc = -(-counts // self.task_size)
        split = tasks_per_doc > 1
        if capacity is None:
            task_docs = _segments.segment_of(tasks_per_doc)
            rank = _segments.ranks(tasks_per_doc)
            split_docs = xp.flatnonzero(split).astype(xp.int64)
            partial_rows = xp.full(n_docs, -1, dtype=xp.int64)
            partial_rows[split_docs] = xp.arange(split_docs.size, dtype=xp.int64)
            return {
                "task_docs": task_docs.astype(xp.int64),
                "task_starts": offsets[:-1][task_docs] + rank * self.task_size,
                "partial_rows": partial_rows,
                "split_docs": split_docs,
            }
        if n_docs == 0:
            empty = xp.zeros(0, dtype=xp.int64)
            return {
                key: empty for key in ("task_docs", "task_starts", "partial_rows", "split_docs")
            }
        # every document has at most 1 + count // task_size tasks; a split one > task_size entries
        n_tasks = n_docs + capacity // self.task_size
        n_split = min(n_docs, capacity // (self.task_size + 1))
        task_ends = xp.cumsum(tasks_per_doc)
        task = xp.arange(n_tasks, dtype=xp.int64)
        task_docs = xp.searchsorted(task_ends, task, side="right")  # n_docs: padding
        doc = xp.minimum(task_docs, n_docs - 1)
        rank = task - (task_ends[doc] - tasks_per_doc[doc])
        split_rank = xp.cumsum(split, dtype=xp.int64)
        split_docs = xp.searchsorted(
            split_rank, xp.arange(1, n_split + 1, dtype=xp.int64), side="left"
        )
        return {
            "task_docs": xp.where(task_docs < n_docs, task_docs, -1),
            "task_starts": offsets[doc] + rank * self.task_size,
            "partial_rows": xp.where(split, split_rank - 1, -1),
            "split_docs": xp.where(split_docs < n_docs, split_docs, -1),
        }

    def _by_size_class(
        self, xp: ModuleType, offsets: Any, task_docs: Any, task_starts: Any
    ) -> dict[str, Any]:
        """Tasks reordered by size class (stable), and where each class ends; no round trip."""
        real = task_docs >= 0
        doc = xp.where(real, task_docs, 0)
        entries = xp.where(real, xp.minimum(offsets[doc + 1] - task_starts, self.task_size), 0)
        n_classes = len(UNIT_KERNELS)
        size_class = xp.zeros(task_docs.size, dtype=xp.int64)
        for planes, _ in UNIT_KERNELS[:-1]:
            size_class += entries >= 2**planes
        size_class = xp.where(real, size_class, n_classes)  # padding: a class of its own, last
        members = [size_class == c for c in range(n_classes + 1)]
        counts = xp.stack([member.sum(dtype=xp.int64) for member in members])
        ends = xp.cumsum(counts)
        position = xp.zeros(task_docs.size, dtype=xp.int64)
        for c, member in enumerate(members):  # each task's rank in its class, after the others
            rank = xp.cumsum(member, dtype=xp.int64) - 1 + (ends[c - 1] if c else 0)
            position = xp.where(member, rank, position)
        ordered_docs = xp.empty_like(task_docs)
        ordered_starts = xp.empty_like(task_starts)
        ordered_docs[position] = task_docs
        ordered_starts[position] = task_starts
        return {"task_docs": ordered_docs, "task_starts": ordered_starts, "class_ends": ends[:-1]}

    def accumulate(
        self,
        states: Any,
        offsets: Any,
        weights: Any | None,
        plan: dict[str, Any],
        *,
        bits: int,
        seed: int,
        largest_task: int | None = None,
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
        largest_task : int, optional
            Entries of the largest task (``min(task_size, longest document)``) or more: the
            unit-weight size classes above it are not launched. None launches them all (a
            class without tasks ends at once).

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
        task_args = (plan["task_docs"], plan["task_starts"])
        outputs = (plan["partial_rows"], partials, codes)
        tail = (np.int64(self.task_size), np.int32(bits), *seed_suffix(seed))
        if weights is None:
            classes = size_classes(self.task_size if largest_task is None else largest_task)
            for size_class, (planes, group_words) in enumerate(UNIT_KERNELS[:classes]):
                self.launch(  # the class's own tasks, at most all of them
                    f"simhash_accumulate_unit<{planes}, {group_words}>",
                    n_tasks * -(-words // group_words),
                    (
                        states,
                        offsets,
                        *task_args,
                        plan["class_ends"],
                        np.int32(size_class),
                        *outputs,
                        *tail,
                    ),
                )
        else:
            # split documents' largest |weight|: the others find theirs while accumulating
            max_abs_bits = xp.zeros(n_docs if n_split else 0, dtype=xp.uint64)
            if n_split:
                self.launch(
                    "simhash_max_abs",
                    n_tasks,
                    (
                        weights,
                        offsets,
                        *task_args,
                        plan["partial_rows"],
                        np.int64(n_tasks),
                        np.int64(self.task_size),
                        max_abs_bits,
                    ),
                )
            self.launch(
                "simhash_accumulate_weighted",
                n_tasks * words,
                (
                    states,
                    weights,
                    offsets,
                    *task_args,
                    max_abs_bits,
                    *outputs,
                    np.int64(n_tasks),
                    *tail,
                ),
            )
        if n_split:
            self.launch(
                "simhash_pack_partials",
                n_split * words,
                (partials, plan["split_docs"], np.int64(n_split), np.int32(bits), codes),
            )
        return codes

    def decode_utf8(
        self, data: Any, offsets: Any, *, surrogates: bool = False
    ) -> tuple[Any, Any, Any]:
        """UTF-8 documents to the code-point layout of ``grams``, on the device.

        Parameters
        ----------
        data : array, shape (n_bytes,), dtype uint8
            The documents' bytes, back to back.
        offsets : array, shape (n_docs + 1,), dtype int64
            Byte offsets of the documents, from 0 to ``n_bytes``.
        surrogates : bool
            Accept encoded surrogates (as ``"surrogatepass"`` writes them) instead of
            rejecting them as Python's strict ``"utf-8"`` does.

        Returns
        -------
        code_points : array, dtype uint32
            Each document's code points followed by one newline (then more newlines).
        doc_starts : array, shape (n_docs,), dtype int64
            Where each document starts in ``code_points``.
        first_error : array, shape (1,), dtype uint64
            The first invalid byte position, or ``2**64 - 1`` when the bytes are valid UTF-8.
            Reading it is the caller's (and the only) host synchronization.
        """
        xp = self.xp
        n_docs = offsets.size - 1
        n = data.size
        rank = xp.cumsum((data & 0xC0) != 0x80, dtype=xp.int64)
        leads_before = xp.zeros(n + 1, dtype=xp.int64)
        leads_before[1:] = rank
        doc_starts = leads_before[offsets[:-1]] + xp.arange(n_docs, dtype=xp.int64)
        # an upper bound of the code points plus separators: no host round trip for the size
        code_points = xp.full(max(1, n + n_docs), 0x0A, dtype=xp.uint32)
        first_error = xp.full(1, np.uint64(2**64 - 1), dtype=xp.uint64)
        if n:
            self.launch(
                "text_decode_utf8",
                n,
                (
                    data,
                    np.int64(n),
                    offsets,
                    np.int64(n_docs),
                    rank,
                    np.int32(surrogates),
                    code_points,
                    first_error,
                ),
            )
        return code_points, doc_starts, first_error

    def _classify(self, code_points: Any, featurizer: TextFeaturizer) -> tuple[Any, Any]:
        """Run text_classify: normalized code points and flags, one per input code point."""
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
        return normalized, flags

    def grams(
        self, code_points: Any, doc_starts: Any, featurizer: TextFeaturizer
    ) -> tuple[Any, Any]:
        """Feature states of every n-gram occurrence, with no compaction and no round trip.

        Parameters
        ----------
        code_points : array, dtype uint32
            The documents back to back, each followed by one newline (more newlines may
            follow the last one).
        doc_starts : array, shape (n_docs,), dtype int64
            Where each document starts in ``code_points``.
        featurizer : TextFeaturizer
            Analyzer (word or character n-grams), n and lower-casing.

        Returns
        -------
        states : array, shape (code_points.size,), dtype uint32
            One per occurrence, in document order then position order (as on the CPU), in the
            first ``offsets[-1]`` entries; the rest is unused (a document has at most as many
            n-grams as code points, so the size is known without reading the total).
        offsets : array, shape (n_docs + 1,), dtype int64
            Each document's occurrences.
        """
        xp = self.xp
        n, n_docs, n_gram = code_points.size, doc_starts.size, featurizer.ngram
        normalized, flags = self._classify(code_points, featurizer)
        word = featurizer.analyzer == "word"
        # words: the tokens of each document; characters: its normalized text and one space
        marks = (flags & (FLAG_TOKEN_START if word else FLAG_KEEP)) != 0
        rank = xp.cumsum(marks, dtype=xp.int64)
        before = xp.zeros(n + 1, dtype=xp.int64)
        before[1:] = rank
        doc_marks = xp.concatenate([before[doc_starts], rank[-1:]])
        items = doc_marks[1:] - doc_marks[:-1]
        if not word:
            items = xp.maximum(items - 1, 0)  # the trailing space is no character of the text
        grams = xp.where(items >= n_gram, items - n_gram + 1, (items > 0).astype(xp.int64))
        offsets = xp.zeros(n_docs + 1, dtype=xp.int64)
        xp.cumsum(grams, out=offsets[1:])
        states = xp.empty(n, dtype=xp.uint32)
        if n_docs:
            self.launch(
                "text_word_states" if word else "text_char_states",
                n,
                (
                    normalized,
                    flags,
                    np.int64(n),
                    rank,
                    xp.ascontiguousarray(doc_starts),
                    np.int64(n_docs),
                    doc_marks,
                    offsets,
                    np.int32(n_gram),
                    states,
                ),
            )
        return states, offsets

    def text_batch(
        self, code_points: Any, doc_starts: Any, featurizer: TextFeaturizer, *, longest: int
    ) -> tuple[Any, Any, Any | None]:
        """Featurize texts on the device, as ``featurizer.transform`` does on the CPU.

        No host round trip: sizes are bounds known on the host (the code points), and
        distinct features come from a sort and searches instead of ``unique``.

        Parameters
        ----------
        code_points, doc_starts : array
            As for ``grams``.
        featurizer : TextFeaturizer
            How text becomes weighted features; weights are computed from tables the
            featurizer itself fills on the host, so they are the CPU's doubles.
        longest : int
            The most code points of one document, its newline included (or more): a bound of
            any feature's count in a document.

        Returns
        -------
        states : array, shape (code_points.size,), dtype uint32
            The features in the first ``offsets[-1]`` entries, as ``grams`` returns them.
        offsets : array, shape (n_docs + 1,), dtype int64
        weights : array, shape (code_points.size,), dtype float64, or None
            None for ``count`` (one entry per occurrence) and ``binary`` weighting.
        """
        xp = self.xp
        n_docs = doc_starts.size
        states, offsets = self.grams(code_points, doc_starts, featurizer)
        if featurizer.weighting == "count":
            return states, offsets, None
        # distinct (document, state) keys by a sort; unused slots get document n_docs (last)
        capacity = states.size
        slot = xp.arange(capacity, dtype=xp.int64)
        doc = xp.searchsorted(offsets[1:], slot, side="right")
        keys = xp.sort((doc.astype(xp.uint64) << xp.uint64(32)) | states.astype(xp.uint64))
        first = xp.ones(capacity, dtype=bool)
        first[1:] = keys[1:] != keys[:-1]
        run = xp.cumsum(first, dtype=xp.int64) - 1
        run_starts = xp.searchsorted(run, slot, side="left")  # capacity past the last run
        counts = xp.searchsorted(run, slot, side="right") - run_starts
        distinct = keys[xp.minimum(run_starts, capacity - 1)]
        run_docs = xp.where(run_starts < capacity, distinct >> xp.uint64(32), n_docs)
        states = (distinct & xp.uint64(0xFFFFFFFF)).astype(xp.uint32)
        offsets = _segments.offsets_of(run_docs.astype(xp.int64), n_docs)
        return states, offsets, self._weights(featurizer, counts, states, longest)

    def _idf_table(self, featurizer: TextFeaturizer) -> tuple[Any, Any, float]:
        """Return the fitted vocabulary and idf on the device, made once per fitted featurizer."""
        key = (id(featurizer), id(featurizer.fitted_states))
        cached = self._idf_cache
        if cached is None or cached[0] != key or cached[1] is not featurizer.fitted_states:
            vocabulary, idf, unseen = _idf_table(featurizer)
            table = (self.xp.asarray(vocabulary), self.xp.asarray(idf), unseen)
            self._idf_cache = cached = (key, featurizer.fitted_states, table)
        return cached[2]

    def _weights(
        self, featurizer: TextFeaturizer, counts: Any, states: Any, longest: int
    ) -> Any | None:
        """Weights of distinct features from their counts (at most ``longest``), as on the CPU."""
        xp = self.xp
        # raises the featurizer's own error when tfidf is not fitted
        featurizer.weigh(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.uint32))
        if featurizer.weighting == "binary" or counts.size == 0:
            return None
        if featurizer.weighting == "tfidf":
            vocabulary, idf, unseen = self._idf_table(featurizer)
            if vocabulary.size:
                at = xp.minimum(xp.searchsorted(vocabulary, states), vocabulary.size - 1)
                found = vocabulary[at] == states
                idf_of = xp.where(found, idf[at], unseen)
            else:
                idf_of = xp.full(states.size, unseen, dtype=xp.float64)
            return counts.astype(xp.float64) * idf_of
        # weights that depend on the count alone: a table the featurizer fills on the host, up
        # to the bound (unused slots read any entry)
        largest = max(1, longest)
        table = featurizer.weigh(
            np.arange(1, largest + 1, dtype=np.int64), np.zeros(largest, dtype=np.uint32)
        )
        return xp.asarray(table)[xp.clip(counts, 1, largest) - 1]


def _idf_table(featurizer: TextFeaturizer) -> tuple[np.ndarray, np.ndarray, float]:
    """Return the fitted vocabulary, its idf and the idf of an unseen feature."""
    vocabulary = featurizer.fitted_states
    idf = featurizer.weigh(np.ones(vocabulary.size, dtype=np.int64), vocabulary)
    # the smallest state not in the (sorted, distinct) vocabulary stands for every unseen one
    gaps = np.flatnonzero(vocabulary != np.arange(vocabulary.size, dtype=np.uint32))
    unseen_state = np.array([gaps[0] if gaps.size else vocabulary.size], dtype=np.uint32)
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
    return code_points, _segments.starts(lengths + 1)


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

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
from gpusimhash._gpu.kernels import (
    COUNT_PLANES,
    FLAG_KEEP,
    FLAG_TOKEN_START,
    FLAG_WORD,
    UNIT_KERNELS,
)
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


def unit_kernel(largest_task: int) -> tuple[str, int]:
    """Return the unit-weight kernel whose planes count a task, and its words per thread.

    Parameters
    ----------
    largest_task : int
        Entries of the largest task to accumulate.

    Returns
    -------
    name : str
    group_words : int
    """
    for planes, group in UNIT_KERNELS:
        if largest_task < 2**planes:
            return f"simhash_accumulate_unit<{planes}, {group}>", group
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
        task_docs = _segments.segment_of(tasks_per_doc)
        rank = _segments.ranks(tasks_per_doc)
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
            Entries of the largest task (``min(task_size, longest document)``) or more, which
            choose the unit-weight kernel's counter planes; computed (one host round trip)
            when None.

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
        common = (plan["partial_rows"], partials, codes, np.int64(n_tasks))
        tail = (np.int64(self.task_size), np.int32(bits), *seed_suffix(seed))
        if weights is None:
            if largest_task is None:  # one host round trip; host-planned callers pass it
                counts = offsets[1:] - offsets[:-1]
                largest_task = min(self.task_size, int(counts.max()))
            name, group_words = unit_kernel(largest_task)
            n_items = n_tasks * -(-words // group_words)
            self.launch(name, n_items, (states, offsets, *task_args, *common, *tail))
        else:
            max_abs_bits = xp.zeros(n_docs, dtype=xp.uint64)
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
                "simhash_accumulate_weighted",
                n_tasks * words,
                (states, weights, offsets, *task_args, max_abs_bits, *common, *tail),
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
        """UTF-8 documents to the code-point layout of ``text_occurrences``, on the device.

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

    def word_grams(
        self, code_points: Any, doc_starts: Any, featurizer: TextFeaturizer
    ) -> tuple[Any, Any]:
        """Feature states of every word n-gram occurrence, with no compaction of the text.

        Parameters
        ----------
        code_points, doc_starts : array
            As for ``text_occurrences``.
        featurizer : TextFeaturizer
            A word analyzer: n and lower-casing.

        Returns
        -------
        states : array, dtype uint32
            One per occurrence, in document order then position order (as on the CPU).
        offsets : array, shape (n_docs + 1,), dtype int64
            Each document's occurrences; reading their total is the one host round trip.
        """
        xp = self.xp
        n, n_docs, n_gram = code_points.size, doc_starts.size, featurizer.ngram
        normalized, flags = self._classify(code_points, featurizer)
        rank = xp.cumsum((flags & FLAG_TOKEN_START) != 0, dtype=xp.int64)
        tokens_before = xp.zeros(n + 1, dtype=xp.int64)
        tokens_before[1:] = rank
        doc_tokens = xp.concatenate([tokens_before[doc_starts], rank[-1:]])
        counts = doc_tokens[1:] - doc_tokens[:-1]
        grams = xp.where(counts >= n_gram, counts - n_gram + 1, (counts > 0).astype(xp.int64))
        offsets = xp.zeros(n_docs + 1, dtype=xp.int64)
        xp.cumsum(grams, out=offsets[1:])
        states = xp.empty(int(offsets[-1]), dtype=xp.uint32)
        if states.size:
            self.launch(
                "text_word_states",
                n,
                (
                    normalized,
                    flags,
                    np.int64(n),
                    rank,
                    xp.ascontiguousarray(doc_starts),
                    np.int64(n_docs),
                    doc_tokens,
                    offsets,
                    np.int32(n_gram),
                    states,
                ),
            )
        return states, offsets

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
        if featurizer.analyzer == "word":
            states, offsets = self.word_grams(code_points, doc_starts, featurizer)
            return states, _segments.segment_of(offsets[1:] - offsets[:-1])
        normalized, flags = self._classify(code_points, featurizer)
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
        # character n-grams: windows of each document's normalized text
        first_token = xp.minimum(doc_first_token, n_tokens - 1)
        last_token = xp.maximum(doc_first_token + token_counts - 1, 0)
        text_first = token_starts[first_token]
        text_length = xp.where(token_counts > 0, token_stops[last_token] - text_first, 0)
        starts, span, doc = _segments.windows(text_first, text_length, featurizer.ngram)
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
        if featurizer.analyzer == "word":  # no compaction, one round trip (the total)
            states, offsets = self.word_grams(code_points, doc_starts, featurizer)
            if featurizer.weighting == "count":
                return states, offsets, None
            doc = _segments.segment_of(offsets[1:] - offsets[:-1])
        else:
            states, doc = self.text_occurrences(code_points, doc_starts, featurizer)
            if featurizer.weighting == "count":
                return states, _segments.offsets_of(doc, n_docs), None
        keys = (doc.astype(xp.uint64) << xp.uint64(32)) | states.astype(xp.uint64)
        distinct, counts = xp.unique(keys, return_counts=True)
        states = (distinct & xp.uint64(0xFFFFFFFF)).astype(xp.uint32)
        offsets = _segments.offsets_of((distinct >> xp.uint64(32)).astype(xp.int64), n_docs)
        return states, offsets, self._weights(featurizer, counts.astype(xp.int64), states)

    def _idf_table(self, featurizer: TextFeaturizer) -> tuple[Any, Any, float]:
        """Return the fitted vocabulary and idf on the device, made once per fitted featurizer."""
        key = (id(featurizer), id(featurizer.fitted_states))
        cached = self._idf_cache
        if cached is None or cached[0] != key or cached[1] is not featurizer.fitted_states:
            vocabulary, idf, unseen = _idf_table(featurizer)
            table = (self.xp.asarray(vocabulary), self.xp.asarray(idf), unseen)
            self._idf_cache = cached = (key, featurizer.fitted_states, table)
        return cached[2]

    def _weights(self, featurizer: TextFeaturizer, counts: Any, states: Any) -> Any | None:
        """Weights of distinct features from their counts, as the featurizer computes them."""
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

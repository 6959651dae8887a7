"""The exact feature join across workers: one index of every document on each, probed in shares.

Where the single machine takes its candidates from the features
(`gpusimhash.dedup.candidates`), so does the cluster, with the same pairs. Each partition hands
the features and codes of its featured documents (`featured_documents`) to an index task on
every worker (`index_documents`), which does what the single machine's
`gpusimhash.dedup.candidates.feature_graph` does before it probes: identical codes collapsed,
one representative per code and identical features, the representatives ordered by size key and
their tails indexed (`gpusimhash.verify._feature_join.feature_index`), all in global row order,
so that each copy of the index is the single machine's. The workers build their copies at once,
where one index shipped to every worker would leave all but one idle while it is built and then
move more bytes than the features it is built from. The probing, nearly all of the join's work,
is split by the documents that probe: share ``s`` of ``k`` probes the ``s``-th of ``k`` ranges
of positions in size-key order, of shrinking reads, the last `SHARE_RATIO` of the first
(`probe_share`; `gpusimhash.verify._feature_join.range_bounds` and `probe_range`), on its
worker's copy, once the index's reads are checked against the budget as one machine checks
them. A range's documents are probed in order, so that each worker reads the postings and
documents near its own: shares interleaved over every position took 1.2x as long in all
(`probe_range`). Every passing pair of documents is found by exactly one share; each share
names its pairs by their codes' lowest rows, as the table and tile tasks do. Where some code
has two representatives (documents of that code with other features), two shares may find one
pair of codes (`IndexedDocuments.shared_codes`), and the clustering keeps each once
(`gpusimhash.distributed._pairs`); otherwise each share's pairs are already distinct.

The index holds every featured document's features on each worker (up to
`gpusimhash.verify._feature_join.INDEX_BYTES_PER_ENTRY` bytes per feature entry, index
included), the limit of this join's size: an index task refuses one larger than its worker's
memory limit less what the worker holds (`worker_room`), before building any of it, and a
share refuses more passing pairs than that room holds, as it finds them.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

import numpy as np

from gpusimhash._memory import resident_memory
from gpusimhash.codes import code_words
from gpusimhash.distributed._pairs import distinct
from gpusimhash.distributed._partitions import Part
from gpusimhash.join._groups import collapse
from gpusimhash.verify._feature_join import (
    FeatureIndex,
    check_pairs,
    check_reads,
    feature_index,
    probe_range,
    range_bounds,
)
from gpusimhash.verify._features import DocumentFeatures
from gpusimhash.verify._threshold import Threshold
from gpusimhash.verify._units import feature_units

__all__ = [
    "IndexedDocuments",
    "check_passing",
    "featured_documents",
    "index_documents",
    "index_members",
    "index_summary",
    "probe_share",
    "share_counts",
    "worker_room",
]

# the last share's reads against the first's: the shares are handed out to the workers as they
# finish (`gpusimhash.distributed._join_stage`), each worker holding two; small last shares
# leave the other workers little idle time once none is left to hand out
SHARE_RATIO = 0.25

# a partition's featured documents: their rows in it, codes (uint64 words), features, and the
# partition's documents
Featured = tuple[np.ndarray, np.ndarray, DocumentFeatures, int]


@dataclass(frozen=True)
class IndexedDocuments:
    """The representatives of every code and feature set, indexed (the index task's result).

    Attributes
    ----------
    index : FeatureIndex
        The representatives' index, in the single machine's order.
    code_rows : ndarray, dtype int64
        The lowest global row of each representative's code (the code's name in the pairs).
    bounds : ndarray, dtype int64
        The shares' ranges of positions: share ``s`` probes ``[bounds[s], bounds[s + 1])``.
    distinct_codes : int
        Distinct codes of the featured documents.
    members : ndarray, shape (k, 2), dtype int64
        ``(row, code)`` of every featured document whose code another one has (the code named
        by its lowest row), what the clustering needs of the identical codes.
    input_bytes : int
        Bytes of the featured documents it was built from (rows, codes and features): what
        each worker that builds it fetches, at most.

    Notes
    -----
    With one representative per code, a pair of codes comes from one pair of documents, found
    by one share: the shares' pairs need no deduplication (`shared_codes`).
    """

    index: FeatureIndex
    code_rows: np.ndarray
    bounds: np.ndarray
    distinct_codes: int
    members: np.ndarray
    input_bytes: int

    @property
    def shared_codes(self) -> bool:
        """Whether some code has two representatives (documents of other features)."""
        return self.distinct_codes < self.index.n_docs


def featured_documents(part: Part) -> Featured:
    """Return a partition's featured documents: rows in it, codes, features, and its size (a task).

    The index counts global rows from every partition's size (`index_documents`).
    """
    local = np.flatnonzero(part.features.sizes > 0)
    return local, code_words(part.codes[local]), part.features.take(local), part.n_docs


def index_documents(parts: list[Featured], limit: Threshold, shares: int) -> IndexedDocuments:
    """Collapse the codes, choose the representatives and index them, as one machine (a task).

    Every worker that probes builds this index: the same index from the same inputs, with the
    same shares wherever it is built, so that a share probes the same documents on any copy.

    Parameters
    ----------
    parts : list of (rows, words, features, documents)
        Every partition's featured documents, in partition order (`featured_documents`):
        their global rows follow from the partitions' sizes.
    limit : Threshold
        A verified threshold above 0.
    shares : int
        The shares that probe it, ``>= 1``: ranges of positions of shrinking reads
        (`SHARE_RATIO`).

    Returns
    -------
    IndexedDocuments

    Raises
    ------
    MemoryRefusal
        An index larger than this worker may still take, by its memory limit, or than the
        machine's available memory (`gpusimhash.verify._feature_join.check_index_memory`),
        before any of it is built.
    """
    offsets = np.cumsum([0, *(p[3] for p in parts)], dtype=np.int64)
    rows = np.concatenate(
        [np.zeros(0, np.int64), *(p[0] + offsets[i] for i, p in enumerate(parts))]
    )
    n_words = parts[0][1].shape[1] if parts else 1
    words = np.concatenate([np.zeros((0, n_words), np.uint64), *(p[1] for p in parts)])
    features = DocumentFeatures.concatenate([p[2] for p in parts])
    unique, inverse = collapse(words)
    _, representative = feature_units(inverse, features, np.arange(features.n_docs), False)
    # rows ascend, so a code's first document is its lowest
    first = np.full(unique.shape[0], rows.size, dtype=np.int64)
    np.minimum.at(first, inverse, np.arange(rows.size))
    shared = np.flatnonzero(np.bincount(inverse, minlength=unique.shape[0])[inverse] > 1)
    index = feature_index(
        features, limit.measure, limit.value, rows=representative, worker_room=worker_room()
    )
    return IndexedDocuments(
        index=index,
        code_rows=rows[first[inverse[representative]]],
        bounds=range_bounds(index, shares, ratio=SHARE_RATIO ** (1 / max(1, shares - 1))),
        distinct_codes=int(unique.shape[0]),
        members=np.stack([rows[shared], rows[first[inverse[shared]]]], axis=1),
        input_bytes=sum(_featured_bytes(p) for p in parts),
    )


def worker_room() -> int | None:
    """Return the bytes this Dask worker may still take: its memory limit less what it holds.

    None outside a worker (the driver's calls) or for a worker without a memory limit. A
    process that has not imported Dask's ``distributed`` runs no worker, and does not import
    it here (0.25 s).
    """
    if "distributed" not in sys.modules:
        return None
    try:
        from distributed import get_worker

        worker = get_worker()
    except (ImportError, ValueError):  # no Dask, or not in a worker's task
        return None
    limit, held = worker.memory_manager.memory_limit, resident_memory()
    if not limit or held is None:
        return None
    return max(0, int(limit) - held)


def probe_share(
    indexed: IndexedDocuments, share: int, max_pairs: int | None
) -> tuple[np.ndarray, int]:
    """Probe one share of the index's positions; name the passing pairs by their codes (a task).

    The index's reads are checked against the budget first, as one machine checks them before
    it probes: an index over budget is refused by every share before any probing.

    Parameters
    ----------
    indexed : IndexedDocuments
        The index (left unchanged).
    share : int
        This share: it probes positions ``bounds[share]`` to ``bounds[share + 1]``.
    max_pairs : int, optional
        Refuse more passing pairs of documents than this (the whole join's budget), and an
        index whose probes would read more postings than it allows; and, on a Dask worker,
        more pairs than its memory limit leaves room for (`worker_room`).

    Returns
    -------
    pairs : ndarray, shape (p, 2), dtype int64
        ``(a, b)``, ``a < b``: the lowest rows of two distinct codes of which some pair of
        documents passes, each once.
    passing : int
        Passing pairs of documents found.
    """
    check_reads(indexed.index, max_pairs)
    start, stop = int(indexed.bounds[share]), int(indexed.bounds[share + 1])
    found = probe_range(indexed.index, start, stop, max_pairs=max_pairs, worker_room=worker_room())
    a, b = indexed.code_rows[found.pairs[:, 0]], indexed.code_rows[found.pairs[:, 1]]
    differ = a != b
    pairs = np.stack([np.minimum(a, b)[differ], np.maximum(a, b)[differ]], axis=1)
    return distinct(pairs), int(found.pairs.shape[0])


def _featured_bytes(featured: Featured) -> int:
    """Return the bytes of a partition's featured documents, rows, codes and features."""
    rows, words, features, _ = featured
    return int(rows.nbytes + words.nbytes + features.nbytes)


def index_summary(indexed: IndexedDocuments) -> tuple[int, int, int, bool, int, int]:
    """Return what the driver reports of the index (a task).

    Its distinct codes, documents, entries, whether some code has two representatives
    (documents of other features), the bytes it was built from, and the documents sharing a
    code (`IndexedDocuments.members`).
    """
    return (
        indexed.distinct_codes,
        indexed.index.n_docs,
        indexed.index.indexed,
        indexed.shared_codes,
        indexed.input_bytes,
        len(indexed.members),
    )


def index_members(indexed: IndexedDocuments) -> np.ndarray:
    """Return the documents sharing a code, ``(row, code)`` (`IndexedDocuments.members`; a task)."""
    return indexed.members


def share_counts(found: tuple[np.ndarray, int]) -> tuple[int, int]:
    """Return a share's pairs of codes and passing pairs of documents (`probe_share`; a task)."""
    return len(found[0]), found[1]


def check_passing(passing: int, limit: Threshold, max_pairs: int | None) -> None:
    """Refuse, as one machine does, more passing pairs of documents than ``max_pairs``."""
    check_pairs(passing, max_pairs, limit.measure, limit.value)

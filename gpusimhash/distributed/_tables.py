"""The exact join, one bucket at a time: collapse identical codes, then pigeonhole tables.

Identical codes are collapsed first: every featured document's (row, code) goes to the collapse
task of its code's hash, which names each distinct code by its lowest row and lists the
documents of the codes shared by several (candidates of each other). Then, for a Hamming radius ``r``, the bits are cut into
``r + 1`` disjoint blocks (`pigeonhole_blocks`): two codes within ``r`` bits agree exactly on at
least one block. Table ``t`` routes every distinct code, as (row, code) only, by its key on block
``t``, so each bucket lands whole in one task. A task joins its buckets by multi-index hashing
with threshold 0, as the single-machine MIH join does with pigeonhole blocks: ``r + 1`` disjoint
sub-blocks of the other bits (`sub_blocks`) split each bucket, pairs sharing a sub-block key are
compared, and a pair is kept from the first sub-block and the first table on which it agrees,
so every pair comes from exactly one table, with no global deduplication, and a bucket of any
size (real codes crowd some keys) costs about its sub-buckets' pairs.

A bucket of more than `SPLIT_CODES` distinct codes (a crowded key; a degenerate corpus can put
millions of codes under one) is not joined by its table's task: the task sorts its codes by
key and plans the join of each such bucket once (`bucket_table`), the driver learns only their
sizes and estimated seconds (`crowded_work`), and each is selected where it is
(`crowded_bucket`), then joined by `share_count` share tasks (`join_share`), each running one
share of the single-machine MIH join (`gpusimhash.join._mih.join_share`) and dropping the
pairs of earlier tables, so a crowded bucket's work and pairs spread over the cluster with the
same pairs, each once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from gpusimhash import _segments
from gpusimhash._cpu._threads import threads
from gpusimhash.distributed._routing import destination, split_by
from gpusimhash.join import _mih as mih

__all__ = [
    "BUCKET_CAP",
    "SPLIT_CODES",
    "Bucket",
    "Collapsed",
    "Table",
    "bucket_table",
    "collapse",
    "crowded_bucket",
    "crowded_work",
    "join_share",
    "join_table",
    "pigeonhole_blocks",
    "share_count",
    "table_pieces",
]

MAX_KEY_BITS = 32  # widest key (a wider block is cut to its first 32 bits: still exact)
BUCKET_CAP = 2048  # larger buckets go to the single-machine MIH join, one at a time
# Larger buckets are joined apart, by share tasks. Measured (bench/bench_split.py shares, one
# thread): a bucket of 16,384 codes joins in 0.09 s at 256 bits radius 68 (brute force; 0.84 s
# when it gives 6.3M pairs) and 0.004-0.027 s at 128 bits radius 3; planning one takes 0.03-0.05 s.
SPLIT_CODES = 1 << 14
# Estimated join seconds per share task (`mih.Plan.seconds`: within about 3x of measured, more
# when the pairs found dominate): a bucket estimated under this is one task, as MIH shares each
# build the plan's tables (a million random codes at 128 bits radius 3, 0.11 s estimated, 0.30 s
# measured, cost 1.34 times that CPU in 2 shares).
_SHARE_SECONDS = 0.5
_SHARES_PER_WORKER = 4  # most share tasks of one bucket, per worker
_CHUNK_PAIRS = 1 << 22  # pairs of small buckets compared at a time


def pigeonhole_blocks(bits: int, radius: int) -> tuple[tuple[int, int], ...]:
    """Blocks ``(lo, width)`` of the tables of a radius: ``radius + 1`` disjoint blocks.

    Two codes at most ``radius`` bits apart differ in at most ``radius`` of the blocks, so they
    agree exactly on one of them (whether or not the blocks cover every bit). A radius of
    ``bits`` or more needs no key: one table of width 0, one bucket.

    Parameters
    ----------
    bits : int
        Code length.
    radius : int
        Hamming radius, ``>= 0``.

    Returns
    -------
    tuple of (int, int)
        Block start and width of each table, in table order.

    Examples
    --------
    >>> pigeonhole_blocks(128, 7)[:3]
    ((0, 16), (16, 16), (32, 16))
    >>> pigeonhole_blocks(64, 64)
    ((0, 0),)
    """
    m = radius + 1
    if m > bits:
        return ((0, 0),)
    widths = [bits // m + (i < bits % m) for i in range(m)]
    los = np.cumsum([0, *widths[:-1]]).tolist()
    return tuple((int(lo), min(width, MAX_KEY_BITS)) for lo, width in zip(los, widths, strict=True))


def block_keys(words: np.ndarray, lo: int, width: int) -> np.ndarray:
    """Bits ``lo .. lo + width - 1`` of every code, as uint64 (zeros for width 0)."""
    if width == 0:
        return np.zeros(words.shape[0], dtype=np.uint64)
    word, shift = lo >> 6, lo & 63
    value = words[:, word] >> np.uint64(shift)
    if shift + width > 64:
        value = value | (words[:, word + 1] << np.uint64(64 - shift))
    keys: np.ndarray = value & np.uint64((1 << width) - 1)
    return keys


@dataclass(frozen=True)
class Collapsed:
    """What a collapse task found among the codes routed to it.

    Attributes
    ----------
    rows, words : ndarray
        Each distinct code's lowest row (int64) and the code as uint64 words.
    members : ndarray, shape (k, 2), dtype int64
        ``(row, code)`` for every document of a code of two or more documents, the code named
        by its lowest row: candidates of each other.
    """

    rows: np.ndarray
    words: np.ndarray
    members: np.ndarray


def collapse(pieces: list[tuple[np.ndarray, np.ndarray]], n_words: int) -> Collapsed:
    """Collapse identical codes.

    Parameters
    ----------
    pieces : list of (rows, words)
        The documents routed to this task by every partition (`collapse_pieces`).
    n_words : int
        uint64 words per code.

    Returns
    -------
    Collapsed
    """
    rows = np.concatenate([np.zeros(0, np.int64), *(p[0] for p in pieces)])
    words = np.concatenate([np.zeros((0, n_words), np.uint64), *(p[1] for p in pieces)])
    order = np.lexsort((rows, *words.T[::-1]))
    rows, words = rows[order], words[order]
    new_code = np.ones(rows.size, dtype=bool)
    new_code[1:] = (words[1:] != words[:-1]).any(axis=1)
    code_start = np.flatnonzero(new_code)
    code_of = np.cumsum(new_code) - 1
    sizes = np.diff(np.append(code_start, rows.size))
    shared = sizes[code_of] > 1
    members = np.stack([rows[shared], rows[code_start][code_of[shared]]], axis=1)
    return Collapsed(rows[code_start], words[code_start], members.astype(np.int64))


def table_pieces(
    collapsed: Collapsed, blocks: tuple[tuple[int, int], ...], n_tasks: int
) -> list[list[tuple[np.ndarray, ...]]]:
    """Split a collapse task's distinct codes by their key on each table's block.

    Parameters
    ----------
    collapsed : Collapsed
        The distinct codes.
    blocks : tuple of (int, int)
        The tables (`pigeonhole_blocks`).
    n_tasks : int
        Join tasks per table.

    Returns
    -------
    list of list of (rows, words)
        ``[table][task]``: what goes to each join task (8 bytes of row and the code, per
        distinct code and table).
    """
    out = []
    for t, (lo, width) in enumerate(blocks):
        keys = block_keys(collapsed.words, lo, width)
        task = destination(keys[:, None], n_tasks, salt=t + 1)
        out.append(split_by(task, n_tasks, collapsed.rows, collapsed.words))
    return out


@dataclass(frozen=True)
class Table:
    """A table task's distinct codes, sorted by their key on the table's block.

    Attributes
    ----------
    rows, words, keys : ndarray
        Each code's lowest row (int64), the code as uint64 words and its key (uint64), by key.
    crowded : ndarray, shape (c, 2), dtype int64
        ``(start, stop)`` of each bucket of more than `SPLIT_CODES` codes, joined apart.
    plans : tuple of Plan
        The single-machine join's plan of each crowded bucket (`gpusimhash.join._mih.plan`).
    """

    rows: np.ndarray
    words: np.ndarray
    keys: np.ndarray
    crowded: np.ndarray
    plans: tuple[mih.Plan, ...]


@dataclass(frozen=True)
class Bucket:
    """One crowded bucket and the plan every share of its join follows.

    Attributes
    ----------
    rows, words : ndarray
        The bucket's codes: lowest rows (int64) and uint64 words.
    plan : Plan
        The plan of its join.
    """

    rows: np.ndarray
    words: np.ndarray
    plan: mih.Plan


def bucket_table(
    pieces: list[tuple[np.ndarray, np.ndarray]],
    table: int,
    blocks: tuple[tuple[int, int], ...],
    bits: int,
    radius: int,
) -> Table:
    """Sort one table task's codes by key; find and plan its buckets of over `SPLIT_CODES`.

    Parameters
    ----------
    pieces : list of (rows, words)
        Distinct codes routed to this task by every collapse task.
    table : int
        The table (index into `blocks`).
    blocks : tuple of (int, int)
        Every table's block.
    bits, radius : int
        Code length and Hamming radius.

    Returns
    -------
    Table

    Examples
    --------
    >>> import numpy as np
    >>> words = np.array([[1], [3], [2], [5]], dtype=np.uint64)
    >>> found = bucket_table([(np.arange(4), words)], 0, ((0, 1), (1, 1)), 8, 1)
    >>> found.rows.tolist(), found.keys.tolist(), found.crowded.shape
    ([2, 0, 1, 3], [0, 1, 1, 1], (0, 2))
    """
    n_words = pieces[0][1].shape[1] if pieces else -(-bits // 64)
    rows = np.concatenate([np.zeros(0, np.int64), *(p[0] for p in pieces)])
    words = np.concatenate([np.zeros((0, n_words), np.uint64), *(p[1] for p in pieces)])
    keys = block_keys(words, *blocks[table])
    order = np.argsort(keys, kind="stable")
    rows, words, keys = rows[order], words[order], keys[order]
    new = np.ones(keys.size, dtype=bool)
    new[1:] = keys[1:] != keys[:-1]
    edges = np.append(np.flatnonzero(new), keys.size)
    bounds = np.stack([edges[:-1], edges[1:]], axis=1).astype(np.int64)
    crowded = bounds[bounds[:, 1] - bounds[:, 0] > SPLIT_CODES]
    workers = threads()
    plans = tuple(
        mih.plan(words[start:stop], bits, radius, workers=workers)
        for start, stop in crowded.tolist()
    )
    return Table(rows, words, keys, crowded, plans)


def crowded_work(table: Table) -> list[tuple[int, float]]:
    """Return the codes and estimated join seconds of each crowded bucket (a task)."""
    sizes = (table.crowded[:, 1] - table.crowded[:, 0]).tolist()
    return [(size, plan.seconds) for size, plan in zip(sizes, table.plans, strict=True)]


def share_count(seconds: float, workers: int) -> int:
    """Return the share tasks of a crowded bucket's join: one per half second of it, capped.

    Parameters
    ----------
    seconds : float
        The join's estimated seconds (`gpusimhash.join._mih.Plan.seconds`).
    workers : int
        Workers of the cluster: at most four shares each.

    Returns
    -------
    int

    Examples
    --------
    >>> share_count(0.1, 2), share_count(1.2, 2), share_count(60.0, 2)
    (1, 3, 8)
    """
    return max(1, min(math.ceil(seconds / _SHARE_SECONDS), _SHARES_PER_WORKER * workers))


def crowded_bucket(table: Table, bucket: int) -> Bucket:
    """Select a crowded bucket of a table task, with its plan (a task).

    Parameters
    ----------
    table : Table
        The table task's codes.
    bucket : int
        Which crowded bucket (index into ``table.crowded``).

    Returns
    -------
    Bucket
    """
    start, stop = table.crowded[bucket].tolist()
    return Bucket(table.rows[start:stop], table.words[start:stop], table.plans[bucket])


def join_table(
    table_codes: Table,
    table: int,
    blocks: tuple[tuple[int, int], ...],
    bits: int,
    radius: int,
) -> np.ndarray:
    """Join the buckets of one table's task, but the crowded ones; return candidate pairs.

    Parameters
    ----------
    table_codes : Table
        The task's codes (`bucket_table`).
    table : int
        The table (index into `blocks`).
    blocks : tuple of (int, int)
        Every table's block.
    bits, radius : int
        Code length and Hamming radius.

    Returns
    -------
    ndarray, shape (p, 2), dtype int64
        ``(a, b)``, ``a < b``: distinct codes (lowest rows) within the radius, each pair found
        by no earlier table.
    """
    keep = np.ones(table_codes.rows.size, dtype=bool)
    for start, stop in table_codes.crowded.tolist():
        keep[start:stop] = False
    rows, words = table_codes.rows[keep], table_codes.words[keep]
    lo, width = blocks[table]
    pairs = _join_buckets(
        words, table_codes.keys[keep], bits, radius, sub_blocks(bits, radius, lo, width)
    )
    return _new_pairs(rows, words, pairs, blocks[:table])


def join_share(
    bucket: Bucket,
    share: int,
    shares: int,
    table: int,
    blocks: tuple[tuple[int, int], ...],
    bits: int,
    radius: int,
) -> np.ndarray:
    """Join one share of a crowded bucket; return its candidate pairs (a task).

    Parameters
    ----------
    bucket : Bucket
        The bucket and its plan (`crowded_bucket`).
    share, shares : int
        Which share of how many (`gpusimhash.join._mih.join_share`).
    table : int
        The bucket's table (index into `blocks`).
    blocks : tuple of (int, int)
        Every table's block.
    bits, radius : int
        Code length and Hamming radius.

    Returns
    -------
    ndarray, shape (p, 2), dtype int64
        As `join_table`: the shares of a bucket together give each of its pairs once.
    """
    pairs = mih.join_share(bucket.words, bits, radius, share, shares, chosen=bucket.plan)
    return _new_pairs(bucket.rows, bucket.words, pairs, blocks[:table])


def _new_pairs(
    rows: np.ndarray,
    words: np.ndarray,
    pairs: np.ndarray,
    earlier: tuple[tuple[int, int], ...],
) -> np.ndarray:
    """Pairs of codes (indices) found by no earlier table, as lowest rows, lower first."""
    left, right = pairs[:, 0], pairs[:, 1]
    found = np.zeros(left.size, dtype=bool)
    for lo, width in earlier:
        keys = block_keys(words, lo, width)
        found |= keys[left] == keys[right]
    a, b = rows[left[~found]], rows[right[~found]]
    return np.stack([np.minimum(a, b), np.maximum(a, b)], axis=1).astype(np.int64)


def sub_blocks(bits: int, radius: int, lo: int, width: int) -> tuple[tuple[int, int], ...]:
    """Blocks that split one table's buckets: ``radius + 1`` disjoint blocks outside its own.

    Every code of a bucket has the same bits ``lo .. lo + width - 1``, so two of them within
    ``radius`` bits agree exactly on one of ``radius + 1`` disjoint blocks of the other bits
    (pigeonhole again: multi-index hashing with threshold 0 inside each bucket). When the other
    bits are too few, one block of width 0: every pair of the bucket is compared.

    Parameters
    ----------
    bits, radius : int
        Code length and Hamming radius.
    lo, width : int
        The table's block.

    Returns
    -------
    tuple of (int, int)
        ``(lo, width)`` of each block, at most `MAX_KEY_BITS` wide.

    Examples
    --------
    >>> sub_blocks(128, 3, 0, 32)
    ((32, 24), (56, 24), (80, 24), (104, 24))
    >>> sub_blocks(128, 2, 48, 16)
    ((0, 32), (64, 32), (96, 32))
    >>> sub_blocks(16, 9, 0, 8)
    ((0, 0),)
    """
    m = radius + 1
    segments = [(0, lo), (lo + width, bits - lo - width)]
    free = lo + segments[1][1]
    if free < m:
        return ((0, 0),)
    # blocks in each segment in proportion to its bits, each block at least one bit wide
    first = min(max(round(m * lo / free), m - segments[1][1]), lo)
    blocks = []
    for (start, length), count in zip(segments, (first, m - first), strict=True):
        for i in range(count):
            w = length // count + (i < length % count)
            blocks.append((start, min(w, MAX_KEY_BITS)))
            start += w
    return tuple(blocks)


def _join_buckets(
    words: np.ndarray, keys: np.ndarray, bits: int, radius: int, blocks: tuple[tuple[int, int], ...]
) -> np.ndarray:
    """Every pair of codes within the radius that share a bucket, each once (indices).

    Buckets of up to `BUCKET_CAP` codes are split by sub-blocks, all at once; each larger one
    (real codes crowd some keys: tens of thousands of codes) goes to the single-machine MIH
    join, whose planner measures the bucket's codes and probes wider blocks.
    """
    unique, inverse, counts = np.unique(keys, return_inverse=True, return_counts=True)
    crowded = counts[inverse] > BUCKET_CAP
    found = []
    small = np.flatnonzero(~crowded & (counts[inverse] > 1))
    pairs = _bucket_pairs(words[small], keys[small], radius, blocks)
    found.append(small[pairs])
    big = np.flatnonzero(crowded)
    big = big[np.argsort(keys[big], kind="stable")]
    bounds = np.flatnonzero(np.diff(keys[big])) + 1
    for members in np.split(big, bounds):
        if members.size:
            pairs = mih.join_pairs(np.ascontiguousarray(words[members]), bits, radius)
            found.append(members[pairs])
    del unique
    return np.concatenate([np.zeros((0, 2), np.int64), *found]).astype(np.int64)


def _bucket_pairs(
    words: np.ndarray, keys: np.ndarray, radius: int, blocks: tuple[tuple[int, int], ...]
) -> np.ndarray:
    """Every pair of codes within the radius that share a bucket, each once (indices).

    Pairs of a bucket that agree on a sub-block are compared, and kept from the first
    sub-block on which they agree.
    """
    found = [np.zeros((0, 2), np.int64)]
    sub_keys = [block_keys(words, lo, width) for lo, width in blocks]
    for i, sub in enumerate(sub_keys):
        # key and sub-key are at most 32 bits each: one uint64 sorts as lexsort((sub, keys))
        both = (keys << np.uint64(MAX_KEY_BITS)) | sub
        order = np.argsort(both, kind="stable")
        ordered = both[order]
        new = np.ones(order.size, dtype=bool)
        new[1:] = ordered[1:] != ordered[:-1]
        starts = np.flatnonzero(new)
        sizes = np.diff(np.append(starts, order.size))
        shared = np.flatnonzero(sizes > 1)
        pairs_of = sizes[shared] * (sizes[shared] - 1) // 2
        cuts = np.searchsorted(
            np.cumsum(pairs_of), np.arange(_CHUNK_PAIRS, pairs_of.sum(), _CHUNK_PAIRS)
        )
        for chunk in np.split(shared, cuts):
            if not chunk.size:
                continue
            members = order[_segments.ranges(starts[chunk], sizes[chunk])]
            pairs = _segments.pairs_within(members, sizes[chunk]).reshape(-1, 2)
            left, right = pairs[:, 0], pairs[:, 1]
            keep = np.bitwise_count(words[left] ^ words[right]).sum(axis=1) <= radius
            for earlier in sub_keys[:i]:
                keep &= earlier[left] != earlier[right]
            found.append(pairs[keep])
    return np.concatenate(found).astype(np.int64)

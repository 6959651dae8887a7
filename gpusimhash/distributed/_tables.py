"""The exact join, one bucket at a time: collapse identical codes, then pigeonhole tables.

Identical codes are collapsed first: every featured document's (row, code, feature hash) goes
to the collapse task of its code's hash, which names each distinct code by its lowest row and
each *unit* (same code and same features: duplicates of each other) by its lowest row, as the
single-machine verification does. Then, for a Hamming radius ``r``, the bits are cut into
``r + 1`` disjoint blocks (`pigeonhole_blocks`): two codes within ``r`` bits agree exactly on at
least one block. Table ``t`` routes every distinct code, as (row, code) only, by its key on block
``t``, so each bucket lands whole in one task. A task joins its buckets by multi-index hashing
with threshold 0, as the single-machine MIH join does with pigeonhole blocks: ``r + 1`` disjoint
sub-blocks of the other bits (`sub_blocks`) split each bucket, pairs sharing a sub-block key are
compared, and a pair is kept from the first sub-block and the first table on which it agrees,
so every pair comes from exactly one table, with no global deduplication, and a bucket of any
size (real codes crowd some keys) costs about its sub-buckets' pairs.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from gpusimhash import _segments
from gpusimhash.distributed._partitions import mix_words
from gpusimhash.search import mih

__all__ = [
    "BUCKET_CAP",
    "Collapsed",
    "collapse",
    "join_table",
    "pigeonhole_blocks",
    "table_pieces",
]

MAX_KEY_BITS = 32  # widest key (a wider block is cut to its first 32 bits: still exact)
BUCKET_CAP = 2048  # larger buckets go to the single-machine MIH join, one at a time
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
        ``(row, unit)`` for every document of a unit of two or more documents, the unit named
        by its lowest row.
    same_code : ndarray, shape (p, 2), dtype int64
        Pairs ``(a, b)``, ``a < b``, of units that share a code: candidates.
    code_units : ndarray, shape (u, 2), dtype int64
        ``(code, unit)`` for the units of the codes with two or more units, sorted: how a pair
        of codes expands to pairs of units.
    """

    rows: np.ndarray
    words: np.ndarray
    members: np.ndarray
    same_code: np.ndarray
    code_units: np.ndarray


def collapse(pieces: list[tuple[np.ndarray, np.ndarray, np.ndarray]], n_words: int) -> Collapsed:
    """Collapse identical codes, and identical documents into units.

    Parameters
    ----------
    pieces : list of (rows, words, hashes)
        The documents routed to this task by every partition (`collapse_pieces`).
    n_words : int
        uint64 words per code.

    Returns
    -------
    Collapsed
    """
    rows = np.concatenate([np.zeros(0, np.int64), *(p[0] for p in pieces)])
    words = np.concatenate([np.zeros((0, n_words), np.uint64), *(p[1] for p in pieces)])
    hashes = np.concatenate([np.zeros(0, np.uint64), *(p[2] for p in pieces)])
    order = np.lexsort((rows, hashes, *words.T[::-1]))
    rows, words, hashes = rows[order], words[order], hashes[order]
    new_code = np.ones(rows.size, dtype=bool)
    new_code[1:] = (words[1:] != words[:-1]).any(axis=1)
    new_unit = new_code.copy()
    new_unit[1:] |= hashes[1:] != hashes[:-1]
    code_start = np.flatnonzero(new_code)
    unit_start = np.flatnonzero(new_unit)
    code_rows = np.minimum.reduceat(rows, code_start) if rows.size else rows
    unit_of = np.cumsum(new_unit) - 1
    unit_rep = rows[unit_start]
    unit_size = np.diff(np.append(unit_start, rows.size))
    in_big = unit_size[unit_of] > 1
    members = np.stack([rows[in_big], unit_rep[unit_of[in_big]]], axis=1)
    # units per code; codes with several units give same-code candidates and an expansion map
    code_of_unit = np.cumsum(new_code)[unit_start] - 1
    units_per_code = np.bincount(code_of_unit, minlength=code_start.size)
    multi = units_per_code[code_of_unit] > 1
    reps = unit_rep[multi]
    by_code = np.lexsort((reps, code_of_unit[multi]))  # codes in word order, as `sizes`
    reps, codes = reps[by_code], code_rows[code_of_unit[multi]][by_code]
    sizes = units_per_code[units_per_code > 1]
    same_code = _segments.pairs_within(reps, sizes).astype(np.int64).reshape(-1, 2)
    code_units = np.stack([codes, reps], axis=1).astype(np.int64)
    return Collapsed(
        code_rows,
        words[code_start],
        members.astype(np.int64),
        same_code,
        code_units[np.lexsort((reps, codes))],
    )


def table_pieces(
    collapsed: Collapsed, blocks: tuple[tuple[int, int], ...], n_tasks: int
) -> list[list[tuple[np.ndarray, np.ndarray]]]:
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
        task = (mix_words(keys[:, None], salt=t + 1) % np.uint64(n_tasks)).astype(np.int64)
        order = np.argsort(task, kind="stable")
        bounds = np.searchsorted(task[order], np.arange(n_tasks + 1))
        out.append(
            [
                (collapsed.rows[order[lo_:hi_]], collapsed.words[order[lo_:hi_]])
                for lo_, hi_ in itertools.pairwise(bounds)
            ]
        )
    return out


def join_table(
    pieces: list[tuple[np.ndarray, np.ndarray]],
    table: int,
    blocks: tuple[tuple[int, int], ...],
    bits: int,
    radius: int,
    code_units: np.ndarray,
) -> np.ndarray:
    """Join the buckets of one table's task; return candidate pairs of units.

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
    code_units : ndarray, shape (u, 2), dtype int64
        ``(code, unit)`` of the codes with several units, sorted (see `Collapsed`).

    Returns
    -------
    ndarray, shape (p, 2), dtype int64
        ``(a, b)``: units (lowest rows) to verify, ``a`` of the code that comes first in the
        codes' lexicographic order (word 0 first), as the single-machine join orders them.
    """
    n_words = pieces[0][1].shape[1] if pieces else -(-bits // 64)
    rows = np.concatenate([np.zeros(0, np.int64), *(p[0] for p in pieces)])
    words = np.concatenate([np.zeros((0, n_words), np.uint64), *(p[1] for p in pieces)])
    lo, width = blocks[table]
    keys = block_keys(words, lo, width)
    pairs = _join_buckets(words, keys, bits, radius, sub_blocks(bits, radius, lo, width))
    left, right = pairs[:, 0], pairs[:, 1]
    earlier = np.zeros(left.size, dtype=bool)
    for lo_, width_ in blocks[:table]:
        k = block_keys(words, lo_, width_)
        earlier |= k[left] == k[right]
    left, right = left[~earlier], right[~earlier]
    swap = _lexicographic_less(words[right], words[left])
    a = np.where(swap, rows[right], rows[left])
    b = np.where(swap, rows[left], rows[right])
    return _expand_units(a, b, code_units)


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
        order = np.lexsort((sub, keys))
        new = np.ones(order.size, dtype=bool)
        new[1:] = (keys[order][1:] != keys[order][:-1]) | (sub[order][1:] != sub[order][:-1])
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


def _lexicographic_less(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise ``a < b`` in lexicographic order of the words (word 0 first)."""
    differ = a != b
    first = differ.argmax(axis=1)
    rows = np.arange(a.shape[0])
    return differ.any(axis=1) & (a[rows, first] < b[rows, first])


def _expand_units(a: np.ndarray, b: np.ndarray, code_units: np.ndarray) -> np.ndarray:
    """Expand pairs of codes (lowest rows) to every pair of their units, in the same order."""
    if not code_units.size:
        return np.stack([a, b], axis=1).astype(np.int64)
    codes = code_units[:, 0]
    first_a, first_b = np.searchsorted(codes, a), np.searchsorted(codes, b)
    count_a = np.searchsorted(codes, a, side="right") - first_a
    count_b = np.searchsorted(codes, b, side="right") - first_b
    # a code in no row of code_units is a unit of its own, named by the code's row
    many_a, many_b = np.maximum(count_a, 1), np.maximum(count_b, 1)
    sizes = many_a * many_b
    pair = _segments.segment_of(sizes)
    rank = _segments.ranks(sizes)
    at_a, at_b = rank // many_b[pair], rank % many_b[pair]
    units = code_units[:, 1]
    left = np.where(
        count_a[pair] > 0, units[np.minimum(first_a[pair] + at_a, units.size - 1)], a[pair]
    )
    right = np.where(
        count_b[pair] > 0, units[np.minimum(first_b[pair] + at_b, units.size - 1)], b[pair]
    )
    return np.stack([left, right], axis=1).astype(np.int64)

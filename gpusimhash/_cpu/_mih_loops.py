"""Compiled loops (Numba) of the multi-index hashing join (`gpusimhash.join._mih`).

Codes are rows of ``uint64`` words (``codes.code_words``), or the same words stored word-major
(``columns[w, i]``), where the distance loops read one word of many codes contiguously and the
compiler vectorizes the popcounts. A block is a run of ``width < 64`` consecutive bits starting
at bit ``lo``; its key is those bits as an integer.

* ``block_keys``, ``bucket_order``: each code's key and a counting sort by key, so that the
  codes of one key (a bucket) are contiguous.
* ``block_distance_counts``: how many sampled pairs differ in ``0, 1, ..., t_max`` bits of a
  block, the planner's measurement of the data.
* ``gather_probes``: the codes of every bucket a key's probes reach, copied contiguous.
* ``join_block``: every pair within the radius from a range of one block's buckets, kept only
  when no block probed earlier qualifies, so each pair comes from exactly one block.
* ``link_block``: the same probes in components mode: pairs are linked in a union-find forest
  instead of emitted, and codes already linked are skipped.
* ``brute_link``: links all pairs of a row range with every later row (components mode).
* ``merge_forest``: combine the forests of several threads (``_cluster_loops.flatten_forest``
  then gives the final roots).

Every loop releases the GIL, so threads run disjoint ranges in parallel.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

from gpusimhash._cpu._runtime import ensure_cache_location

ensure_cache_location()  # before the loops below are defined

_ONE = np.uint64(1)
_SHORT = 8  # candidates below which a scalar loop beats the vectorized one


@njit(cache=True, nogil=True, inline="always")
def copy_run(
    target: np.ndarray, at: int, source: np.ndarray, start: int, count: int
) -> None:  # pragma: no cover - compiled
    """Copy ``source[start : start + count]`` into ``target[at : at + count]`` (1-D arrays).

    Assigning an array into a slice makes Numba compile the code that formats its
    shape-mismatch error (unicode concatenation, ``repr``, ``str``): seconds of a first run
    for one line. A loop compiles in a fraction of that.
    """
    for k in range(count):
        target[at + k] = source[start + k]


@intrinsic
def _ctpop(typingctx: Any, value: Any) -> Any:  # pragma: no cover - compiled
    """Count the set bits of a uint64 (LLVM ``ctpop``: one instruction on x86-64 and ARM)."""
    signature = types.uint64(types.uint64)

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> ir.Value:
        return builder.ctpop(args[0])

    return signature, codegen


_popcount = cast(Callable[[np.uint64], np.uint64], _ctpop)


@njit(cache=True, nogil=True, inline="always")
def _bits(
    words: np.ndarray, row: int, lo: int, width: int
) -> np.uint64:  # pragma: no cover - compiled
    """Bits ``lo .. lo + width - 1`` of one row of words, as an integer."""
    word = lo >> 6
    shift = np.uint64(lo & 63)
    value = words[row, word] >> shift
    if (lo & 63) + width > 64:
        value |= words[row, word + 1] << (np.uint64(64) - shift)
    bits: np.uint64 = value & ((_ONE << np.uint64(width)) - _ONE)
    return bits


@njit(cache=True, nogil=True)
def block_keys(words: np.ndarray, lo: int, width: int) -> np.ndarray:  # pragma: no cover - compiled
    """Key of every code over the block ``lo .. lo + width - 1``, as uint64."""
    keys = np.empty(words.shape[0], dtype=np.uint64)
    for row in range(words.shape[0]):
        keys[row] = _bits(words, row, lo, width)
    return keys


@njit(cache=True, nogil=True)
def bucket_order(
    keys: np.ndarray, width: int
) -> tuple[np.ndarray, np.ndarray]:  # pragma: no cover - compiled
    """Counting-sort keys below ``2**width``: return ``(starts, order)``.

    ``starts`` has ``2**width + 1`` entries; the codes with key ``k`` are
    ``order[starts[k] : starts[k + 1]]``, in increasing index order.
    """
    starts = np.zeros((1 << width) + 1, dtype=np.int64)
    for key in keys:
        starts[key + 1] += 1
    for k in range(1 << width):
        starts[k + 1] += starts[k]
    fill = starts[:-1].copy()
    order = np.empty(keys.size, dtype=np.int64)
    for row in range(keys.size):
        key = keys[row]
        order[fill[key]] = row
        fill[key] += 1
    return starts, order


@njit(cache=True, nogil=True)
def block_distance_counts(
    xor: np.ndarray, lo: int, width: int, t_max: int
) -> np.ndarray:  # pragma: no cover - compiled
    """Count the rows of ``xor`` (pair differences) with ``d <= t_max`` bits set in a block."""
    counts = np.zeros(t_max + 1, dtype=np.int64)
    for row in range(xor.shape[0]):
        d = int(_popcount(_bits(xor, row, lo, width)))
        if d <= t_max:
            counts[d] += 1
    return counts


@njit(cache=True, nogil=True, inline="always")
def _column_bits(
    columns: np.ndarray, row: int, lo: int, width: int
) -> np.uint64:  # pragma: no cover - compiled
    """`_bits` of codes stored word-major (``columns[w, row]``)."""
    word = lo >> 6
    shift = np.uint64(lo & 63)
    value = columns[word, row] >> shift
    if (lo & 63) + width > 64:
        value |= columns[word + 1, row] << (np.uint64(64) - shift)
    bits: np.uint64 = value & ((_ONE << np.uint64(width)) - _ONE)
    return bits


@njit(cache=True, nogil=True, inline="always")
def _earlier_block_qualifies(
    columns: np.ndarray, a: int, b: int, earlier: np.ndarray
) -> bool:  # pragma: no cover - compiled
    """Whether codes ``a`` and ``b`` differ in at most ``t`` bits of a block ``(lo, width, t)``."""
    for e in range(earlier.shape[0]):
        lo, width, threshold = earlier[e, 0], earlier[e, 1], earlier[e, 2]
        diff = _column_bits(columns, a, lo, width) ^ _column_bits(columns, b, lo, width)
        if int(_popcount(diff)) <= threshold:
            return True
    return False


@njit(cache=True, nogil=True, inline="always")
def _row_distances(
    columns: np.ndarray, p: int, q_first: int, q_last: int, distance: np.ndarray
) -> None:  # pragma: no cover - compiled
    """``distance[k]`` = Hamming distance of codes ``p`` and ``q_first + k``, ``q < q_last``."""
    size = q_last - q_first
    if size < _SHORT:
        # Short runs: one pass, no setup (most buckets hold a code or two).
        for q in range(q_first, q_last):
            d = np.uint64(0)
            for w in range(columns.shape[0]):
                d += _popcount(columns[w, p] ^ columns[w, q])
            distance[q - q_first] = d
        return
    # Long runs: word by word over contiguous columns, which the compiler vectorizes.
    row = columns[0, q_first:q_last]
    x = columns[0, p]
    for k in range(size):
        distance[k] = _popcount(x ^ row[k])
    for w in range(1, columns.shape[0]):
        row = columns[w, q_first:q_last]
        x = columns[w, p]
        for k in range(size):
            distance[k] += _popcount(x ^ row[k])


@njit(cache=True, nogil=True)
def gather_probes(
    columns: np.ndarray,
    present: np.ndarray,
    starts: np.ndarray,
    masks: np.ndarray,
    mask_starts: np.ndarray,
    i: int,
    positions: np.ndarray,
    gathered: np.ndarray,
) -> tuple[int, np.ndarray, np.ndarray]:  # pragma: no cover - compiled
    """Collect the codes of every bucket ``key ^ mask > key`` probed from key ``present[i]``.

    ``masks`` are the nonzero key differences in increasing order and
    ``masks[mask_starts[h] : mask_starts[h + 1]]`` those whose highest bit is ``h``: exactly
    those lead to a larger key when bit ``h`` of the key is clear, so every pair of buckets is
    probed from one side only. The buckets' positions go to ``positions`` and their codes,
    word-major and contiguous, to ``gathered`` (both grown as needed).

    Returns
    -------
    count, positions, gathered
        The number of codes collected and the (possibly reallocated) buffers.
    """
    key = present[i]
    count = 0
    for h in range(mask_starts.size - 1):
        if (key >> np.uint64(h)) & _ONE:
            continue
        for j in range(mask_starts[h], mask_starts[h + 1]):
            other = key ^ masks[j]
            first, last = starts[other], starts[other + 1]
            if count + last - first > positions.size:
                grown = np.empty(2 * (count + last - first), dtype=np.int64)
                copy_run(grown, 0, positions, 0, count)
                positions = grown
            for q in range(first, last):
                positions[count] = q
                count += 1
    if gathered.shape[1] < count:
        gathered = np.empty((columns.shape[0], positions.size), dtype=np.uint64)
    for w in range(columns.shape[0]):
        for k in range(count):
            gathered[w, k] = columns[w, positions[k]]
    return count, positions, gathered


@njit(cache=True, nogil=True, inline="always")
def _gathered_distances(
    columns: np.ndarray, p: int, gathered: np.ndarray, size: int, distance: np.ndarray
) -> None:  # pragma: no cover - compiled
    """``distance[k]`` = distance of code ``p`` to gathered code ``k``: one vectorized pass."""
    x = columns[0, p]
    row = gathered[0]
    for k in range(size):
        distance[k] = _popcount(x ^ row[k])
    for w in range(1, columns.shape[0]):
        x = columns[w, p]
        row = gathered[w]
        for k in range(size):
            distance[k] += _popcount(x ^ row[k])


@njit(cache=True, nogil=True, inline="always")
def _bucket_candidates(
    columns: np.ndarray,
    present: np.ndarray,
    bounds: np.ndarray,
    starts: np.ndarray,
    masks: np.ndarray,
    mask_starts: np.ndarray,
    i: int,
    positions: np.ndarray,
    gathered: np.ndarray,
    distance: np.ndarray,
) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:  # pragma: no cover - compiled
    """Gather the probed codes of bucket ``i`` and size ``distance`` for its longest pass.

    Returns the number of codes gathered (`gather_probes`; none without masks) and the
    buffers, each reallocated when too small: ``distance`` holds a distance per gathered code
    and per code of the bucket.
    """
    n_gathered = 0
    if masks.size:
        n_gathered, positions, gathered = gather_probes(
            columns, present, starts, masks, mask_starts, i, positions, gathered
        )
    longest = max(n_gathered, bounds[i + 1] - bounds[i])
    if distance.size < longest:
        distance = np.empty(2 * longest, dtype=np.uint64)
    return n_gathered, positions, gathered, distance


@njit(cache=True, nogil=True)
def join_block(
    columns: np.ndarray,
    ids: np.ndarray,
    present: np.ndarray,
    bounds: np.ndarray,
    starts: np.ndarray,
    masks: np.ndarray,
    mask_starts: np.ndarray,
    radius: int,
    earlier: np.ndarray,
    lo: int,
    hi: int,
) -> np.ndarray:  # pragma: no cover - compiled
    """Pairs found from the buckets ``present[lo:hi]`` of one block.

    ``columns`` (codes word-major: ``columns[w, position]``) and ``ids`` are in bucket order;
    ``present`` lists the nonempty keys in increasing order, ``bounds[i] : bounds[i + 1]`` the
    positions of key ``present[i]``. Each bucket is compared with itself (each pair once) and,
    in one long vectorized pass per code, with the codes of every larger bucket its probes reach
    (`gather_probes`), so every pair is examined at most once per block. A pair is kept when its
    distance is at most ``radius`` and no block of ``earlier`` (rows ``(lo, width, threshold)``)
    qualifies.

    Returns
    -------
    pairs : ndarray, shape (m, 2), dtype int64
        Pairs of ``ids``, the smaller first, in scan order.
    """
    out: np.ndarray = np.empty((1024, 2), dtype=np.int64)
    count = 0
    distance = np.empty(1024, dtype=np.uint64)
    positions = np.empty(1024, dtype=np.int64)
    gathered = np.empty((columns.shape[0], 1024), dtype=np.uint64)
    for i in range(lo, hi):
        p_first, p_last = bounds[i], bounds[i + 1]
        n_gathered, positions, gathered, distance = _bucket_candidates(
            columns, present, bounds, starts, masks, mask_starts, i, positions, gathered, distance
        )
        for p in range(p_first, p_last):
            # The rest of the bucket (part 0), then the gathered codes (part 1).
            for part in range(2 if n_gathered else 1):
                if part == 0:
                    size = max(p_last - p - 1, 0)
                    _row_distances(columns, p, p + 1, p_last, distance)
                else:
                    size = n_gathered
                    _gathered_distances(columns, p, gathered, n_gathered, distance)
                for k in range(size):
                    if distance[k] > radius:
                        continue
                    q = p + 1 + k if part == 0 else positions[k]
                    if earlier.shape[0] and _earlier_block_qualifies(columns, p, q, earlier):
                        continue
                    if count == out.shape[0]:
                        grown = np.empty((2 * count, 2), dtype=np.int64)
                        for copied in range(count):  # no broadcast: no error path to compile
                            grown[copied, 0] = out[copied, 0]
                            grown[copied, 1] = out[copied, 1]
                        out = grown
                    a, b = ids[p], ids[q]
                    out[count, 0] = min(a, b)
                    out[count, 1] = max(a, b)
                    count += 1
    found: np.ndarray = out[:count].copy()
    return found


@njit(cache=True, nogil=True, inline="always")
def _root(parent: np.ndarray, node: int) -> int:  # pragma: no cover - compiled
    """Root of ``node``'s tree, halving the path on the way."""
    while parent[node] != node:
        parent[node] = parent[parent[node]]
        node = parent[node]
    return node


@njit(cache=True, nogil=True, inline="always")
def _link(parent: np.ndarray, a: int, b: int) -> int:  # pragma: no cover - compiled
    """Join the trees of roots ``a`` and ``b`` under the smaller root, and return it."""
    if a < b:
        parent[b] = a
        return a
    parent[a] = b
    return b


@njit(cache=True, nogil=True)
def link_block(
    columns: np.ndarray,
    ids: np.ndarray,
    present: np.ndarray,
    bounds: np.ndarray,
    starts: np.ndarray,
    masks: np.ndarray,
    mask_starts: np.ndarray,
    radius: int,
    parent: np.ndarray,
    ranges: np.ndarray,
) -> None:  # pragma: no cover - compiled
    """Link into the forest ``parent`` the pairs of ``join_block``'s probes within the radius.

    ``ranges`` rows are ranges ``(lo, hi)`` of ``present``. Each position caches a root of its
    code's tree (trees only ever merge, so a cached root equal to another code's root proves
    both are linked). Once a code of a bucket finds every candidate it probes (the rest of its
    bucket, or the gathered codes) in its own tree, later codes of the bucket cached in that
    tree skip those candidates without a comparison, so a cluster whose codes share buckets
    costs about one scan per bucket instead of one comparison per pair of codes.
    """
    cached = np.empty(ids.size, dtype=np.int64)
    for position in range(ids.size):
        cached[position] = _root(parent, ids[position])
    distance = np.empty(1024, dtype=np.uint64)
    positions = np.empty(1024, dtype=np.int64)
    gathered = np.empty((columns.shape[0], 1024), dtype=np.uint64)
    for r in range(ranges.shape[0]):
        for i in range(ranges[r, 0], ranges[r, 1]):
            p_first, p_last = bounds[i], bounds[i + 1]
            n_gathered, positions, gathered, distance = _bucket_candidates(
                columns,
                present,
                bounds,
                starts,
                masks,
                mask_starts,
                i,
                positions,
                gathered,
                distance,
            )
            for part in range(2 if n_gathered else 1):
                whole = -1  # a tree known to hold every candidate of the codes scanned
                for p in range(p_first, p_last):
                    if cached[p] == whole:
                        continue
                    if part == 0:
                        size = max(p_last - p - 1, 0)
                        _row_distances(columns, p, p + 1, p_last, distance)
                    else:
                        size = n_gathered
                        _gathered_distances(columns, p, gathered, n_gathered, distance)
                    hits = 0
                    for k in range(size):
                        hits += distance[k] <= radius
                    if hits == 0:
                        continue  # nothing to link (and the candidates are not known whole)
                    root = _root(parent, ids[p])
                    inside = True
                    for k in range(size):
                        q = p + 1 + k if part == 0 else positions[k]
                        if distance[k] > radius:
                            inside = inside and cached[q] == root
                            continue
                        if cached[q] != root:
                            other_root = _root(parent, ids[q])
                            if other_root != root:
                                root = _link(parent, root, other_root)
                            cached[q] = root
                    cached[p] = root
                    if inside:
                        whole = root


@njit(cache=True, nogil=True)
def merge_forest(parent: np.ndarray, other: np.ndarray) -> None:  # pragma: no cover - compiled
    """Link into ``parent`` every edge ``(node, other[node])`` of a second forest."""
    for node in range(other.size):
        a, b = _root(parent, node), _root(parent, other[node])
        if a != b:
            _link(parent, a, b)


@njit(cache=True, nogil=True)
def brute_link(
    columns: np.ndarray, radius: int, parent: np.ndarray, lo: int, hi: int
) -> None:  # pragma: no cover - compiled
    """Link every pair within ``radius`` of a row in ``lo .. hi - 1`` and a later row."""
    n = columns.shape[1]
    distance = np.empty(max(n, _SHORT), dtype=np.uint64)
    for i in range(lo, hi):
        _row_distances(columns, i, i + 1, n, distance)
        root = _root(parent, i)
        for k in range(n - i - 1):
            if distance[k] <= radius:
                other_root = _root(parent, i + 1 + k)
                if other_root != root:
                    root = _link(parent, root, other_root)

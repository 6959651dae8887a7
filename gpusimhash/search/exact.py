"""Exact near-duplicate join over packed SimHash codes.

Every pair of codes within a Hamming radius is found exactly. Identical codes are collapsed
first, so a corpus with thousands of copies of one document costs one code inside the search.
Candidates come from Manku-style permuted tables: the free bits are cut into ``m`` blocks, and
two codes within ``r`` bits agree on at least ``m - r`` blocks (pigeonhole), so each table keys
the codes on one combination of ``m - r`` blocks, sorts them, and pairs up codes inside each run
of equal keys; a popcount on ``uint64`` words then keeps the true pairs. ``m`` is chosen per
call from a cost model (``m = r + 1`` is plain pigeonhole blocking), with an exact brute force
(FAISS range search) where that is cheaper. A run of equal keys too large to pair up directly
(skewed data) is searched again, recursively, on the bits its key does not cover.
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from itertools import combinations

import faiss
import numpy as np

from gpusimhash import _backend, _segments, _validate
from gpusimhash.codes import code_words
from gpusimhash.search._join import (
    DuplicateGroups,
    collapse,
    keys_to_pairs,
    pair_keys,
    resolve_radius,
    threads,
)

__all__ = ["near_duplicate_groups", "near_duplicates"]

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
# Cost model, in seconds per unit, measured on a 2-core x86 machine (only ratios matter).
_SORT_COST = 6e-8  # per code per table: key extraction, sort, gather
_CANDIDATE_COST = 3e-8  # per candidate pair: generation and popcount check
_BRUTE_COST = 2e-10  # per pair in a FAISS range search
_MAX_TABLES = 512
_GIANT_RUN = 4096  # runs of equal keys larger than this are searched recursively
_CHUNK_PAIRS = 1 << 22
_MAX_DEPTH = 3  # recursions into giant runs before brute force
_RADIX_MAX_BITS = 32  # wider keys are hashed to this many bits
_PARALLEL_MIN = 50_000  # codes in a search before tables run in parallel threads  # candidate pairs generated per batch (bounds memory)


def near_duplicates(codes, *, max_distance=None, min_cosine=None, device="auto") -> np.ndarray:
    """Find every pair of codes within a Hamming radius, exactly.

    Parameters
    ----------
    codes : ndarray or cupy.ndarray, shape (n, bits // 8), dtype uint8
        Packed fingerprints (FAISS layout), on the host or on a GPU.
    max_distance : int, optional
        Hamming radius: pairs with ``hamming(codes[i], codes[j]) <= max_distance``.
    min_cosine : float, optional
        Alternatively, minimum estimated cosine ``cos(pi * d / bits)``; converted with
        `cosine_radius`. Give exactly one of the two.
    device : {"auto", "cpu", "gpu"}
        Where the join runs: ``"auto"`` on the GPU when `codes` are a CuPy array, else on the
        CPU; ``"gpu"`` copies host codes to the device, ``"cpu"`` device codes to the host.
        The result is the same NumPy array wherever it is computed.

    Returns
    -------
    pairs : ndarray, shape (m, 2), dtype int64
        Every pair ``(i, j)``, ``i < j``, within the radius: no miss, no extra, no repeat,
        sorted by ``i`` then ``j``. A group of ``g`` identical codes alone yields
        ``g * (g - 1) / 2`` pairs; use `near_duplicate_groups` or
        `gpusimhash.cluster_near_duplicates` to avoid materializing them.

    Raises
    ------
    TypeError
        `codes` not a uint8 array.
    ValueError
        `codes` not 2-D, both or neither threshold given, a threshold out of range, or an
        unknown `device`.
    RuntimeError
        ``device="gpu"``, or CuPy codes, where no GPU is usable.

    Examples
    --------
    >>> import numpy as np
    >>> codes = np.array([[0b0000], [0b0111], [0b0001], [0b0000]], dtype=np.uint8)
    >>> near_duplicates(codes, max_distance=1).tolist()
    [[0, 2], [0, 3], [2, 3]]
    """
    groups = near_duplicate_groups(
        codes, max_distance=max_distance, min_cosine=min_cosine, device=device
    )
    return groups.pairs()


def near_duplicate_groups(
    codes, *, max_distance=None, min_cosine=None, device="auto"
) -> DuplicateGroups:
    """Find near-duplicates in collapsed form, without expanding identical codes into pairs.

    Parameters and thresholds are those of `near_duplicates`.

    Returns
    -------
    groups : DuplicateGroups
        Distinct-code index of every input code and the pairs of distinct codes within the
        radius; ``groups.pairs()`` gives the output of `near_duplicates`. NumPy arrays, the
        same on either device.

    Raises
    ------
    TypeError
        `codes` not a uint8 array.
    ValueError
        `codes` not 2-D, both or neither threshold given, a threshold out of range, or an
        unknown `device`.
    RuntimeError
        ``device="gpu"``, or CuPy codes, where no GPU is usable.

    Examples
    --------
    >>> import numpy as np
    >>> codes = np.zeros((1000, 8), dtype=np.uint8)
    >>> groups = near_duplicate_groups(codes, max_distance=3)
    >>> groups.n_unique, len(groups.unique_pairs)
    (1, 0)
    """
    if _on_gpu(codes, device):
        from gpusimhash._gpu import join as gpu_join

        codes = gpu_join.device_codes(codes)
        radius = resolve_radius(
            codes.shape[1] * 8, max_distance=max_distance, min_cosine=min_cosine
        )
        inverse, unique_pairs = gpu_join.groups(codes, radius)
        return DuplicateGroups(inverse=inverse, unique_pairs=unique_pairs, max_distance=radius)
    codes = _validate.codes(_backend.to_host(codes))
    bits = codes.shape[1] * 8
    radius = resolve_radius(bits, max_distance=max_distance, min_cosine=min_cosine)
    words = code_words(codes)
    unique_words, inverse = collapse(words)
    n_unique = unique_words.shape[0]
    found: list[np.ndarray] = []
    _join(unique_words, np.arange(n_unique, dtype=np.int64), [(0, bits)], radius, found)
    keys = np.unique(np.concatenate(found)) if found else np.empty(0, dtype=np.int64)
    unique_pairs = keys_to_pairs(keys, n_unique)
    return DuplicateGroups(inverse=inverse, unique_pairs=unique_pairs, max_distance=radius)


def _on_gpu(codes: object, device: str) -> bool:
    """Whether the join runs on the GPU: ``device`` or, for ``"auto"``, where `codes` are."""
    device = _validate.device(device)
    if device == "auto":
        return _backend.is_device_array(codes)
    if device == "gpu":
        _backend.require_gpu()
    return device == "gpu"


def _join(words, idx, free, radius, found, depth=0) -> None:
    """Append to `found` the keys ``a * n + b`` of pairs of ``words[idx]`` within `radius`.

    All codes in `idx` agree on the bits outside the `free` ranges, so their distance is
    decided on the free bits alone. `depth` counts the recursions into giant runs.
    """
    s = idx.size
    if s < 2:
        return
    n_free = sum(hi - lo for lo, hi in free)
    if n_free <= radius:
        left, right = np.triu_indices(s, k=1)
        _append_pairs(idx[left], idx[right], words.shape[0], found)
        return
    plan = _plan(s, n_free, radius) if depth < _MAX_DEPTH else None
    if plan is None:
        _brute_force(words, idx, radius, found)
        return
    n_blocks, n_keyed = plan
    blocks = _split(free, n_blocks)
    tables = [
        [seg for b in chosen for seg in blocks[b]]
        for chosen in combinations(range(n_blocks), n_keyed)
    ]

    def run(segments):
        return _table(words, idx, segments, free, radius, depth)

    if s < _PARALLEL_MIN:
        results = map(run, tables)
    else:
        # NumPy releases the GIL in sorts, gathers and ufuncs: tables run in parallel threads.
        with ThreadPoolExecutor(max_workers=threads()) as pool:
            results = list(pool.map(run, tables))
    for result in results:
        found.extend(result)


def _plan(s: int, n_free: int, radius: int):
    """Cheapest ``(n_blocks, n_keyed)`` table layout, or None for brute force."""
    best_cost = s * (s - 1) / 2 * _BRUTE_COST
    best = None
    for n_blocks in range(radius + 1, min(n_free, radius + 12) + 1):
        n_keyed = n_blocks - radius
        tables = math.comb(n_blocks, n_keyed)
        if tables > _MAX_TABLES:
            break
        key_bits = n_free * n_keyed // n_blocks  # the smallest keyed total
        candidates = s * s / 2 / 2.0 ** min(key_bits, 60)
        cost = tables * (s * _SORT_COST + candidates * _CANDIDATE_COST)
        if cost < best_cost:
            best_cost, best = cost, (n_blocks, n_keyed)
    return best


def _split(free, n_blocks):
    """Cut the free bit ranges into `n_blocks` near-equal blocks of word-local segments."""
    n_free = sum(hi - lo for lo, hi in free)
    sizes = [n_free // n_blocks + (b < n_free % n_blocks) for b in range(n_blocks)]
    blocks, ranges = [], [list(r) for r in free]
    for size in sizes:
        block = []
        while size:
            lo, hi = ranges[0]
            take = min(size, hi - lo, 64 - lo % 64)
            block.append((lo, lo + take))
            size -= take
            if lo + take == hi:
                ranges.pop(0)
            else:
                ranges[0][0] = lo + take
        blocks.append(block)
    return blocks


def _subtract(free, segments):
    """Free ranges minus the segments (all sorted, segments inside the free ranges)."""
    bits = np.zeros(max(hi for _, hi in free), dtype=bool)
    for lo, hi in free:
        bits[lo:hi] = True
    for lo, hi in segments:
        bits[lo:hi] = False
    edges = np.flatnonzero(np.diff(np.concatenate([[False], bits, [False]]).astype(np.int8)))
    return [(int(lo), int(hi)) for lo, hi in zip(edges[::2], edges[1::2], strict=True)]


def _key(words, idx, segments, key_bits):
    """Key of each code over the segments, in `key_bits` bits.

    Exact when the segments fit in `key_bits` bits; otherwise a hash of them (a collision only
    adds candidates, which the distance check removes).
    """
    total = sum(hi - lo for lo, hi in segments)
    key = np.zeros(idx.size, dtype=np.uint64)
    for lo, hi in segments:
        width = hi - lo
        value = words[idx, lo // 64] >> np.uint64(lo % 64)
        if width < 64:
            value &= np.uint64((1 << width) - 1)
        if total <= key_bits:
            key = (key << np.uint64(width)) | value
        else:
            key = (key ^ value) * _GOLDEN
            key ^= key >> np.uint64(29)
    if total > key_bits:
        key >>= np.uint64(64 - key_bits)
    return key


def _table(words, idx, segments, free, radius, depth) -> list[np.ndarray]:
    """Pair up the codes of `idx` that share a key over `segments`, keep those within radius.

    Returns the keys ``a * n + b`` of the pairs found, in pieces.
    """
    found: list[np.ndarray] = []
    key_bits = min(sum(hi - lo for lo, hi in segments), _RADIX_MAX_BITS)
    key = _key(words, idx, segments, key_bits)
    order = _radix_argsort(key, key_bits)
    sorted_key = key[order]
    change = np.flatnonzero(sorted_key[1:] != sorted_key[:-1]) + 1
    starts = np.concatenate([[0], change])
    ends = np.concatenate([change, [idx.size]])
    sizes = ends - starts
    giant = sizes > _GIANT_RUN
    if giant.any():
        rest = _subtract(free, sorted(segments))
        for start, end in zip(starts[giant], ends[giant], strict=True):
            _join(words, idx[order[start:end]], rest, radius, found, depth + 1)
    small = (sizes >= 2) & ~giant
    if not small.any():
        return found
    members = idx[order]
    sorted_words = words[members]
    # For each position in a small run: how many later positions share its run.
    run_end = np.repeat(np.where(small, ends, 0), sizes)
    later = run_end - np.arange(idx.size)
    pos = np.flatnonzero(later > 1)
    counts = later[pos] - 1
    bounds = np.searchsorted(np.cumsum(counts), np.arange(_CHUNK_PAIRS, counts.sum(), _CHUNK_PAIRS))
    for chunk_pos, chunk_counts in zip(
        np.split(pos, bounds), np.split(counts, bounds), strict=True
    ):
        left = chunk_pos[_segments.segment_of(chunk_counts)]
        right = left + 1 + _segments.ranks(chunk_counts)
        distance = np.bitwise_count(sorted_words[left, 0] ^ sorted_words[right, 0]).astype(np.int32)
        for w in range(1, words.shape[1]):
            distance += np.bitwise_count(sorted_words[left, w] ^ sorted_words[right, w])
        keep = distance <= radius
        _append_pairs(members[left[keep]], members[right[keep]], words.shape[0], found)
    return found


def _radix_argsort(key: np.ndarray, key_bits: int) -> np.ndarray:
    """Stable argsort of keys below ``2**key_bits``: LSD radix, NumPy's radix sort per 16 bits."""
    order = np.arange(key.size)
    for shift in range(0, key_bits, 16):
        digit = ((key[order] >> np.uint64(shift)) & np.uint64(0xFFFF)).astype(np.uint16)
        order = order[np.argsort(digit, kind="stable")]
    return order


def _brute_force(words, idx, radius, found) -> None:
    """Exact all-pairs search of ``words[idx]`` with a FAISS range search."""
    codes = np.ascontiguousarray(words[idx]).view(np.uint8)
    index = faiss.IndexBinaryFlat(codes.shape[1] * 8)
    index.add(codes)
    lims, distances, labels = index.range_search(codes, radius + 1)  # strict: d < radius + 1
    query = _segments.segment_of(np.diff(lims.astype(np.int64)))
    keep = (labels > query) & (distances <= radius)
    _append_pairs(idx[query[keep]], idx[labels[keep]], words.shape[0], found)


def _append_pairs(a: np.ndarray, b: np.ndarray, n: int, found: list[np.ndarray]) -> None:
    """Append the keys of pairs ``(a[k], b[k])`` to ``found``."""
    if a.size:
        found.append(pair_keys(a, b, n))

"""Multi-index hashing (MIH) join over distinct codes, and the planner that configures it.

The bits are cut into ``m`` blocks of consecutive bits, and block ``i`` gets a threshold
``t_i >= -1`` with ``sum(t_i) = r - m + 1``. Two codes within ``r`` bits then differ in at most
``t_i`` bits of some block (generalized pigeonhole: were every block at least ``t_i + 1`` bits
apart, the codes would be at least ``r + 1`` apart), so probing each block's buckets within its
threshold finds every pair; a block with ``t_i = -1`` is not probed at all, and ``m = r + 1``
blocks with ``t_i = 0`` is plain pigeonhole blocking. Each probed block counting-sorts the
codes by key, so a bucket is a contiguous run of codes; for each bucket the codes of every
larger bucket its probes reach are gathered into one contiguous run, and each code of the
bucket is compared with the rest of its bucket and with that run in vectorized passes. A pair
is thus examined at most once per block (inside a bucket from its first code, across buckets
from the smaller key) and kept only from the first probed block that qualifies, so every pair
is emitted exactly once, with no deduplication pass.

The planner measures the data instead of assuming uniform codes: real SimHash codes have
biased, correlated bits, so some buckets hold hundreds of codes and others none. It samples
random pairs of distinct codes, counts how many differ in ``0, 1, 2, ...`` bits of each
candidate block, and prices every block and threshold (building the table, probing it, and
comparing the candidates those counts predict); a dynamic program spends the ``r + 1``
threshold units where they cost least, for each block count, and brute force (FAISS's exhaustive
range search) wins where it is cheaper (few codes, codes crowded into a few buckets, or radii
so large that most blocks would have to be probed widely).

In components mode (`join_roots`) pairs are not emitted but linked in a union-find forest, and
a code already linked to all of its candidates skips them, so a dense cluster costs about one
scan per bucket instead of one comparison per pair of codes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from itertools import combinations
from types import ModuleType
from typing import Any, TypeVar

import numpy as np

from gpusimhash import _progress, _segments
from gpusimhash._cpu._cluster_loops import flatten_forest
from gpusimhash._cpu._threads import threads
from gpusimhash.codes import code_words
from gpusimhash.join._groups import DuplicateGroups, collapse, keys_to_pairs

# Cost model, seconds per unit on one core of a 2-core x86 machine (only ratios matter).
_BRUTE_COST = 0.25e-9  # per pair in the brute force, per 64-bit word plus one
_CANDIDATE_COST = 0.25e-9  # per candidate compared, per 64-bit word plus one
_PROBE_COST = 7e-9  # per bucket probed
_BUILD_COST = 15e-9  # per code per probed block: key, counting sort, gathers
_TABLE_COST = 15e-9  # per bucket of a block's table: counts, starts, nonempty keys
_BRUTE_ALWAYS = 1 << 16  # pairs below which brute force runs without measuring the data
_BRUTE_QUERIES = 4096  # codes per FAISS range search in the brute force
_MAX_WIDTH = 22  # widest probed block: its table has 2**22 + 1 bucket starts
_MAX_MASKS = 1 << 16  # most key differences probed per code and block
_SAMPLE_PAIRS = 1 << 17  # random pairs measured by the planner
_CHUNKS_PER_THREAD = 8  # work ranges per thread (load balance across skewed buckets)
_RANGES_PER_SHARE = 16  # key ranges per share of a block (never from a machine's threads)
_T = TypeVar("_T")


def _loops() -> ModuleType:
    """Return the join's Numba loops (`gpusimhash._cpu._mih_loops`), imported on first use.

    Importing them imports Numba and loads (or compiles) them: the jobs that never join codes
    (the feature join's dedup, fingerprinting, search) do not pay for it.
    """
    from gpusimhash._cpu import _mih_loops

    return _mih_loops


@dataclass(frozen=True)
class Plan:
    """How a join runs: tiled brute force, or MIH over probed blocks.

    Attributes
    ----------
    method : {"brute", "mih"}
        The chosen path.
    blocks : tuple of (int, int, int)
        For MIH, the probed blocks in probing order, each ``(lo, width, threshold)``: bits
        ``lo .. lo + width - 1``, probed within ``threshold`` bits; empty for brute force.
    seconds : float
        The planner's estimate of the join's time.

    Examples
    --------
    >>> Plan("mih", ((0, 16, 1), (16, 16, 1)), 0.5).blocks[1]
    (16, 16, 1)
    """

    method: str
    blocks: tuple[tuple[int, int, int], ...]
    seconds: float


def plan(words: np.ndarray, bits: int, radius: int, *, workers: int = 1) -> Plan:
    """Choose brute force, or MIH blocks and thresholds, for a join of distinct codes.

    Parameters
    ----------
    words : ndarray, shape (n, w), dtype uint64
        Distinct codes as words (`gpusimhash.codes.code_words`).
    bits : int
        Code length; bits from ``bits`` on are padding and never probed.
    radius : int
        Hamming radius, ``radius >= 0``.
    workers : int
        Threads the join will use.

    Returns
    -------
    Plan
        The plan with the least estimated time. Whatever it is, the join is exact.

    Examples
    --------
    A handful of codes is compared directly; 100,000 random codes probe blocks whose
    thresholds cover the radius (``sum(t + 1) = radius + 1``):

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> plan(rng.integers(0, 2**63, (100, 1), dtype=np.uint64), 64, 3).method
    'brute'
    >>> chosen = plan(rng.integers(0, 2**63, (100_000, 1), dtype=np.uint64), 64, 3)
    >>> chosen.method, sum(t + 1 for _, _, t in chosen.blocks)
    ('mih', 4)
    """
    return plan_for_sample(words, words.shape[0], bits, radius, workers=workers)


def plan_for_sample(
    sample: np.ndarray, n: int, bits: int, radius: int, *, workers: int = 1
) -> Plan:
    """Choose the plan of `plan` for ``n`` distinct codes from a uniform sample of them.

    The planner measures only random pairs of codes, so a uniform random sample of the codes
    (every code of them: `plan`) prices the join of all ``n`` as the codes themselves would,
    up to sampling noise: a cluster, whose codes are spread over machines, plans from a sample.

    Parameters
    ----------
    sample : ndarray, shape (s, w), dtype uint64
        Distinct codes drawn uniformly from the ``n`` codes, as words.
    n : int
        Number of distinct codes the join will have.
    bits, radius, workers
        As in `plan`.

    Returns
    -------
    Plan
        As `plan`; ``seconds`` is the estimate for all ``n`` codes.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> sample = rng.integers(0, 2**63, (4096, 1), dtype=np.uint64)
    >>> plan_for_sample(sample, 10**6, 64, 3).method
    'mih'
    >>> plan_for_sample(sample, 10**6, 64, 40).method
    'brute'
    """
    pairs = n * (n - 1) / 2
    brute = Plan("brute", (), brute_seconds(n, sample.shape[1]) / workers)
    sampled = sample.shape[0] * (sample.shape[0] - 1) / 2
    if n < 2 or pairs < _BRUTE_ALWAYS or radius >= bits or sampled < 1:
        return brute
    xor = sample_xor(sample, int(min(_SAMPLE_PAIRS, pairs)))
    best = brute
    log_n = math.ceil(math.log2(n))
    min_width = max(4, log_n - 8)
    max_width = min(_MAX_WIDTH, max(log_n + 3, min_width))
    for m in sorted({-(-bits // width) for width in range(min_width, max_width + 1)}):
        candidate = _plan_blocks(xor, n, bits, radius, m, workers)
        if candidate is not None and candidate.seconds < best.seconds:
            best = candidate
    return best


def brute_seconds(n: int, n_words: int) -> float:
    """Return the cost model's one-core seconds of brute force over ``n`` codes of ``n_words``.

    Examples
    --------
    >>> round(brute_seconds(100_000, 4), 2)
    6.25
    """
    return n * (n - 1) / 2 * (n_words + 1) * _BRUTE_COST


def candidate_seconds(candidates: float, n_words: int) -> float:
    """Return the cost model's one-core seconds of comparing ``candidates`` pairs of codes.

    Examples
    --------
    >>> candidate_seconds(4e9, 4)
    5.0
    """
    return candidates * (n_words + 1) * _CANDIDATE_COST


def sample_xor(words: np.ndarray, size: int) -> np.ndarray:
    """Return the XOR of ``size`` random pairs of distinct rows (a fixed seed: deterministic).

    What the planner measures: in how many bits of each block random pairs of codes differ.

    Examples
    --------
    >>> import numpy as np
    >>> sample_xor(np.array([[1], [2]], dtype=np.uint64), 3).ravel().tolist()
    [3, 3, 3]
    """
    n = words.shape[0]
    rng = np.random.default_rng(0)
    first = rng.integers(0, n, size)
    second = (first + rng.integers(1, n, size)) % n
    xor: np.ndarray = words[first] ^ words[second]
    return xor


def _plan_blocks(
    xor: np.ndarray, n: int, bits: int, radius: int, m: int, workers: int
) -> Plan | None:
    """Cheapest thresholds for ``m`` near-equal blocks, or None when none is feasible.

    Block ``i`` with threshold ``t`` costs its table, its probes and the candidates the sampled
    pairs predict; a dynamic program over the blocks spends the ``radius + 1`` threshold units
    (``sum(t_i + 1) = radius + 1``) where they cost least.
    """
    widths = [bits // m + (i < bits % m) for i in range(m)]
    los = np.cumsum([0, *widths[:-1]]).tolist()
    budget = radius + 1
    pairs = n * (n - 1) / 2
    compare = (xor.shape[1] + 1) * _CANDIDATE_COST
    # cost[i, u]: block i probed within u - 1 bits (u = 0: not probed).
    cost = np.full((m, budget + 1), np.inf)
    cost[:, 0] = 0.0
    for i, (lo, width) in enumerate(zip(los, widths, strict=True)):
        if width > _MAX_WIDTH:
            continue  # too wide for a table: never probed
        t_max = min(budget - 1, width)
        while t_max > 0 and _ball(width, t_max) > _MAX_MASKS:
            t_max -= 1
        near = np.cumsum(_loops().block_distance_counts(xor, lo, width, t_max)) / xor.shape[0]
        table = n * _BUILD_COST + (1 << width) * _TABLE_COST
        for t in range(t_max + 1):
            probes = n * (_ball(width, t) + 1) / 2
            cost[i, t + 1] = table + (probes * _PROBE_COST + pairs * near[t] * compare) / workers
    # best[i, u]: least cost of blocks i.. spending u units; units[i, u]: block i's share.
    best = np.full((m + 1, budget + 1), np.inf)
    best[m, 0] = 0.0
    units = np.zeros((m, budget + 1), dtype=np.int64)
    spend = np.arange(budget + 1)
    rest = spend[:, None] - spend[None, :]  # rest[u, k]: units left to later blocks
    for i in range(m - 1, -1, -1):
        totals = np.where(rest >= 0, cost[i][None, :] + best[i + 1][np.maximum(rest, 0)], np.inf)
        units[i] = np.argmin(totals, axis=1)
        best[i] = totals[spend, units[i]]
    if not np.isfinite(best[0, budget]):
        return None
    blocks, u = [], budget
    for i in range(m):
        if units[i, u]:
            blocks.append((los[i], widths[i], int(units[i, u]) - 1))
        u -= int(units[i, u])
    # Cheapest blocks first: in components mode they link most codes before the costly ones.
    blocks.sort(key=lambda block: block[2])
    return Plan("mih", tuple(blocks), float(best[0, budget]))


def _ball(width: int, threshold: int) -> int:
    """Return the number of keys within ``threshold`` bits of a ``width``-bit key."""
    return sum(math.comb(width, d) for d in range(threshold + 1))


def _masks(width: int, threshold: int) -> np.ndarray:
    """Every key difference of at most ``threshold`` bits (zero first), increasing, as uint64."""
    masks = [
        sum(1 << b for b in chosen)
        for d in range(min(threshold, width) + 1)
        for chosen in combinations(range(width), d)
    ]
    return np.array(sorted(masks), dtype=np.uint64)


@dataclass(frozen=True)
class _Block:
    """One block's table and the key differences it probes (see `_mih_loops.join_block`)."""

    columns: np.ndarray
    ids: np.ndarray
    present: np.ndarray
    bounds: np.ndarray
    starts: np.ndarray
    masks: np.ndarray
    mask_starts: np.ndarray

    def ranges(self, parts: int) -> np.ndarray:
        """Ranges ``(lo, hi)`` of the nonempty keys, with near-equal numbers of codes each."""
        cut = np.searchsorted(self.bounds, np.linspace(0, self.ids.size, parts + 1)[1:-1])
        edges = np.unique(np.concatenate([[0], cut, [self.present.size]]))
        return np.stack([edges[:-1], edges[1:]], axis=1)

    def costs(self, ranges: np.ndarray) -> np.ndarray:
        """Rough work of each range: its buckets' squared sizes and its codes' probes."""
        sizes = np.diff(self.bounds).astype(np.float64)
        squares = np.concatenate([[0.0], np.cumsum(sizes * sizes)])
        lo, hi = ranges[:, 0], ranges[:, 1]
        costs: np.ndarray = squares[hi] - squares[lo]
        return costs + (self.bounds[hi] - self.bounds[lo]) * float(self.masks.size + 1)

    def join(self, radius: int, earlier: np.ndarray, lo: int, hi: int) -> np.ndarray:
        """Pairs from the buckets ``present[lo:hi]`` (`_mih_loops.join_block`)."""
        pairs: np.ndarray = _loops().join_block(
            self.columns,
            self.ids,
            self.present,
            self.bounds,
            self.starts,
            self.masks,
            self.mask_starts,
            radius,
            earlier,
            lo,
            hi,
        )
        return pairs

    def link(self, radius: int, parent: np.ndarray, ranges: np.ndarray) -> None:
        """Link the pairs of the ranges into a forest (`_mih_loops.link_block`)."""
        _loops().link_block(
            self.columns,
            self.ids,
            self.present,
            self.bounds,
            self.starts,
            self.masks,
            self.mask_starts,
            radius,
            parent,
            np.ascontiguousarray(ranges),
        )


def _build(words: np.ndarray, lo: int, width: int, threshold: int) -> _Block:
    """Sort the codes into buckets by their key over one block."""
    keys = _loops().block_keys(words, lo, width)
    starts, order = _loops().bucket_order(keys, width)
    present = np.flatnonzero(starts[1:] != starts[:-1]).astype(np.uint64)
    bounds = np.append(starts[present.astype(np.int64)], words.shape[0])
    masks = _masks(width, threshold)[1:]  # nonzero, increasing: grouped by their highest bit
    highest = np.zeros(masks.size, dtype=np.int64)
    for h in range(1, width):
        highest[masks >= np.uint64(1 << h)] = h
    mask_starts = np.searchsorted(highest, np.arange(width + 1)).astype(np.int64)
    columns = np.ascontiguousarray(words.T)[:, order]
    return _Block(columns, order, present, bounds, starts, masks, mask_starts)


def _triangle_ranges(n: int, parts: int) -> np.ndarray:
    """Row ranges ``(lo, hi)`` of an all-pairs scan with near-equal numbers of pairs each."""
    later = np.arange(n - 1, -1, -1, dtype=np.float64).cumsum()  # pairs of rows 0 .. i
    targets = later[-1] * np.arange(1, parts) / parts if n else np.zeros(0)
    edges = np.unique(np.concatenate([[0], np.searchsorted(later, targets) + 1, [n]]))
    edges = edges[edges <= n]
    return np.stack([edges[:-1], edges[1:]], axis=1)


def _run(tasks: Sequence[Callable[[], _T]], workers: int) -> list[_T]:
    """Run the tasks on ``workers`` threads (the compiled loops release the GIL)."""
    if workers == 1:
        return [task() for task in tasks]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(_call, tasks))


def _call(task: Callable[[], _T]) -> _T:
    return task()


def join_pairs(
    words: np.ndarray, bits: int, radius: int, *, chosen: Plan | None = None
) -> np.ndarray:
    """Find every pair of distinct codes within a Hamming radius, exactly, each once.

    Parameters
    ----------
    words : ndarray, shape (n, w), dtype uint64
        Distinct codes as words (`gpusimhash.codes.code_words`).
    bits : int
        Code length.
    radius : int
        Hamming radius.
    chosen : Plan, optional
        A plan to follow instead of the planner's; any valid plan gives the same pairs.

    Returns
    -------
    pairs : ndarray, shape (p, 2), dtype int64
        Pairs ``(a, b)``, ``a < b``, with ``hamming(words[a], words[b]) <= radius``, sorted.

    Raises
    ------
    ValueError
        A `chosen` MIH plan that could miss pairs (overlapping blocks, or thresholds that do
        not cover the radius: ``sum(t + 1) < radius + 1``), or with a block too wide to index
        or too many keys to probe.

    Examples
    --------
    >>> import numpy as np
    >>> words = np.array([[0b0000], [0b0111], [0b0001]], dtype=np.uint64)
    >>> join_pairs(words, 8, 1).tolist()
    [[0, 2]]
    >>> join_pairs(words, 8, 2, chosen=Plan("mih", ((0, 4, 2),), 0.0)).tolist()
    [[0, 2], [1, 2]]
    """
    n = words.shape[0]
    found = np.concatenate(
        [np.zeros((0, 2), dtype=np.int64), *join_parts(words, bits, radius, chosen=chosen)]
    )
    return keys_to_pairs(np.sort(found[:, 0] * n + found[:, 1]), n)


def join_parts(
    words: np.ndarray,
    bits: int,
    radius: int,
    *,
    chosen: Plan | None = None,
    dtype: type[np.signedinteger[Any]] = np.int64,
) -> Iterator[np.ndarray]:
    """Yield the pairs of `join_pairs` in chunks, unsorted, as the join finds them.

    A consumer that narrows or stores each chunk as it comes (`gpusimhash.join._graph.adjacency`)
    never holds all the pairs as int64: the chunks are one FAISS query chunk (brute force) or
    one probed block (MIH) at a time.

    Parameters
    ----------
    words, bits, radius, chosen
        As in `join_pairs`.
    dtype : numpy integer type
        Of the pairs yielded; each worker's pairs are narrowed as soon as they are found
        (int32 halves the join's peak where the codes' indices fit).

    Yields
    ------
    pairs : ndarray, shape (k, 2), dtype `dtype`
        Pairs ``(a, b)``, ``a < b``; every pair within the radius in exactly one chunk.

    Examples
    --------
    >>> import numpy as np
    >>> words = np.array([[0b0000], [0b0111], [0b0001]], dtype=np.uint64)
    >>> [part.tolist() for part in join_parts(words, 8, 1)]
    [[[0, 2]]]
    """
    n = words.shape[0]
    workers = threads()
    chosen = _checked(chosen, bits, radius) or plan(words, bits, radius, workers=workers)
    if n < 2:
        return
    if chosen.method == "brute":
        _progress.expect(-(-n // _BRUTE_QUERIES))  # a dedup stage's bar, if any: chunks
        for part in _brute_force_pairs(words, bits, radius):
            _progress.advance()
            yield part.astype(dtype, copy=False)
        return
    _progress.expect(len(chosen.blocks))  # a dedup stage's bar, if any: blocks
    for i, (lo, width, threshold) in enumerate(chosen.blocks):
        block = _build(words, lo, width, threshold)
        earlier = np.array(chosen.blocks[:i], dtype=np.int64).reshape(i, 3)
        ranges = block.ranges(workers * _CHUNKS_PER_THREAD).tolist()
        tasks: list[Callable[[], np.ndarray]] = [
            partial(_narrowed, dtype, block, radius, earlier, a, b) for a, b in ranges
        ]
        del block  # the tasks hold it until they are done, then it goes before the next one
        yield from _streamed(tasks, workers)
        _progress.advance()


def join_share(
    words: np.ndarray, bits: int, radius: int, share: int, shares: int, *, chosen: Plan
) -> np.ndarray:
    """Find one share of the pairs of `join_pairs`: the shares together find each pair once.

    The work of a plan is cut into ``shares`` disjoint parts: for brute force, row ranges with
    near-equal numbers of pairs to compare; for MIH, the key ranges of every probed block, each
    dealt to the least loaded share, largest first (by its buckets' squared sizes, loads carried
    from block to block: crowded keys of different blocks go to different shares). Each pair of
    `join_pairs` comes from exactly one (block, range), so from exactly one share, whatever
    `shares` is, when every share follows the same plan: plan once (`plan`), then run the
    shares anywhere (a distributed join runs them as separate tasks, on machines of any thread
    count). Every share builds the probed blocks' tables of all the codes and deals their
    ranges the same way, then runs its own on its threads.

    Parameters
    ----------
    words, bits, radius
        As in `join_pairs`.
    share : int
        Which share, ``0 <= share < shares``.
    shares : int
        Number of shares, ``>= 1``.
    chosen : Plan
        The plan every share follows.

    Returns
    -------
    pairs : ndarray, shape (p, 2), dtype int64
        This share's pairs ``(a, b)``, ``a < b``, sorted.

    Raises
    ------
    ValueError
        `share` outside ``0 .. shares - 1``, or a `chosen` plan `join_pairs` refuses.

    Examples
    --------
    >>> import numpy as np
    >>> words = np.array([[0b0000], [0b0111], [0b0001], [0b0011]], dtype=np.uint64)
    >>> chosen = Plan("mih", ((0, 4, 0), (4, 4, 0)), 0.0)
    >>> found = [join_share(words, 8, 1, s, 3, chosen=chosen) for s in range(3)]
    >>> sorted(np.concatenate(found).tolist())
    [[0, 2], [1, 3], [2, 3]]
    >>> join_pairs(words, 8, 1).tolist()
    [[0, 2], [1, 3], [2, 3]]
    """
    if not 0 <= share < shares:
        raise ValueError(f"share must be in 0 .. shares - 1 = {shares - 1}, got {share}")
    _checked(chosen, bits, radius)
    n = words.shape[0]
    workers = threads()
    found = [np.zeros((0, 2), dtype=np.int64)]
    if n < 2:
        pass
    elif chosen.method == "brute":
        for lo, hi in _triangle_ranges(n, shares)[share : share + 1].tolist():
            found.extend(_brute_force_pairs(words, bits, radius, lo, hi))
    else:
        loads = np.zeros(shares)
        for i, (lo, width, threshold) in enumerate(chosen.blocks):
            block = _build(words, lo, width, threshold)
            earlier = np.array(chosen.blocks[:i], dtype=np.int64).reshape(i, 3)
            # the same ranges and deal in every share, wherever it runs
            ranges = block.ranges(shares * _RANGES_PER_SHARE)
            mine = ranges[_deal(block.costs(ranges), loads) == share]
            tasks = [partial(block.join, radius, earlier, a, b) for a, b in mine.tolist()]
            found.extend(_run(tasks, workers))
    pairs = np.concatenate(found).astype(np.int64)
    return keys_to_pairs(np.sort(pairs[:, 0] * n + pairs[:, 1]), n)


def _deal(costs: np.ndarray, loads: np.ndarray) -> np.ndarray:
    """Give each cost, largest first, to the least loaded share; update ``loads``, return owners."""
    owners = np.zeros(costs.size, dtype=np.int64)
    for k in np.argsort(-costs, kind="stable").tolist():
        owners[k] = int(np.argmin(loads))
        loads[owners[k]] += costs[k]
    return owners


def _streamed(tasks: list[Callable[[], _T]], workers: int) -> Iterator[_T]:
    """Yield the results of `_run`'s tasks in order as they are done, dropping each once yielded.

    Neither the tasks (and what they hold) nor their results outlive their turn: memory holds
    the results not consumed yet, not all of them.
    """
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(task) for task in tasks]
        tasks.clear()
        futures.reverse()
        while futures:
            yield futures.pop().result()


def _narrowed(
    dtype: type[np.signedinteger[Any]],
    block: _Block,
    radius: int,
    earlier: np.ndarray,
    lo: int,
    hi: int,
) -> np.ndarray:
    """Run `_Block.join` and cast its pairs to ``dtype``."""
    return block.join(radius, earlier, lo, hi).astype(dtype, copy=False)


def _brute_force_pairs(
    words: np.ndarray, bits: int, radius: int, first: int = 0, stop: int | None = None
) -> Iterator[np.ndarray]:
    """Every pair within ``radius`` by FAISS's exhaustive range search, queries in chunks.

    FAISS's popcount loops are about ten times faster here than a compiled all-pairs loop
    (2.4 s against 23 s for 92,104 distinct 256-bit codes at radius 68, 2 cores), and the
    chunks bound the memory of its result lists by the pairs of ``_BRUTE_QUERIES`` codes. Each
    chunk is searched only against itself and the codes after it (an index of those), so every
    pair is compared once, not twice. Only the pairs whose first code is one of the rows
    ``first .. stop - 1`` are searched (default: every row).
    """
    import faiss  # only where the codes are joined: the feature join's runs never load it

    codes = np.ascontiguousarray(np.ascontiguousarray(words).view(np.uint8)[:, : bits // 8])
    stop = codes.shape[0] if stop is None else stop
    for lo in range(first, stop, _BRUTE_QUERIES):
        index = faiss.IndexBinaryFlat(bits)
        index.add(codes[lo:])
        # strict bound: distances below radius + 1
        lims, _, labels = index.range_search(codes[lo : min(lo + _BRUTE_QUERIES, stop)], radius + 1)
        query = _segments.segment_of(np.diff(lims.astype(np.int64)))
        later = labels > query
        yield np.stack([lo + query[later], lo + labels[later].astype(np.int64)], axis=1)
        del index


def _checked(chosen: Plan | None, bits: int, radius: int) -> Plan | None:
    """Refuse a given MIH plan that could miss pairs or that has no table layout."""
    if chosen is None or chosen.method == "brute":
        return chosen
    end = 0
    for lo, width, threshold in sorted(chosen.blocks):
        if lo < end or not 1 <= width <= _MAX_WIDTH or lo + width > bits or threshold < 0:
            raise ValueError(
                f"plan blocks must be disjoint (lo, width, threshold) with 1 <= width <= "
                f"{_MAX_WIDTH} inside {bits} bits and threshold >= 0, got {chosen.blocks}"
            )
        if _ball(width, threshold) > _MAX_MASKS:
            raise ValueError(
                f"plan block {(lo, width, threshold)} probes {_ball(width, threshold)} keys per "
                f"code, more than {_MAX_MASKS}"
            )
        end = lo + width
    covered = sum(threshold + 1 for _, _, threshold in chosen.blocks)
    if covered < radius + 1:
        raise ValueError(
            f"plan thresholds cover sum(t + 1) = {covered}, radius {radius} needs {radius + 1}"
        )
    return chosen


def join_roots(
    words: np.ndarray, bits: int, radius: int, *, chosen: Plan | None = None
) -> np.ndarray:
    """Find the connected components of distinct codes linked within a Hamming radius.

    Two codes share a component when a chain of codes, each within ``radius`` of the next,
    joins them: the components of the pairs `join_pairs` returns, without emitting the pairs.

    Parameters
    ----------
    words, bits, radius, chosen
        As in `join_pairs`.

    Returns
    -------
    roots : ndarray, shape (n,), dtype int64
        The smallest index in each code's component.

    Examples
    --------
    >>> import numpy as np
    >>> words = np.array([[0b0000], [0b0111], [0b0011], [0b1111_0000]], dtype=np.uint64)
    >>> join_roots(words, 8, 1).tolist()
    [0, 1, 1, 3]
    """
    n = words.shape[0]
    workers = threads()
    chosen = _checked(chosen, bits, radius) or plan(words, bits, radius, workers=workers)
    # One forest per thread, so no locks: each thread skips the pairs its own forest already
    # links, and merging the forests gives the components of all their links together.
    forests = [np.arange(n, dtype=np.int64) for _ in range(workers)]
    if n < 2:
        pass
    elif chosen.method == "brute":
        columns = np.ascontiguousarray(words.T)
        ranges = _triangle_ranges(n, workers * _CHUNKS_PER_THREAD)
        _run(
            [
                partial(_brute_links, columns, radius, forests[k], ranges[k::workers])
                for k in range(workers)
            ],
            workers,
        )
    else:
        for lo, width, threshold in chosen.blocks:
            block = _build(words, lo, width, threshold)
            ranges = block.ranges(workers * _CHUNKS_PER_THREAD)
            tasks = [
                partial(block.link, radius, forests[k], ranges[k::workers]) for k in range(workers)
            ]
            _run(tasks, workers)
    parent = forests[0]
    for other in forests[1:]:
        _loops().merge_forest(parent, other)
    roots: np.ndarray = flatten_forest(parent)
    return roots


def _brute_links(columns: np.ndarray, radius: int, parent: np.ndarray, ranges: np.ndarray) -> None:
    """Run `_mih_loops.brute_link` over several row ranges."""
    for lo, hi in ranges.tolist():
        _loops().brute_link(columns, radius, parent, lo, hi)


def exact_groups(codes: np.ndarray, radius: int) -> DuplicateGroups:
    """Join validated host codes exactly on the CPU within a radius in ``[0, bits]``."""
    unique_words, inverse = collapse(code_words(codes))
    unique_pairs = join_pairs(unique_words, codes.shape[1] * 8, radius)
    return DuplicateGroups(inverse=inverse, unique_pairs=unique_pairs, max_distance=radius)

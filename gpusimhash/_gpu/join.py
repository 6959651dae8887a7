"""Exact Hamming radius join on the GPU, written once over an array module.

Like ``Engine``, ``DeviceJoin`` drives CuPy and the compiled kernels on a device, and NumPy with
the same kernel source compiled by g++ in the tests (tests/gpu/cuda_emu), so the CPU checks
everything here but CuPy itself. The functions at the end are the CuPy layer the public API
calls: host or device codes in, host results out.

The join (kernels/join.cu says how the kernels split the work):

1. identical codes are collapsed by a device sort, in the order ``np.unique`` gives them, so
   distinct-code ids are those of the CPU join;
2. a planner, on a small fixed sample copied to the host, chooses between a tiled brute force
   and ``m`` blocks of contiguous bits with per-block radius ``radius // m`` (generalized
   pigeonhole), from the sample's bucket occupancy and a cost model;
3. for each block, the distinct codes are radix-sorted by their block key into buckets, and
   ``join_bucket_pairs`` compares the bucket pairs within the per-block radius, sending bucket
   pairs too large for one warp to ``join_tiles``;
4. each output buffer that overflowed is sized exactly from its counter and the launch rerun;
   the pair keys are sorted, giving ``DuplicateGroups.unique_pairs`` of the CPU join.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from itertools import combinations, pairwise
from types import ModuleType
from typing import Any, Protocol

import numpy as np

from gpusimhash import _backend, _validate
from gpusimhash._gpu import kernels

# Words per code of the kernels' fixed-width instantiations; wider codes use <0> (any width).
WORD_TEMPLATES = tuple(words for words in kernels.CODE_WORDS if words)
WARP = 32
# Cost model of the planner, in units of one compare in join_bucket_pairs (only ratios matter).
_BRUTE_COMPARE_COST = 0.5  # join_tiles: columns staged in shared memory, row in registers
_ITEM_COST = 24.0  # one (bucket, mask) warp item: loads, bounds, an empty neighbour or not
_SORT_COST = 40.0  # per code and block: keys, radix sort, gather
_MAX_MASKS = 1 << 16  # neighbour masks per block at most


class JoinLauncher(Protocol):
    """Launches kernels: ``launch(name, n_items, args, shared_bytes=...)``.

    At least one thread per item, blocks of ``threads_per_block`` threads (a multiple of 32),
    any grid (the kernels stride); never called with ``n_items == 0``.
    """

    threads_per_block: int

    def __call__(
        self, name: str, n_items: int, args: tuple[Any, ...], *, shared_bytes: int = 0
    ) -> None:
        """Run kernel ``name`` over ``n_items`` threads' worth of work."""


@dataclass(frozen=True)
class JoinSettings:
    """Sizes of the device join; the tests make them tiny to reach every path.

    Attributes
    ----------
    tile_cols : int
        Columns of a ``join_tiles`` tile (codes staged in shared memory).
    pair_capacity : int
        Output slots of a join's first launch, at least: ``pairs_per_code`` times the distinct
        codes when that is more. A launch that overflows is rerun at the exact size, and the
        join's later launches keep the larger capacity.
    pairs_per_code : float
        See ``pair_capacity``.
    big_capacity : int
        Slots for oversized bucket pairs, likewise.
    big_pairs : int
        Compares above which a bucket pair goes to ``join_tiles`` (below ``2**31``).
    brute_force_max : int
        Distinct codes up to which the join is a tiled brute force.
    max_key_bits : int
        Widest block key (buckets per block: ``2 ** key_bits``).
    sample_size : int
        Codes the planner looks at.
    blocks : int or None
        Force this many blocks (0: brute force); None lets the planner choose.
    shared_bytes : int
        Dynamic shared memory per block, at most.
    """

    tile_cols: int = 256
    pair_capacity: int = 1 << 16
    pairs_per_code: float = 2.0
    big_capacity: int = 1 << 12
    big_pairs: int = 1 << 14
    brute_force_max: int = 8192
    max_key_bits: int = 22
    sample_size: int = 1 << 16
    blocks: int | None = None
    shared_bytes: int = 48 * 1024


@dataclass(frozen=True)
class BlockPlan:
    """Blocks of contiguous bits and the per-block radius of a bucketed join.

    Attributes
    ----------
    bounds : tuple of int
        ``m + 1`` bit positions: block ``j`` covers bits ``bounds[j]:bounds[j + 1]``.
    block_radius : int
        ``radius // m``: a pair within the radius is within this on some block.
    """

    bounds: tuple[int, ...]
    block_radius: int


@dataclass
class JoinStats:
    """What the last join did (for tests and benchmarks)."""

    plan: BlockPlan | None = None
    launches: dict[str, int] = field(default_factory=dict)
    reruns: int = 0
    big_bucket_pairs: int = 0


def even_bounds(bits: int, n_blocks: int) -> tuple[int, ...]:
    """Cut ``bits`` bits into ``n_blocks`` contiguous blocks whose widths differ by at most 1.

    Parameters
    ----------
    bits : int
        Code length.
    n_blocks : int
        Number of blocks, in ``[1, bits]``.

    Returns
    -------
    tuple of int
        ``n_blocks + 1`` increasing bounds from 0 to ``bits``.
    """
    return tuple(j * bits // n_blocks for j in range(n_blocks + 1))


@functools.cache
def neighbour_masks(key_bits: int, radius: int) -> np.ndarray:
    """Every ``key_bits``-bit mask with at most ``radius`` bits set, by weight then value.

    Parameters
    ----------
    key_bits : int
        Key width.
    radius : int
        Largest popcount.

    Returns
    -------
    ndarray, dtype uint32
    """
    masks = [
        sum(1 << bit for bit in chosen)
        for weight in range(min(radius, key_bits) + 1)
        for chosen in combinations(range(key_bits), weight)
    ]
    return np.array(masks, dtype=np.uint32)


def n_masks(key_bits: int, radius: int) -> int:
    """Count the ``key_bits``-bit masks with at most ``radius`` bits set."""
    return sum(math.comb(key_bits, weight) for weight in range(min(radius, key_bits) + 1))


def word_layout(width: int) -> tuple[int, int]:
    """Return the padded words per code and the kernels' template argument for ``width`` bytes.

    Parameters
    ----------
    width : int
        Bytes per code.

    Returns
    -------
    n_words, template : int
        Codes are padded with zero words to ``n_words`` (1, 2, 4 or 8, or the exact count
        beyond 8 words, template 0).
    """
    words = -(-width // 8)
    for template in WORD_TEMPLATES:
        if words <= template:
            return template, template
    return words, 0


def padded_words(xp: ModuleType, codes: Any) -> tuple[Any, int]:
    """Codes as zero-padded uint64 words and the kernels' template argument.

    Parameters
    ----------
    xp : module
        The array module of `codes`.
    codes : array, shape (n, width), dtype uint8
        Packed codes.

    Returns
    -------
    words : array, shape (n, n_words), dtype uint64
    template : int
    """
    n, width = codes.shape
    n_words, template = word_layout(width)
    if width == n_words * 8:  # no padding: a view
        return xp.ascontiguousarray(codes).view(xp.uint64), template
    padded = xp.zeros((n, n_words * 8), dtype=xp.uint8)
    padded[:, :width] = codes
    return padded.view(xp.uint64), template


def block_keys(xp: ModuleType, words: Any, lo: int, hi: int) -> Any:
    """Bits ``lo:hi`` (at most 32) of every code as an integer key (int64).

    Parameters
    ----------
    xp : module
        Array module of ``words``.
    words : array, shape (n, n_words), dtype uint64
        Codes.
    lo, hi : int
        Bit range.

    Returns
    -------
    array, shape (n,), dtype int64
    """
    word, shift = divmod(lo, 64)
    key = words[:, word] >> xp.uint64(shift)
    if shift + (hi - lo) > 64:
        key = key | (words[:, word + 1] << xp.uint64(64 - shift))
    return (key & xp.uint64((1 << (hi - lo)) - 1)).astype(xp.int64)


class DeviceJoin:
    """The exact radius join over an array module and a kernel launcher.

    Parameters
    ----------
    xp : module
        ``cupy`` on a GPU; ``numpy`` with an emulated launcher in the tests.
    launch : JoinLauncher
        Runs the kernels of ``kernels.KERNELS["join.cu"]``.
    settings : JoinSettings, optional
        Sizes (defaults for a GPU).
    """

    def __init__(
        self, xp: ModuleType, launch: JoinLauncher, settings: JoinSettings | None = None
    ) -> None:
        if launch.threads_per_block % WARP:
            raise ValueError(
                f"threads_per_block must be a multiple of {WARP}, got {launch.threads_per_block}"
            )
        self.xp = xp
        self.launch = launch
        self.settings = JoinSettings() if settings is None else settings
        if not 1 <= self.settings.big_pairs < 2**31:
            raise ValueError(f"big_pairs must be in [1, 2**31), got {self.settings.big_pairs}")
        self.stats = JoinStats()
        self._capacity = self.settings.pair_capacity

    # ---- codes ---------------------------------------------------------------------------

    def words(self, codes: Any) -> tuple[Any, int]:
        """Codes as zero-padded uint64 words and the kernels' template argument (`padded_words`)."""
        return padded_words(self.xp, codes)

    def collapse(self, words: Any) -> tuple[Any, Any]:
        """Distinct codes in ``np.unique`` order and each code's distinct index.

        Parameters
        ----------
        words : array, shape (n, n_words), dtype uint64
            Codes.

        Returns
        -------
        unique_words : array, shape (n_unique, n_words), dtype uint64
            Sorted lexicographically, word 0 first (as ``np.unique(words, axis=0)``).
        inverse : array, shape (n,), dtype int64
        """
        xp = self.xp
        n, n_words = words.shape
        order = xp.arange(n, dtype=xp.int64)
        for word in reversed(range(n_words)):  # least significant word first, stable sorts
            order = order[xp.argsort(words[order, word], kind="stable")]
        ordered = words[order]
        first = xp.ones(n, dtype=bool)
        if n > 1:
            first[1:] = (ordered[1:] != ordered[:-1]).any(axis=1)
        inverse = xp.empty(n, dtype=xp.int64)
        inverse[order] = xp.cumsum(first) - 1
        return xp.ascontiguousarray(ordered[first]), inverse

    # ---- planning ------------------------------------------------------------------------

    def plan(self, unique_words: Any, bits: int, radius: int) -> BlockPlan | None:
        """Choose the blocks of a bucketed join, or None for the tiled brute force.

        The estimated cost of ``m`` blocks adds, per block, the sort, one warp item per
        non-empty bucket and neighbour mask, and the compares: the pairs of codes sharing a
        block key (measured on a fixed sample of the distinct codes, at least the uniform
        share) times the neighbour masks. The brute force costs half a compare per pair.

        Parameters
        ----------
        unique_words : array, shape (n, n_words), dtype uint64
            Distinct codes.
        bits, radius : int
            Code length and Hamming radius.

        Returns
        -------
        BlockPlan or None
        """
        settings = self.settings
        n = unique_words.shape[0]
        if settings.blocks is not None:
            if settings.blocks == 0:
                return None
            bounds = even_bounds(bits, settings.blocks)
            if max(np.diff(bounds)) > settings.max_key_bits:
                raise ValueError(
                    f"{settings.blocks} blocks of {bits} bits exceed max_key_bits = "
                    f"{settings.max_key_bits}"
                )
            return BlockPlan(bounds, radius // settings.blocks)
        if n <= settings.brute_force_max:
            return None
        step = max(1, n // settings.sample_size)
        sample = _backend.to_host(unique_words[::step][: settings.sample_size])
        best: BlockPlan | None = None
        best_cost = n * (n - 1) / 2 * _BRUTE_COMPARE_COST
        fewest = -(-bits // settings.max_key_bits)
        for n_blocks in range(fewest, min(bits, max(fewest, radius + 1)) + 1):
            bounds = even_bounds(bits, n_blocks)
            block_radius = radius // n_blocks
            cost = 0.0
            for lo, hi in pairwise(bounds):
                masks = n_masks(hi - lo, block_radius)
                if masks > _MAX_MASKS:
                    cost = math.inf
                    break
                shared = _shared_key_pairs(sample, n, lo, hi)
                items = min(n, 2 ** (hi - lo)) * masks
                cost += n * _SORT_COST + items * _ITEM_COST + shared * masks
            if cost < best_cost:
                best, best_cost = BlockPlan(bounds, block_radius), cost
        return best

    # ---- the join ------------------------------------------------------------------------

    def groups(self, codes: Any, radius: int) -> tuple[Any, Any]:
        """Collapse identical codes and join the distinct ones.

        Parameters
        ----------
        codes : array, shape (n, width), dtype uint8
            Validated codes (an ``xp`` array).
        radius : int
            Hamming radius, ``>= 0``.

        Returns
        -------
        inverse : array, shape (n,), dtype int64
        unique_pairs : array, shape (p, 2), dtype int64
            Those of ``near_duplicate_groups`` on the CPU.
        """
        words, template = self.words(codes)
        unique_words, inverse = self.collapse(words)
        return inverse, self.unique_pairs(unique_words, template, codes.shape[1] * 8, radius)

    def unique_pairs(self, unique_words: Any, template: int, bits: int, radius: int) -> Any:
        """Every pair of distinct codes within ``radius``, sorted.

        Parameters
        ----------
        unique_words : array, shape (n, n_words), dtype uint64
            Distinct codes (``collapse``).
        template : int
            Kernel template argument (``words``).
        bits, radius : int
            Code length and Hamming radius.

        Returns
        -------
        array, shape (p, 2), dtype int64
            Pairs ``(a, b)``, ``a < b``, sorted, no repeats.
        """
        xp = self.xp
        n = unique_words.shape[0]
        self.stats = JoinStats()
        if n < 2 or radius == 0:  # distinct codes are at least one bit apart
            return xp.zeros((0, 2), dtype=xp.int64)
        plan = self.plan(unique_words, bits, radius)
        self.stats.plan = plan
        settings = self.settings
        self._capacity = max(settings.pair_capacity, int(settings.pairs_per_code * n))
        found: list[Any] = []
        if plan is None:
            rects = xp.asarray([[0, n, 0, n]], dtype=xp.int64)
            ids = xp.arange(n, dtype=xp.int64)
            brute = BlockPlan((0, bits), 0)
            found.append(self._tiles(unique_words, template, ids, rects, brute, 0, radius, n))
        else:
            for block in range(len(plan.bounds) - 1):
                found += self._block(unique_words, template, plan, block, radius)
        keys = xp.sort(xp.concatenate(found)) if found else xp.zeros(0, dtype=xp.int64)
        return xp.stack([keys // n, keys % n], axis=1)

    def _block(
        self, unique_words: Any, template: int, plan: BlockPlan, block: int, radius: int
    ) -> list[Any]:
        """Pair keys of one block: its bucket pairs, then its oversized bucket pairs."""
        xp = self.xp
        n, n_words = unique_words.shape
        lo, hi = plan.bounds[block], plan.bounds[block + 1]
        n_buckets = 2 ** (hi - lo)
        keys = block_keys(xp, unique_words, lo, hi)
        order = xp.argsort(keys, kind="stable")
        sorted_keys = keys[order]
        words = xp.ascontiguousarray(unique_words[order])
        starts = xp.searchsorted(sorted_keys, xp.arange(n_buckets + 1, dtype=xp.int64))
        starts = starts.astype(xp.int64)
        first = xp.ones(n, dtype=bool)
        first[1:] = sorted_keys[1:] != sorted_keys[:-1]
        buckets = xp.ascontiguousarray(sorted_keys[first].astype(xp.uint32))
        masks = xp.asarray(neighbour_masks(hi - lo, plan.block_radius))
        bounds = xp.asarray(plan.bounds, dtype=xp.int32)
        settings = self.settings
        capacity, big_capacity = self._capacity, settings.big_capacity
        name = f"join_bucket_pairs<{template}>"
        while True:
            pairs = xp.empty(max(capacity, 1), dtype=xp.int64)
            big = xp.empty(max(big_capacity, 1), dtype=xp.int64)
            counters = xp.zeros(2, dtype=xp.uint64)
            args = (
                words,
                order,
                starts,
                buckets,
                np.int64(buckets.size),
                masks,
                np.int32(masks.size),
                np.int64(n_buckets),
                bounds,
                np.int32(block),
                np.int32(plan.block_radius),
                np.int32(radius),
                np.int32(n_words),
                np.int64(n),
                np.int64(settings.big_pairs),
                pairs,
                counters,
                np.int64(capacity),
                big,
                np.int64(big_capacity),
            )
            self._launch(name, buckets.size * masks.size * WARP, args)
            n_found, n_big = (int(count) for count in counters.tolist())
            if n_found <= capacity and n_big <= big_capacity:
                break
            self.stats.reruns += 1
            capacity, big_capacity = max(capacity, n_found), max(big_capacity, n_big)
            self._capacity = capacity
        found = [pairs[:n_found]]
        if n_big:
            self.stats.big_bucket_pairs += n_big
            u, v = big[:n_big] // n_buckets, big[:n_big] % n_buckets
            rects = xp.stack([starts[u], starts[u + 1], starts[v], starts[v + 1]], axis=1)
            found.append(self._tiles(words, template, order, rects, plan, block, radius, n))
        return found

    def _tiles(
        self,
        words: Any,
        template: int,
        ids: Any,
        rects: Any,
        plan: BlockPlan,
        block: int,
        radius: int,
        n_ids: int,
    ) -> Any:
        """Pair keys of rectangles of codes, tiled (brute force and oversized buckets)."""
        xp = self.xp
        n_words = words.shape[1]
        rows = self.launch.threads_per_block
        tile_cols = max(
            1, min(self.settings.tile_cols, self.settings.shared_bytes // (8 * n_words))
        )
        rects = xp.ascontiguousarray(rects, dtype=xp.int64)
        tiles = -(-(rects[:, 1] - rects[:, 0]) // rows) * -(
            -(rects[:, 3] - rects[:, 2]) // tile_cols
        )
        tile_starts = xp.zeros(rects.shape[0] + 1, dtype=xp.int64)
        tile_starts[1:] = xp.cumsum(tiles)
        n_tiles = int(tile_starts[-1])
        if n_tiles == 0:
            return xp.zeros(0, dtype=xp.int64)
        bounds = xp.asarray(plan.bounds, dtype=xp.int32)
        capacity = self._capacity
        name = f"join_tiles<{template}>"
        while True:
            pairs = xp.empty(max(capacity, 1), dtype=xp.int64)
            counters = xp.zeros(2, dtype=xp.uint64)
            args = (
                words,
                ids,
                rects,
                tile_starts,
                np.int64(rects.shape[0]),
                np.int32(tile_cols),
                bounds,
                np.int32(block),
                np.int32(plan.block_radius),
                np.int32(radius),
                np.int32(n_words),
                np.int64(n_ids),
                pairs,
                counters,
                np.int64(capacity),
            )
            self._launch(name, n_tiles * rows, args, shared_bytes=tile_cols * n_words * 8)
            n_found = int(counters.tolist()[0])
            if n_found <= capacity:
                return pairs[:n_found]
            self.stats.reruns += 1
            capacity = self._capacity = n_found

    def _launch(
        self, name: str, n_items: int, args: tuple[Any, ...], shared_bytes: int = 0
    ) -> None:
        if n_items == 0:
            return
        self.stats.launches[name] = self.stats.launches.get(name, 0) + 1
        self.launch(name, n_items, args, shared_bytes=shared_bytes)


def _shared_key_pairs(sample: np.ndarray, n: int, lo: int, hi: int) -> float:
    """Estimate the pairs of the ``n`` codes sharing the block key ``lo:hi`` from a sample."""
    s = int(sample.shape[0])
    uniform = n * (n - 1) / 2 / float(2 ** (hi - lo))
    if s < 2:
        return uniform
    counts = np.unique(block_keys(np, sample, lo, hi), return_counts=True)[1].astype(np.float64)
    sample_pairs = float((counts * (counts - 1)).sum()) / 2
    return max(uniform, sample_pairs * (n * (n - 1)) / (s * (s - 1)))


# ---- the CuPy layer ---------------------------------------------------------------------------


@functools.cache
def device_join() -> DeviceJoin:
    """Return the process's GPU join: CuPy and the compiled kernels.

    Raises
    ------
    RuntimeError
        No usable GPU.
    """
    return DeviceJoin(_backend.require_gpu(), kernels.Launcher())


def device_codes(value: Any, name: str = "codes") -> Any:
    """Validate packed codes for the GPU and copy host codes there.

    Parameters
    ----------
    value : ndarray or cupy.ndarray
        Packed codes, shape ``(n, bits // 8)``, dtype uint8; a single 1-D code is one row.
    name : str
        Argument name, for the message.

    Returns
    -------
    cupy.ndarray, shape (n, bits // 8), dtype uint8, C-contiguous

    Raises
    ------
    RuntimeError
        No usable GPU.
    TypeError
        Not a uint8 array (the messages of ``_validate.codes``).
    ValueError
        Not 1-D or 2-D, or zero bytes wide.
    """
    cupy = _backend.require_gpu()
    if not isinstance(value, cupy.ndarray):
        return cupy.asarray(_validate.codes(value, name))
    if value.dtype != np.uint8:
        raise TypeError(f"{name} must be packed uint8 codes, got dtype {value.dtype}")
    if value.ndim == 1:
        value = value[np.newaxis, :]
    if value.ndim != 2 or value.shape[1] == 0:
        raise ValueError(f"{name} must have shape (n, bits // 8), got {value.shape}")
    return cupy.ascontiguousarray(value)


def groups(codes: Any, radius: int) -> tuple[np.ndarray, np.ndarray]:
    """Join on the GPU: host or device codes in, ``DuplicateGroups`` arrays on the host out.

    Parameters
    ----------
    codes : ndarray or cupy.ndarray, shape (n, bits // 8), dtype uint8
        Packed codes (validated here).
    radius : int
        Hamming radius, ``>= 0``.

    Returns
    -------
    inverse : ndarray, shape (n,), dtype int64
    unique_pairs : ndarray, shape (p, 2), dtype int64
        Equal to the CPU join's.
    """
    inverse, unique_pairs = device_join().groups(device_codes(codes), radius)
    return _backend.to_host(inverse), _backend.to_host(unique_pairs)

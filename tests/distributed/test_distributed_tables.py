"""The bucket-by-bucket join of the distributed dedup, run in one process against the exact join."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusimhash.codes import code_words
from gpusimhash.distributed import _routing as routing
from gpusimhash.distributed import _tables as tables
from gpusimhash.join._exact import near_duplicate_groups

pytestmark = pytest.mark.slow  # Dask workers start in every test


def _distributed_pairs(codes, radius, n_parts, n_tasks, n_workers=1):
    """Collapse and join as the cluster does, with every task run here."""
    n = codes.shape[0]
    words = code_words(codes)
    rows = np.arange(n, dtype=np.int64)
    # partitions route their documents by code hash; the collapse tasks take every piece
    pieces = [[] for _ in range(n_tasks)]
    for part in np.array_split(rows, n_parts):
        task = routing.mix_words(words[part]) % np.uint64(n_tasks)
        for b in range(n_tasks):
            chosen = part[task == b]
            pieces[b].append((chosen, words[chosen]))
    collapsed = [tables.collapse(p, words.shape[1]) for p in pieces]
    blocks = tables.pigeonhole_blocks(codes.shape[1] * 8, radius)
    split = [tables.table_pieces(c, blocks, n_tasks) for c in collapsed]
    bits = codes.shape[1] * 8
    found = []
    for t in range(len(blocks)):
        for j in range(n_tasks):
            table = tables.bucket_table([s[t][j] for s in split], t, blocks, bits, radius)
            found.append(tables.join_table(table, t, blocks, bits, radius))
            # crowded buckets: planned once, selected, joined by their shares
            for i, (_, seconds) in enumerate(tables.crowded_work(table)):
                bucket = tables.crowded_bucket(table, i)
                shares = tables.share_count(seconds, n_workers)
                found += [
                    tables.join_share(bucket, share, shares, t, blocks, bits, radius)
                    for share in range(shares)
                ]
    return np.concatenate([np.zeros((0, 2), np.int64), *found]), collapsed


def _expected_pairs(codes, radius):
    """Pairs of distinct codes (named by their lowest row), lower row first."""
    groups = near_duplicate_groups(codes, max_distance=radius)
    lowest = np.full(groups.n_unique, codes.shape[0])
    np.minimum.at(lowest, groups.inverse, np.arange(codes.shape[0]))
    return np.sort(lowest[groups.unique_pairs].reshape(-1, 2), axis=1)


def _codes(draw_seed, n, n_bytes, flips):
    rng = np.random.default_rng(draw_seed)
    base = rng.integers(0, 256, (max(1, n // 4), n_bytes), dtype=np.uint8)
    codes = base[rng.integers(0, base.shape[0], n)]
    bits = np.unpackbits(codes, axis=1, bitorder="little")
    flip = rng.random(bits.shape) < flips
    return np.packbits(bits ^ flip, axis=1, bitorder="little")


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(0, 300),
    n_bytes=st.sampled_from([1, 8, 9, 16]),
    radius=st.integers(0, 20),
    n_parts=st.integers(1, 4),
    n_tasks=st.integers(1, 5),
    flips=st.sampled_from([0.0, 0.02, 0.1]),
)
def test_every_pair_once_from_exactly_one_table(seed, n, n_bytes, radius, n_parts, n_tasks, flips):
    codes = _codes(seed, n, n_bytes, flips)
    found, _ = _distributed_pairs(codes, radius, n_parts, n_tasks)
    expected = _expected_pairs(codes, radius)
    # each pair once, lower row first
    assert len(found) == len(np.unique(found, axis=0))
    assert sorted(map(tuple, found.tolist())) == sorted(map(tuple, expected.tolist()))


@pytest.mark.parametrize(("n_bytes", "radius"), [(8, 9), (1, 7), (2, 13)])
def test_crowded_buckets_and_few_free_bits(n_bytes, radius):
    # few distinct keys (most bits shared) and radii that leave too few bits for sub-blocks
    rng = np.random.default_rng(radius)
    codes = _codes(radius, 600, n_bytes, 0.05)
    codes[:, : n_bytes // 2] = rng.integers(0, 2, (600, n_bytes // 2), dtype=np.uint8)
    found, _ = _distributed_pairs(codes, radius, 2, 3)
    expected = _expected_pairs(codes, radius)
    assert len(found) == len(np.unique(found, axis=0))
    assert sorted(map(tuple, found.tolist())) == sorted(map(tuple, expected.tolist()))


@pytest.mark.parametrize(
    ("bits", "radius", "lo", "width"), [(128, 7, 48, 16), (64, 12, 0, 5), (16, 9, 0, 8)]
)
def test_sub_blocks_are_disjoint_enough_and_outside_the_table(bits, radius, lo, width):
    blocks = tables.sub_blocks(bits, radius, lo, width)
    if blocks == ((0, 0),):
        assert bits - width < radius + 1
        return
    assert len(blocks) == radius + 1
    covered = [set(range(b, b + w)) for b, w in blocks]
    assert all(covered)
    assert not set().union(*covered) & set(range(lo, lo + width))
    assert sum(map(len, covered)) == len(set().union(*covered))
    assert max(covered[-1]) < bits


def test_documents_of_a_shared_code_are_members():
    codes = np.array([[5], [5], [9], [5], [7]], dtype=np.uint8)
    found, collapsed = _distributed_pairs(codes, 0, 2, 1)
    (c,) = collapsed
    assert found.tolist() == []
    assert c.rows.tolist() == [0, 4, 2]  # lowest rows, in code order
    assert sorted(c.members.tolist()) == [[0, 0], [1, 0], [3, 0]]


@pytest.mark.parametrize(("bits", "radius"), [(64, 3), (128, 7), (256, 2), (64, 64), (8, 9)])
def test_pigeonhole_blocks_are_disjoint_and_enough(bits, radius):
    blocks = tables.pigeonhole_blocks(bits, radius)
    assert len(blocks) == (radius + 1 if radius < bits else 1)
    ends = [lo + width for lo, width in blocks]
    assert all(end <= lo for end, (lo, _) in zip(ends, blocks[1:], strict=False))
    assert all(width <= tables.MAX_KEY_BITS for _, width in blocks)


@pytest.mark.parametrize("cap", [2, 16])
def test_crowded_buckets_go_to_the_single_machine_join(monkeypatch, cap):
    monkeypatch.setattr(tables, "BUCKET_CAP", cap)
    for n_bytes, radius in ((8, 12), (16, 7), (1, 3)):
        codes = _codes(cap + radius, 500, n_bytes, 0.05)
        found, _ = _distributed_pairs(codes, radius, 2, 3)
        expected = _expected_pairs(codes, radius)
        assert len(found) == len(np.unique(found, axis=0))
        assert sorted(map(tuple, found.tolist())) == sorted(map(tuple, expected.tolist()))


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    split_codes=st.sampled_from([1, 5, 40]),
    share_seconds=st.sampled_from([1e-9, 1e-5, 1.0]),
    n_workers=st.integers(1, 3),
    radius=st.integers(0, 14),
    n_bytes=st.sampled_from([2, 8, 16]),
)
def test_crowded_buckets_split_into_shares(
    seed, split_codes, share_seconds, n_workers, radius, n_bytes
):
    # most keys crowded: half the bytes take two values only
    codes = _codes(seed, 400, n_bytes, 0.05)
    codes[:, : n_bytes // 2] = np.random.default_rng(seed).integers(0, 2, (400, n_bytes // 2))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tables, "SPLIT_CODES", split_codes)
        patch.setattr(tables, "_SHARE_SECONDS", share_seconds)
        found, _ = _distributed_pairs(codes, radius, 2, 2, n_workers)
    expected = _expected_pairs(codes, radius)
    assert len(found) == len(np.unique(found, axis=0))
    assert sorted(map(tuple, found.tolist())) == sorted(map(tuple, expected.tolist()))


def test_crowded_buckets_are_set_aside_with_their_sizes(monkeypatch):
    monkeypatch.setattr(tables, "SPLIT_CODES", 2)
    words = np.array([[7], [1], [3], [5], [9], [6], [4]], dtype=np.uint64)
    # keys on bit 0: odd codes in one bucket of 5, even ones in one of 2 (not crowded)
    table = tables.bucket_table([(np.arange(7) * 10, words)], 1, ((1, 1), (0, 1)), 8, 1)
    ((size, seconds),) = tables.crowded_work(table)
    assert size == 5
    assert seconds == table.plans[0].seconds > 0
    bucket = tables.crowded_bucket(table, 0)
    assert bucket.rows.tolist() == [0, 10, 20, 30, 40]
    assert bucket.words[:, 0].tolist() == [7, 1, 3, 5, 9]
    assert bucket.plan == table.plans[0]
    monkeypatch.setattr(tables, "_SHARE_SECONDS", 0.5)
    assert [tables.share_count(s, 1) for s in (0.0, 0.4, 0.6, 1.1, 100.0)] == [1, 1, 2, 3, 4]
    assert tables.share_count(100.0, 3) == 12  # at most four per worker

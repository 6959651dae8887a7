from itertools import pairwise

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpusimhash import cluster_labels, hamming_matrix, near_duplicate_components, near_duplicates
from gpusimhash.codes import code_words
from gpusimhash.join import _mih as mih
from gpusimhash.join._groups import collapse, first_seen_labels


def brute_pairs(codes, radius):
    distances = hamming_matrix(codes, codes)
    i, j = np.nonzero(np.triu(distances <= radius, k=1))
    return np.stack([i, j], axis=1).astype(np.int64)


def same_partition(a, b):
    return np.array_equal(first_seen_labels(a), first_seen_labels(b))


def planted(rng, n, bits, radius):
    """Random codes, each of the first n // 4 with a partner at exactly `radius` and one at
    `radius + 1` bits, and a few exact copies."""
    codes = rng.integers(0, 256, (n, bits // 8), dtype=np.uint8)
    rows = [codes]
    for distance in (radius, radius + 1):
        if distance > bits:
            continue
        flips = np.zeros((n // 4, bits), dtype=bool)
        for row in flips:
            row[rng.choice(bits, distance, replace=False)] = True
        rows.append(codes[: n // 4] ^ np.packbits(flips, axis=1, bitorder="little"))
    rows.append(codes[:3])
    return np.concatenate(rows)


def distinct(codes):
    words, _ = collapse(code_words(codes))
    return words, np.ascontiguousarray(words).view(np.uint8)[:, : codes.shape[1]]


def even_plan(bits, radius, m):
    """m near-equal blocks with thresholds summing to radius - m + 1 (all >= 0)."""
    widths = [bits // m + (i < bits % m) for i in range(m)]
    spare = radius - m + 1
    thresholds = [spare // m + (i < spare % m) for i in range(m)]
    los = np.cumsum([0, *widths[:-1]]).tolist()
    return mih.Plan("mih", tuple(zip(los, widths, thresholds, strict=True)), 0.0)


@pytest.fixture
def force_mih(monkeypatch):
    """Make brute force look expensive so that small inputs are planned as MIH."""
    monkeypatch.setattr(mih, "_BRUTE_ALWAYS", 0)
    monkeypatch.setattr(mih, "_BRUTE_COST", 1.0)


@pytest.mark.parametrize(
    ("bits", "radius"), [(8, 1), (16, 2), (64, 3), (64, 6), (128, 18), (256, 45), (512, 40)]
)
def test_planted_pairs_at_r_and_r_plus_one(bits, radius, force_mih):
    rng = np.random.default_rng(bits + radius)
    words, codes = distinct(planted(rng, 240, bits, radius))
    expected = brute_pairs(codes, radius)
    chosen = mih.plan(words, bits, radius)
    assert chosen.method == "mih"
    plans = [chosen, mih.Plan("brute", (), 0.0)]
    if radius + 1 <= bits // 2 and bits // (radius + 1) <= 22:
        plans.append(even_plan(bits, radius, radius + 1))  # plain pigeonhole
    m = max(1, -(-bits // 22))
    if m <= radius + 1:
        plans.append(even_plan(bits, radius, m))  # few wide blocks, high thresholds
    reference = cluster_labels(expected, len(codes))
    for each in plans:
        np.testing.assert_array_equal(mih.join_pairs(words, bits, radius, chosen=each), expected)
        assert same_partition(mih.join_roots(words, bits, radius, chosen=each), reference)


def test_public_join_and_components_use_the_planner(force_mih):
    rng = np.random.default_rng(7)
    codes = planted(rng, 400, 128, 18)
    codes = np.concatenate([codes, codes[:50]])  # identical copies across the input
    expected = brute_pairs(codes, 18)
    np.testing.assert_array_equal(near_duplicates(codes, max_distance=18), expected)
    np.testing.assert_array_equal(
        near_duplicate_components(codes, max_distance=18), cluster_labels(expected, len(codes))
    )


@pytest.mark.parametrize("bits", [8, 64, 256])
def test_all_identical_codes(bits):
    codes = np.full((500, bits // 8), 0xA5, dtype=np.uint8)
    assert len(near_duplicates(codes, max_distance=3)) == 500 * 499 // 2
    np.testing.assert_array_equal(near_duplicate_components(codes, max_distance=3), 0)
    words, _ = distinct(codes)
    two_blocks = mih.Plan("mih", ((0, 4, 1), (4, 4, 1)), 0.0)
    assert mih.join_pairs(words, bits, 3, chosen=two_blocks).shape == (0, 2)


def test_skewed_buckets_are_not_probed(force_mih):
    # 20,000 distinct codes sharing their first 48 bits: a block over those bits is one bucket
    # holding every code, so the planner probes only the 16 varying bits.
    rng = np.random.default_rng(3)
    codes = np.zeros((20_000, 8), dtype=np.uint8)
    codes[:, :6] = rng.integers(0, 256, 6, dtype=np.uint8)
    low = rng.choice(1 << 16, 20_000, replace=False).astype(np.uint16)
    codes[:, 6:] = low.view(np.uint8).reshape(-1, 2)
    words, _ = distinct(codes)
    chosen = mih.plan(words, 64, 1)
    assert chosen.method == "mih"
    assert all(lo >= 48 for lo, _, _ in chosen.blocks)
    expected = set()
    position = {int(v): i for i, v in enumerate(low)}
    for i, v in enumerate(low):
        for bit in range(16):
            j = position.get(int(v) ^ (1 << bit))
            if j is not None and i < j:
                expected.add((i, j))
    pairs = near_duplicates(codes, max_distance=1)
    assert {tuple(p) for p in pairs.tolist()} == expected
    assert len(pairs) == len(expected)


def test_a_dense_cluster_is_one_component():
    # 3,000 codes within 2 bits of one centre: 4.5 million pairs, one component.
    rng = np.random.default_rng(5)
    centre = rng.integers(0, 256, 16, dtype=np.uint8)
    flips = np.zeros((3000, 128), dtype=bool)
    flips[np.arange(3000), rng.integers(0, 128, 3000)] = True
    flips[np.arange(3000), rng.integers(0, 128, 3000)] = True
    codes = centre ^ np.packbits(flips, axis=1, bitorder="little")
    np.testing.assert_array_equal(near_duplicate_components(codes, max_distance=4), 0)


def test_each_thread_count_gives_the_same_result(monkeypatch):
    rng = np.random.default_rng(11)
    words, codes = distinct(planted(rng, 300, 64, 6))
    expected = brute_pairs(codes, 6)
    for workers in (1, 3):
        monkeypatch.setattr(mih, "threads", lambda workers=workers: workers)
        for each in (even_plan(64, 6, 4), mih.Plan("brute", (), 0.0)):
            np.testing.assert_array_equal(mih.join_pairs(words, 64, 6, chosen=each), expected)
            roots = mih.join_roots(words, 64, 6, chosen=each)
            assert same_partition(roots, cluster_labels(expected, len(codes)))


@st.composite
def plans(draw):
    """Codes, a radius and a random valid plan: disjoint blocks, thresholds covering it."""
    width = draw(st.sampled_from([1, 2, 3, 8]))
    bits = width * 8
    n = draw(st.integers(0, 40))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    centres = rng.integers(0, 256, (3, width), dtype=np.uint8)
    codes = centres[rng.integers(0, 3, n)] ^ np.packbits(
        rng.random((n, bits)) < draw(st.sampled_from([0.02, 0.1, 0.5])),
        axis=1,
        bitorder="little",
    )
    cuts = sorted(draw(st.sets(st.integers(1, bits - 1), max_size=min(7, bits - 1))))
    edges = [0, *cuts, bits]
    blocks = [(lo, hi - lo) for lo, hi in pairwise(edges) if hi - lo <= 22] or [(0, min(bits, 22))]
    blocks = draw(st.permutations(blocks))[: draw(st.integers(1, len(blocks)))]
    # Thresholds up to 3 per block (few probes each), covering the radius.
    radius = draw(st.integers(0, min(bits // 2, 4 * len(blocks) - 1)))
    units = [1] * len(blocks)
    for _ in range(max(0, radius + 1 - len(blocks))):
        units[draw(st.sampled_from([i for i, u in enumerate(units) if u < 4]))] += 1
    chosen = mih.Plan(
        "mih", tuple((lo, w, u - 1) for (lo, w), u in zip(blocks, units, strict=True)), 0.0
    )
    return codes, radius, chosen


@given(plans())
def test_property_any_valid_plan_equals_brute_force(case):
    codes, radius, chosen = case
    words, unique = distinct(codes)
    bits = codes.shape[1] * 8
    expected = brute_pairs(unique, radius)
    np.testing.assert_array_equal(mih.join_pairs(words, bits, radius, chosen=chosen), expected)
    roots = mih.join_roots(words, bits, radius, chosen=chosen)
    assert same_partition(roots, cluster_labels(expected, len(unique)))


def test_plans_that_could_miss_pairs_are_refused():
    words = np.zeros((4, 1), dtype=np.uint64)
    with pytest.raises(ValueError, match="cover"):
        mih.join_pairs(words, 64, 3, chosen=mih.Plan("mih", ((0, 16, 1),), 0.0))
    with pytest.raises(ValueError, match="disjoint"):
        mih.join_roots(words, 64, 1, chosen=mih.Plan("mih", ((0, 16, 0), (8, 16, 0)), 0.0))
    with pytest.raises(ValueError, match="width"):
        mih.join_pairs(words, 64, 0, chosen=mih.Plan("mih", ((0, 32, 0),), 0.0))
    with pytest.raises(ValueError, match="keys per code"):
        mih.join_pairs(words, 64, 9, chosen=mih.Plan("mih", ((0, 22, 9),), 0.0))


def test_the_planner_is_deterministic_and_prefers_brute_force_when_small():
    rng = np.random.default_rng(0)
    words = rng.integers(0, 2**63, (50_000, 2), dtype=np.uint64)
    assert mih.plan(words, 128, 18) == mih.plan(words, 128, 18)
    assert mih.plan(words[:100], 128, 18).method == "brute"
    assert mih.plan(words, 128, 128).method == "brute"  # every pair qualifies

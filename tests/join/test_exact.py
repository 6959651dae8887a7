import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.stats import binom

from gpusimhash import (
    cosine_radius,
    hamming_matrix,
    near_duplicate_groups,
    near_duplicates,
    radius_recall,
)
from gpusimhash.join import _mih as mih


def brute_pairs(codes, radius):
    distances = hamming_matrix(codes, codes)
    i, j = np.nonzero(np.triu(distances <= radius, k=1))
    return np.stack([i, j], axis=1).astype(np.int64)


def clustered_codes(rng, n, width, n_centres, flip_rate):
    """Copies of a few centres with random bit flips: many identical and near-identical codes."""
    centres = rng.integers(0, 256, (n_centres, width), dtype=np.uint8)
    codes = centres[rng.integers(0, n_centres, n)]
    flips = rng.random((n, width * 8)) < flip_rate
    return codes ^ np.packbits(flips, axis=1, bitorder="little")


@pytest.fixture
def force_mih(monkeypatch):
    """Make brute force look expensive so small inputs go through multi-index hashing."""
    monkeypatch.setattr(mih, "_BRUTE_ALWAYS", 0)
    monkeypatch.setattr(mih, "_BRUTE_COST", 1.0)


@pytest.mark.parametrize("width", [1, 2, 3, 8, 9, 16, 32])
@pytest.mark.parametrize("path", ["auto", "mih"])
def test_matches_brute_force_on_clustered_data(request, width, path):
    if path == "mih":
        request.getfixturevalue("force_mih")
    rng = np.random.default_rng(width)
    for flip_rate in (0.01, 0.04, 0.2):
        codes = clustered_codes(rng, 300, width, 8, flip_rate)
        for radius in sorted({0, 1, 3, 6, width * 2, width * 4}):
            np.testing.assert_array_equal(
                near_duplicates(codes, max_distance=radius), brute_pairs(codes, radius)
            )


def test_uniform_random_codes(force_mih):
    rng = np.random.default_rng(1)
    codes = rng.integers(0, 256, (2000, 2), dtype=np.uint8)
    np.testing.assert_array_equal(near_duplicates(codes, max_distance=2), brute_pairs(codes, 2))


def test_giant_identical_group_is_collapsed():
    rng = np.random.default_rng(2)
    codes = np.repeat(rng.integers(0, 256, (1, 8), dtype=np.uint8), 1500, axis=0)
    codes[::100, 0] ^= 1  # 15 near copies at distance 1
    groups = near_duplicate_groups(codes, max_distance=1)
    assert groups.n_unique == 2
    np.testing.assert_array_equal(groups.unique_pairs, [[0, 1]])
    pairs = groups.pairs()
    assert len(pairs) == 1500 * 1499 // 2
    assert (pairs[:, 0] < pairs[:, 1]).all()
    keys = pairs[:, 0] * 1500 + pairs[:, 1]
    assert (np.diff(keys) > 0).all()  # sorted, no repeats


@given(
    st.integers(1, 4).flatmap(
        lambda width: st.tuples(
            st.lists(
                st.lists(st.integers(0, 255), min_size=width, max_size=width),
                min_size=0,
                max_size=40,
            ),
            st.integers(0, width * 8),
            st.just(width),
        )
    ),
    st.booleans(),
)
def test_property_equals_brute_force(case, planned):
    rows, radius, width = case
    codes = np.array(rows, dtype=np.uint8).reshape(-1, width)
    saved = mih._BRUTE_ALWAYS, mih._BRUTE_COST
    if planned:  # plan even the smallest inputs from the data
        mih._BRUTE_ALWAYS, mih._BRUTE_COST = 0, 1.0
    try:
        got = near_duplicates(codes, max_distance=radius)
    finally:
        mih._BRUTE_ALWAYS, mih._BRUTE_COST = saved
    np.testing.assert_array_equal(got, brute_pairs(codes, radius))
    assert got.dtype == np.int64
    assert got.shape[1] == 2


def test_empty_and_single():
    assert near_duplicates(np.zeros((0, 8), np.uint8), max_distance=3).shape == (0, 2)
    assert near_duplicates(np.zeros((1, 8), np.uint8), max_distance=3).shape == (0, 2)


def test_min_cosine_form_uses_the_radius():
    rng = np.random.default_rng(4)
    codes = clustered_codes(rng, 200, 8, 5, 0.05)
    radius = cosine_radius(64, 0.95)
    assert radius == math.floor(64 * math.acos(0.95) / math.pi)
    np.testing.assert_array_equal(
        near_duplicates(codes, min_cosine=0.95), near_duplicates(codes, max_distance=radius)
    )
    # Every pair returned has an estimated cosine of at least 0.95, and no pair left out does.
    distances = hamming_matrix(codes, codes)
    cosine = np.cos(np.pi * distances / 64)
    expected = brute_pairs(codes, 64)[cosine[tuple(brute_pairs(codes, 64).T)] >= 0.95]
    np.testing.assert_array_equal(near_duplicates(codes, min_cosine=0.95), expected)


@pytest.mark.parametrize("bits", [8, 64, 256, 1024])
def test_cosine_radius_agrees_with_the_estimate_at_the_boundary(bits):
    for d in range(bits + 1):
        c = math.cos(math.pi * d / bits)
        r = cosine_radius(bits, c)
        assert math.cos(math.pi * r / bits) >= c
        assert r == bits or math.cos(math.pi * (r + 1) / bits) < c
    assert cosine_radius(bits, 1.0) == 0
    assert cosine_radius(bits, -1.0) == bits


def test_radius_recall_is_the_binomial_cdf():
    theta = math.acos(0.9)
    assert radius_recall(0.9, bits=256, max_distance=30) == pytest.approx(
        binom.cdf(30, 256, theta / math.pi)
    )
    assert radius_recall(1.0, bits=64, max_distance=0) == 1.0
    recall = radius_recall([0.8, 0.9, 0.99], bits=128, max_distance=10)
    assert recall.shape == (3,)
    assert (np.diff(recall) > 0).all()


def test_bad_input():
    codes = np.zeros((3, 8), np.uint8)
    with pytest.raises(TypeError, match="uint8"):
        near_duplicates(codes.view(np.uint64), max_distance=1)
    with pytest.raises(ValueError, match="shape"):
        near_duplicates(np.zeros((2, 2, 2), np.uint8), max_distance=1)
    with pytest.raises(ValueError, match="exactly one"):
        near_duplicates(codes)
    with pytest.raises(ValueError, match="exactly one"):
        near_duplicates(codes, max_distance=1, min_cosine=0.9)
    with pytest.raises(ValueError, match="max_distance"):
        near_duplicates(codes, max_distance=-1)
    with pytest.raises(TypeError, match="max_distance"):
        near_duplicates(codes, max_distance=1.5)
    with pytest.raises(ValueError, match="min_cosine"):
        near_duplicates(codes, min_cosine=1.5)
    with pytest.raises(ValueError, match="true_cosine"):
        radius_recall(2.0, bits=64, max_distance=3)

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gpusimhash
from gpusimhash import cosine_radius, near_duplicate_groups, near_duplicates
from gpusimhash.codes import hamming_matrix
from gpusimhash.join import _lsh as lsh


def brute_force_pairs(codes, radius):
    distances = hamming_matrix(codes, codes)
    i, j = np.nonzero(np.triu(distances <= radius, k=1))
    return np.stack([i, j], axis=1).astype(np.int64)


def flip_bits(code, count, rng):
    bits = np.unpackbits(code, bitorder="little")
    bits[rng.choice(bits.size, count, replace=False)] ^= 1
    return np.packbits(bits, bitorder="little")


def planted(n_pairs, radii, rng, bits=256):
    """Random codes, each followed by a copy at an exact distance from `radii` (cycled)."""
    originals = rng.integers(0, 256, (n_pairs, bits // 8), dtype=np.uint8)
    copies = np.stack([flip_bits(c, radii[i % len(radii)], rng) for i, c in enumerate(originals)])
    codes = np.empty((2 * n_pairs, bits // 8), dtype=np.uint8)
    codes[0::2], codes[1::2] = originals, copies
    return codes


def assert_valid_pairs(pairs, codes, radius):
    assert pairs.dtype == np.int64
    assert pairs.ndim == 2
    assert pairs.shape[1] == 2
    if len(pairs):
        assert (pairs[:, 0] < pairs[:, 1]).all()
        keys = pairs[:, 0] * len(codes) + pairs[:, 1]
        assert (np.diff(keys) > 0).all()  # sorted, no repeats
        distances = hamming_matrix(codes, codes)[pairs[:, 0], pairs[:, 1]]
        assert (distances <= radius).all()


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(0, 60),
    width=st.sampled_from([1, 2, 8, 16, 32]),
    radius_share=st.floats(0.0, 1.0),
    recall=st.floats(0.05, 0.999),
    clustered=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_no_false_positives_and_subset_of_exact(n, width, radius_share, recall, clustered, seed):
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, 256, (n, width), dtype=np.uint8)
    if clustered and n:
        # Few distinct values plus small perturbations: identical codes and near pairs.
        codes = codes[rng.integers(0, max(1, n // 4), n)]
        codes[rng.random(codes.shape) < 0.05] ^= 1
    radius = int(radius_share * width * 8)
    pairs = near_duplicates(codes, max_distance=radius, recall=recall, seed=seed)
    assert_valid_pairs(pairs, codes, radius)
    exact = brute_force_pairs(codes, radius)
    exact_keys = set(map(tuple, exact.tolist()))
    assert set(map(tuple, pairs.tolist())) <= exact_keys
    # Identical codes are always paired.
    same = hamming_matrix(codes, codes) == 0
    i, j = np.nonzero(np.triu(same, k=1))
    assert set(zip(i.tolist(), j.tolist(), strict=True)) <= set(map(tuple, pairs.tolist()))


@pytest.mark.parametrize(("radius", "recall"), [(45, 0.99), (18, 0.99), (45, 0.9)])
def test_recall_on_planted_pairs(radius, recall):
    rng = np.random.default_rng(radius)
    steps = [radius, radius - 1, radius - 3, radius // 2, radius]  # mostly at the radius itself
    codes = planted(400, steps, rng)
    found = near_duplicates(codes, max_distance=radius, recall=recall, seed=3)
    planted_found = np.isin(
        np.arange(0, len(codes), 2) * len(codes) + np.arange(1, len(codes), 2),
        found[:, 0] * len(codes) + found[:, 1],
    )
    # Each planted pair is found with probability >= recall; over 400 pairs the measured share
    # falls below recall - 0.04 with negligible probability (binomial tail).
    assert planted_found.mean() >= recall - 0.04
    assert_valid_pairs(found, codes, radius)


def test_recall_at_the_radius_is_not_much_above_target():
    # With a low target, pairs exactly at the radius must be missed sometimes: the table count
    # is sized to the target, not to a guessed worst case (a check that recall is controllable).
    rng = np.random.default_rng(5)
    codes = planted(400, [40], rng)
    found = near_duplicates(codes, max_distance=40, recall=0.5, seed=0)
    share = len(found) / 400
    assert 0.4 <= share <= 0.85


def test_matches_exact_join_when_recall_is_high_and_radius_small():
    rng = np.random.default_rng(7)
    codes = planted(300, [0, 1, 2, 3, 4, 6], rng, bits=128)
    codes = np.concatenate([codes, codes[:50]])  # identical codes too
    exact = near_duplicates(codes, max_distance=6)
    approx = near_duplicates(codes, max_distance=6, recall=0.999999, seed=1)
    assert set(map(tuple, approx.tolist())) <= set(map(tuple, exact.tolist()))
    assert np.array_equal(approx, exact)  # miss probability per pair 1e-6: all found


def test_deterministic_for_a_seed():
    rng = np.random.default_rng(11)
    codes = planted(300, [30, 40], rng)
    first = near_duplicates(codes, max_distance=40, recall=0.6, seed=9)
    second = near_duplicates(codes, max_distance=40, recall=0.6, seed=9)
    other = near_duplicates(codes, max_distance=40, recall=0.6, seed=10)
    np.testing.assert_array_equal(first, second)
    assert not np.array_equal(first, other)  # at recall 0.6 some 40-bit pairs differ by seed


def test_groups_form_expands_to_pairs():
    rng = np.random.default_rng(2)
    base = planted(100, [10, 20], rng)
    codes = np.concatenate([base, base[:30], base[:5]])
    groups = near_duplicate_groups(codes, max_distance=20, seed=4, recall=0.99)
    assert groups.max_distance == 20
    assert groups.n_unique == len(base)
    np.testing.assert_array_equal(
        groups.pairs(), near_duplicates(codes, max_distance=20, seed=4, recall=0.99)
    )
    assert (groups.unique_pairs[:, 0] < groups.unique_pairs[:, 1]).all()


def test_min_cosine_threshold_uses_cosine_radius():
    rng = np.random.default_rng(3)
    codes = planted(100, [5, 30], rng)
    radius = cosine_radius(256, 0.9)
    by_cosine = near_duplicates(codes, min_cosine=0.9, seed=2, recall=0.99)
    by_radius = near_duplicates(codes, max_distance=radius, seed=2, recall=0.99)
    np.testing.assert_array_equal(by_cosine, by_radius)


def test_radius_near_bits_falls_back_to_exact():
    rng = np.random.default_rng(4)
    codes = rng.integers(0, 256, (40, 2), dtype=np.uint8)
    pairs = near_duplicates(codes, max_distance=15, recall=0.99, max_tables=4)
    np.testing.assert_array_equal(pairs, near_duplicates(codes, max_distance=15))


@pytest.mark.slow
def test_giant_runs_are_joined_exactly(monkeypatch):
    # Runs of equal keys above the giant-run size go to the exact join; shrink that size so
    # clustered codes hit it, and check nothing is lost or invented on that path.
    monkeypatch.setattr(lsh, "_GIANT_RUN", 3)
    rng = np.random.default_rng(6)
    centers = rng.integers(0, 256, (20, 16), dtype=np.uint8)
    codes = np.stack([flip_bits(centers[i % 20], 1 + i % 5, rng) for i in range(400)])
    pairs = near_duplicates(codes, max_distance=8, recall=0.999999)
    np.testing.assert_array_equal(pairs, near_duplicates(codes, max_distance=8))


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"max_distance": -1}, ValueError, "max_distance"),
        ({"max_distance": 1.5}, TypeError, "max_distance"),
        ({"min_cosine": 1.5}, ValueError, "min_cosine"),
        ({}, ValueError, "exactly one"),
        ({"max_distance": 3, "min_cosine": 0.9}, ValueError, "exactly one"),
        ({"max_distance": 3, "recall": 0.0}, ValueError, "recall"),
        ({"max_distance": 3, "recall": 1.0}, ValueError, "recall"),
        ({"max_distance": 3, "recall": float("nan")}, ValueError, "recall"),
        ({"max_distance": 3, "recall": "high"}, TypeError, "recall"),
        ({"max_distance": 3, "seed": -1}, ValueError, "seed"),
        ({"max_distance": 3, "max_tables": 0}, ValueError, "max_tables"),
    ],
)
def test_bad_arguments(kwargs, error, match):
    codes = np.zeros((4, 8), dtype=np.uint8)
    with pytest.raises(error, match=match):
        near_duplicates(codes, **{"recall": 0.99, **kwargs})


def test_bad_codes():
    with pytest.raises(TypeError, match="uint8"):
        near_duplicates(np.zeros((4, 8), dtype=np.int64), max_distance=3, recall=0.99)
    with pytest.raises(ValueError, match="shape"):
        near_duplicates(np.zeros((2, 2, 2), dtype=np.uint8), max_distance=3, recall=0.99)


def test_the_approximate_join_runs_on_the_cpu():
    with pytest.raises(ValueError, match="runs on the CPU"):
        near_duplicates(np.zeros((4, 8), np.uint8), max_distance=3, recall=0.9, device="gpu")


def test_the_deprecated_names_warn_and_give_the_same_pairs():
    rng = np.random.default_rng(3)
    codes = rng.integers(0, 256, (300, 8), dtype=np.uint8)
    expected = near_duplicate_groups(codes, max_distance=20, recall=0.9, seed=5)
    with pytest.warns(DeprecationWarning, match="near_duplicate_groups"):
        groups = gpusimhash.approximate_near_duplicate_groups(
            codes, max_distance=20, recall=0.9, seed=5
        )
    np.testing.assert_array_equal(groups.unique_pairs, expected.unique_pairs)
    with pytest.warns(DeprecationWarning, match="near_duplicates"):
        pairs = gpusimhash.approximate_near_duplicates(codes, max_distance=20, recall=0.9, seed=5)
    np.testing.assert_array_equal(pairs, expected.pairs())

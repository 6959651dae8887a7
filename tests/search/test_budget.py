import numpy as np
import pytest

from gpusimhash.codes import hamming_matrix
from gpusimhash.search.budget import distinct_codes, estimate_pair_count
from gpusimhash.search.exact import near_duplicate_groups, near_duplicates


@pytest.mark.parametrize("radius", [0, 3, 8, 20])
def test_estimate_is_exact_when_the_sample_is_everything(radius):
    codes = np.random.default_rng(1).integers(0, 256, size=(300, 4), dtype=np.uint8)
    codes[100:150] = codes[0]
    expected = len(near_duplicates(codes, max_distance=radius))
    assert estimate_pair_count(codes, radius, sample_size=300) == expected


def test_estimate_scales_a_sample():
    codes = np.zeros((10_000, 8), dtype=np.uint8)
    assert estimate_pair_count(codes, 0, sample_size=100) == 10_000 * 9_999 / 2
    rng = np.random.default_rng(2)
    random = rng.integers(0, 256, size=(8_000, 2), dtype=np.uint8)
    expected = len(near_duplicates(random, max_distance=4))
    estimate = estimate_pair_count(random, 4, sample_size=2000)
    assert abs(estimate - expected) < 0.1 * expected


def test_estimate_errors():
    codes = np.zeros((3, 8), np.uint8)
    with pytest.raises(ValueError, match="max_distance must be >= 0"):
        estimate_pair_count(codes, -1)
    with pytest.raises(ValueError, match="sample_size must be >= 2"):
        estimate_pair_count(codes, 1, sample_size=1)
    with pytest.raises(TypeError, match="uint8"):
        estimate_pair_count(codes.astype(np.int8), 1)


def test_distinct_codes_count_what_the_join_collapses():
    rng = np.random.default_rng(3)
    codes = rng.integers(0, 256, size=(500, 16), dtype=np.uint8)
    codes = codes[rng.integers(0, 500, size=2000)]
    distinct = distinct_codes(codes)
    groups = near_duplicate_groups(codes, max_distance=50)
    assert distinct.shape == (groups.n_unique, 16)
    assert estimate_pair_count(distinct, 50, sample_size=2000) == len(groups.unique_pairs)


def clustered_codes(seed=0):
    """20,000 random 64-bit codes and 200 tight clusters of 20 (each one bit from its centre)."""
    rng = np.random.default_rng(seed)
    spread = rng.integers(0, 256, (20_000, 8), dtype=np.uint8)
    members = np.repeat(rng.integers(0, 256, (200, 8), dtype=np.uint8), 20, axis=0)
    bit = rng.integers(0, 64, members.shape[0])
    members[np.arange(members.shape[0]), bit // 8] ^= (1 << (bit % 8)).astype(np.uint8)
    return np.concatenate([spread, members])


def sample_pair_estimate(codes, radius, sample_size, seed):
    """The estimator this one replaced: pairs inside one sample, scaled by n**2 / s**2."""
    n = codes.shape[0]
    sample = codes[np.random.default_rng(seed).choice(n, size=sample_size, replace=False)]
    within = int(np.triu(hamming_matrix(sample, sample) <= radius, k=1).sum())
    return within * n * (n - 1) / (sample_size * (sample_size - 1))


def test_sampled_degrees_estimate_clustered_codes_where_a_sample_of_pairs_fails():
    codes = clustered_codes()
    true = len(near_duplicates(codes, max_distance=2))
    assert true >= 19 * 20 * 200 / 2  # at least the pairs inside the clusters
    degrees = [estimate_pair_count(codes, 2, sample_size=256, seed=s) / true for s in range(20)]
    pairs = [sample_pair_estimate(codes, 2, 256, s) / true for s in range(20)]
    assert all(0.6 < ratio < 1.4 for ratio in degrees)
    assert sum(not 0.6 < ratio < 1.4 for ratio in pairs) >= 5

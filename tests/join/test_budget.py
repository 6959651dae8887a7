import numpy as np
import pytest

from gpusimhash import _memory
from gpusimhash.codes import hamming_matrix
from gpusimhash.fingerprinting import featurize
from gpusimhash.join import _budget
from gpusimhash.join._budget import check_budget, distinct_codes, estimate_pair_count
from gpusimhash.join._exact import near_duplicate_groups, near_duplicates
from gpusimhash.verify._features import DocumentFeatures
from gpusimhash.verify._spill import feature_spill


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


def test_budget_refuses_in_one_line_unless_forced():
    codes = np.zeros((1000, 16), np.uint8)
    codes[:, 0] = np.arange(1000) % 251  # 251 distinct codes, all within 8 bits
    assert check_budget(codes, 8, budget=31_375) == 251 * 250 / 2
    with pytest.raises(
        ValueError, match=r"^about 31,375 candidate pairs at Hamming radius 8 of 128"
    ):
        check_budget(codes, 8, budget=31_374)
    assert check_budget(codes, 8, budget=10, force=True) == 31_375


@pytest.mark.parametrize("force", [False, True])
def test_dedup_refuses_a_threshold_over_budget_unless_forced(tmp_path, force):
    from gpusimhash.dedup.pipeline import dedup_file

    chain = ["a b c d e f g h", "a b c d e f g x", "a b c d e f y x", "a b c d e z y x"]
    path = tmp_path / "in.txt"
    path.write_text("".join(f"{' '.join(chain[k % 4].split()[:7])} w{k}\n" for k in range(12)))
    options = {"min_cosine": -1.0, "max_candidate_pairs": 60, "force": force}
    if not force:
        with pytest.raises(ValueError, match=r"^about 66 candidate pairs at Hamming radius 256"):
            dedup_file(path, tmp_path / "out", bits=256, **options)
        return
    result = dedup_file(path, tmp_path / "out", bits=256, **options)
    assert result.summary["settings"]["estimated_candidate_pairs"] == 66
    assert result.summary["results"]["removed_below_threshold"] == 0


def test_an_allocation_that_cannot_fit_is_refused_before_it_is_made(monkeypatch):
    monkeypatch.setattr(_memory, "available_memory", lambda: 1000)
    codes = np.zeros((300, 8), np.uint8)
    codes[:, 0] = np.arange(300) % 251
    with pytest.raises(MemoryError, match=r"^about 31,375 candidate pairs .* need about 0 MB"):
        check_budget(codes, 8, force=True)
    with feature_spill() as spill:
        spill.append(DocumentFeatures.from_batch(featurize(["a b c"] * 40)))
        with pytest.raises(MemoryError, match="the features of 40 documents need about 0 MB"):
            spill.gather(np.arange(40))


def test_the_cli_prints_a_refusal_as_it_is(tmp_path, monkeypatch, capsys):
    from gpusimhash.cli import main

    real_check = _memory.check_memory

    def tight(nbytes, what):  # no memory for the join's pairs alone
        with monkeypatch.context() as patch:
            patch.setattr(_memory, "available_memory", lambda: 10)
            real_check(nbytes, what)

    monkeypatch.setattr(_budget, "check_memory", tight)
    path = tmp_path / "in.txt"
    path.write_text("a b c\na b c\na b d\n")
    out = str(tmp_path / "out")
    code = main(["dedup", str(path), "--out", out, "-q", "--candidates", "codes"])
    err = capsys.readouterr().err
    assert code == 1
    assert "candidate pairs at Hamming radius" in err
    assert "MB of memory available" in err

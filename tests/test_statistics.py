"""The seed's measurements of the estimator, repeated on a small document set of our own.

``tests/data/seed_like_docs.json`` holds eight weighted word-count documents like the seed's demo:
two paraphrase pairs whose emphasis differs, an exact repeat and unrelated topics. Over many
seeds, the mean absolute error of ``estimate_cosine`` against the true cosine must fall by about
``1/sqrt(2)`` per doubling of bits, and weighted fingerprints must beat unweighted ones (every
weight 1) on the paraphrase pairs.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest

import gpusimhash

DATA = json.loads((Path(__file__).parent / "data" / "seed_like_docs.json").read_text("utf-8"))
DOCS: list[dict[str, int]] = DATA["documents"]
PAIRS = np.array(list(itertools.combinations(range(len(DOCS)), 2)))
BITS = [8, 16, 32, 64, 128, 256, 512]
MAX_BITS = BITS[-1]
N_SEEDS = 300


def true_cosines(docs: list[dict[str, float]]) -> np.ndarray:
    """Exact cosine of every pair in PAIRS, from the weighted vectors."""
    vocabulary = sorted({f for doc in docs for f in doc})
    column = {f: k for k, f in enumerate(vocabulary)}
    dense = np.zeros((len(docs), len(vocabulary)))
    for row, doc in enumerate(docs):
        for feature, weight in doc.items():
            dense[row, column[feature]] = weight
    unit = dense / np.linalg.norm(dense, axis=1, keepdims=True)
    return np.sum(unit[PAIRS[:, 0]] * unit[PAIRS[:, 1]], axis=1)


@pytest.fixture(scope="module")
def seeds() -> np.ndarray:
    return np.random.default_rng(0).integers(0, 2**32, size=N_SEEDS, dtype=np.uint64)


@pytest.fixture(scope="module")
def codes(seeds) -> np.ndarray:
    """Fingerprints (n_seeds, 2, n_docs, MAX_BITS // 8): weighted, then unweighted (weights 1).

    A b-bit fingerprint is the first b bits of the MAX_BITS one (bit i depends only on the sign
    word i // 32 of each feature); test_shorter_fingerprints_are_prefixes checks this.
    """
    unweighted = [dict.fromkeys(doc, 1) for doc in DOCS]
    per_seed = [
        gpusimhash.fingerprint(DOCS + unweighted, bits=MAX_BITS, seed=int(seed)) for seed in seeds
    ]
    return np.stack(per_seed).reshape(len(seeds), 2, len(DOCS), MAX_BITS // 8)


def estimates(codes: np.ndarray, bits: int, pairs: np.ndarray) -> np.ndarray:
    """estimate_cosine for every (seed, pair), shape (n_seeds, n_pairs), on b-bit prefixes."""
    prefix = codes[..., : bits // 8]
    a = prefix[:, pairs[:, 0]].reshape(-1, bits // 8)
    b = prefix[:, pairs[:, 1]].reshape(-1, bits // 8)
    return np.asarray(gpusimhash.estimate_cosine(a, b)).reshape(len(codes), len(pairs))


def test_shorter_fingerprints_are_prefixes(seeds, codes):
    for seed_index in (0, 1, N_SEEDS - 1):
        for bits in BITS[:-1]:
            short = gpusimhash.fingerprint(DOCS, bits=bits, seed=int(seeds[seed_index]))
            np.testing.assert_array_equal(short, codes[seed_index, 0, :, : bits // 8])


def test_true_cosines_match_the_design_of_the_document_set():
    cosines = dict(zip(map(tuple, PAIRS.tolist()), true_cosines(DOCS), strict=True))
    assert cosines[tuple(DATA["exact_repeat"])] == pytest.approx(1.0)
    similar = {tuple(p) for p in DATA["paraphrase_pairs"]} | {tuple(DATA["exact_repeat"]), (1, 6)}
    for pair, cosine in cosines.items():
        assert (cosine > 0.9) if pair in similar else (cosine < 0.5), (pair, cosine)


def test_exact_repeat_always_estimates_one(codes):
    repeat = np.array([DATA["exact_repeat"]])
    for bits in BITS:
        np.testing.assert_array_equal(estimates(codes[:, 0], bits, repeat), 1.0)
        np.testing.assert_array_equal(estimates(codes[:, 1], bits, repeat), 1.0)


def test_error_falls_by_about_inverse_sqrt2_per_doubling_of_bits(codes):
    truth = true_cosines(DOCS)
    mae = np.array([np.mean(np.abs(estimates(codes[:, 0], bits, PAIRS) - truth)) for bits in BITS])
    ratios = mae[1:] / mae[:-1]
    assert np.all(np.diff(mae) < 0), f"error must fall with every doubling: {mae}"
    assert np.all((ratios >= 0.55) & (ratios <= 0.85)), f"ratios {ratios} (1/sqrt(2) = 0.707)"
    # over the whole range (64x the bits) the error falls by about 8 = sqrt(64)
    assert 5.0 <= mae[0] / mae[-1] <= 12.0, f"mae {mae}"


def test_weighted_fingerprints_beat_unweighted_on_paraphrase_pairs(codes):
    pairs = np.array(DATA["paraphrase_pairs"])
    truth = true_cosines(DOCS)[[PAIRS.tolist().index(p) for p in pairs.tolist()]]
    weighted = np.mean(np.abs(estimates(codes[:, 0], 32, pairs) - truth))
    unweighted = np.mean(np.abs(estimates(codes[:, 1], 32, pairs) - truth))
    # the seed measured 0.048 against 0.086 on its own documents
    assert weighted < 0.1, weighted
    assert weighted < 0.75 * unweighted, (weighted, unweighted)

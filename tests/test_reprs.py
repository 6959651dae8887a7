"""Result objects show what they hold in one line, never their arrays' values."""

import numpy as np
import pytest

import gpusimhash
from gpusimhash.dedup.results import DedupResult

CORPUS = ["a b c d", "a b c d e", "x y z"] * 400


@pytest.fixture(scope="module")
def results():
    pairs, cosine = gpusimhash.verified_near_duplicates(CORPUS, min_cosine=0.8)
    codes = gpusimhash.fingerprint(CORPUS, bits=64, device="cpu")
    n = len(CORPUS)
    return {
        "StarClusters": gpusimhash.star_clusters(pairs, cosine, n),
        "DuplicateGroups": gpusimhash.near_duplicate_groups(codes, max_distance=3),
        "DedupResult": DedupResult(
            {"settings": {}, "results": {"documents": n}}, codes, np.zeros(n), np.ones(n, bool)
        ),
    }


@pytest.mark.parametrize("name", ["StarClusters", "DuplicateGroups", "DedupResult"])
def test_results_have_one_line_reprs(results, name):
    text = repr(results[name])
    assert text.startswith(f"{name}(")
    assert "\n" not in text
    assert len(text) < 160, text
    assert "[1200]" in text  # an array is described by its shape


def test_the_repr_names_every_field_and_small_values():
    assert repr(gpusimhash.near_duplicate_groups(np.zeros((2, 8), np.uint8), max_distance=3)) == (
        "DuplicateGroups(inverse=int64[2], unique_pairs=int64[0, 2], max_distance=3)"
    )

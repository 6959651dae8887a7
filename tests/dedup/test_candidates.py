"""Candidates from the features: dedup keeps exactly what verifying every pair would keep."""

import gzip
import json

import numpy as np
import pytest

from gpusimhash import star_clusters
from gpusimhash.datasets.sample import sample_corpus_path
from gpusimhash.dedup.candidates import candidate_source
from gpusimhash.dedup.options import DedupOptions
from gpusimhash.dedup.pipeline import dedup_file
from gpusimhash.fingerprinting import featurize
from gpusimhash.text import TextFeaturizer
from gpusimhash.verify._features import DocumentFeatures
from gpusimhash.verify._threshold import plan_threshold


def brute_force_kept(texts, measure, value):
    """The star clusters of every pair of documents verified, as dedup's keep-first policy."""
    features = DocumentFeatures.from_batch(featurize(texts, TextFeaturizer()))
    n = features.n_docs
    i, j = np.triu_indices(n, 1)
    pairs = np.stack([i, j], axis=1)
    similarity = getattr(features.similarities(pairs), measure)
    keep = similarity >= value
    stars = star_clusters(pairs[keep], similarity[keep], n)
    return stars.kept_for == np.arange(n)


@pytest.fixture(scope="module")
def sample_texts():
    with gzip.open(sample_corpus_path(), "rt", encoding="utf-8") as lines:
        return [json.loads(line)["text"] for line in lines]


@pytest.mark.slow
@pytest.mark.parametrize(("measure", "value"), [("cosine", 0.8), ("jaccard", 0.8)])
def test_the_sample_keeps_what_brute_force_keeps(tmp_path, sample_texts, measure, value):
    threshold = {"min_cosine": value} if measure == "cosine" else {"min_jaccard": value}
    result = dedup_file(sample_corpus_path(), tmp_path, report=False, **threshold)
    assert result.summary["settings"]["candidates"] == "features"
    np.testing.assert_array_equal(result.kept, brute_force_kept(sample_texts, measure, value))


def test_features_and_every_code_pair_give_the_same_run(tmp_path):
    words = [
        "fast",
        "json",
        "parser",
        "for",
        "python",
        "http",
        "client",
        "async",
        "library",
        "tools",
        "plot",
        "data",
    ]
    rng = np.random.default_rng(3)
    texts = [" ".join(rng.choice(words, rng.integers(1, 8))) for _ in range(400)]
    (tmp_path / "in.txt").write_text("\n".join(texts) + "\n")
    found = dedup_file(tmp_path / "in.txt", tmp_path / "features", bits=64)
    every = dedup_file(
        tmp_path / "in.txt", tmp_path / "codes", bits=64, candidates="codes", max_distance=64
    )
    assert found.summary["settings"]["candidates"] == "features"
    assert found.summary["settings"]["max_distance"] is None
    assert every.summary["settings"]["candidates"] == "codes"
    np.testing.assert_array_equal(found.kept, every.kept)
    np.testing.assert_array_equal(found.kept, brute_force_kept(texts, "cosine", 0.8))
    for name in ("kept.jsonl", "duplicates.jsonl"):
        assert (tmp_path / "features" / name).read_bytes() == (
            tmp_path / "codes" / name
        ).read_bytes()


@pytest.mark.parametrize(
    ("device", "options", "expected"),
    [
        ("cpu", {}, "features"),
        ("gpu", {}, "codes"),
        ("cpu", {"max_distance": 40}, "codes"),
        ("cpu", {"recall": 0.9}, "codes"),
        ("cpu", {"verify": False}, "codes"),
        ("cpu", {"min_cosine": -0.5}, "codes"),
        ("gpu", {"candidates": "features"}, "features"),
    ],
)
def test_auto_takes_the_features_only_where_they_are_exact_and_asked_for(device, options, expected):
    dedup = DedupOptions(**options)
    assert dedup.candidate_source(dedup.threshold(256), device) == expected


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"candidates": "features", "verify": False}, "needs a verified similarity threshold"),
        ({"candidates": "features", "min_cosine": 0.0}, "needs a verified similarity threshold"),
        ({"candidates": "features", "max_distance": 9}, "uses no Hamming radius"),
        ({"candidates": "features", "recall": 0.9}, "uses no Hamming radius"),
        ({"candidates": "pairs"}, "candidates must be one of auto, features, codes"),
    ],
)
def test_contradictory_candidates_are_refused(options, message):
    with pytest.raises(ValueError, match=message):
        DedupOptions(**options)


def test_the_choice_is_a_function_of_the_settings():
    limit = plan_threshold(64, verify=True, min_jaccard=0.5)
    assert candidate_source("auto", limit, "cpu", max_distance=None, recall=None) == "features"
    assert candidate_source("codes", limit, "cpu", max_distance=None, recall=None) == "codes"

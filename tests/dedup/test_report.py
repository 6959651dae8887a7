import math
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusimhash import TextFeaturizer
from gpusimhash.dedup import report as report_module
from gpusimhash.dedup.report import PLOTS, write_report
from gpusimhash.evaluation import true_cosines

WORDS = st.lists(st.sampled_from(["cat", "dog", "sat", "mat", "the", "ran"]), max_size=12)


def counter_cosine(a, b):
    """The test's oracle: cosine of word-count dictionaries."""
    ca, cb = Counter(a), Counter(b)
    dot = sum(ca[w] * cb[w] for w in ca)
    na, nb = math.sqrt(sum(v * v for v in ca.values())), math.sqrt(sum(v * v for v in cb.values()))
    return dot / (na * nb) if na and nb else math.nan


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(WORDS, WORDS), min_size=1, max_size=8))
def test_true_cosines_match_word_counts(pairs):
    texts_a = [" ".join(a) for a, _ in pairs]
    texts_b = [" ".join(b) for _, b in pairs]
    got = true_cosines(TextFeaturizer(), texts_a, texts_b)
    expected = np.array([counter_cosine(a, b) for a, b in pairs])
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12, equal_nan=True)


def test_true_cosines_follow_the_featurizer():
    binary = true_cosines(TextFeaturizer(weighting="binary"), ["a a a b"], ["a b b b"])
    assert binary[0] == pytest.approx(1.0)
    counts = true_cosines(TextFeaturizer(), ["a a a b"], ["a b b b"])
    assert counts[0] == pytest.approx(6 / 10)
    bigrams = true_cosines(TextFeaturizer(ngram=2), ["a b c"], ["c b a"])
    assert bigrams[0] == 0.0


def test_true_cosines_refuse_unequal_lengths():
    with pytest.raises(ValueError, match="as many"):
        true_cosines(TextFeaturizer(), ["a"], [])


def report_arguments(rng):
    return {
        "found_distances": rng.integers(0, 10, 50),
        "random_distances": rng.integers(20, 44, 200),
        "estimated": rng.uniform(-1, 1, 100),
        "true": np.r_[rng.uniform(0, 1, 99), np.nan],
        "sampled_found": rng.random(100) < 0.3,
        "cluster_sizes": rng.integers(2, 9, 30),
    }


SUMMARY = {
    "input": "docs.jsonl",
    "settings": {"bits": 64, "max_distance": 9},
    "results": {"documents": 1234, "kept": 1000, "removed": 234},
    "ground_truth": {"removal_precision": 0.98765},
    "files": {"kept.jsonl": "the kept documents"},
}


def test_report_has_tables_plots_and_files(tmp_path):
    path = write_report(tmp_path, SUMMARY, **report_arguments(np.random.default_rng(0)))
    text = path.read_text()
    assert "| documents | 1,234 |" in text
    assert "| removal_precision | 0.9877 |" in text
    assert "Input: `docs.jsonl`" in text
    assert "- `kept.jsonl`: the kept documents" in text
    for name in PLOTS.values():
        assert f"]({name})" in text
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*PLOTS.values(), "report.md"])


def test_report_without_matplotlib(tmp_path, monkeypatch):
    monkeypatch.setattr(report_module, "_pyplot", lambda: None)
    path = write_report(tmp_path, SUMMARY, **report_arguments(np.random.default_rng(1)))
    assert "Plots need matplotlib" in path.read_text()
    assert [p.name for p in tmp_path.iterdir()] == ["report.md"]


def test_report_with_nothing_found(tmp_path):
    empty = np.zeros(0)
    path = write_report(
        tmp_path,
        {"settings": {"bits": 128}, "results": {"documents": 0}},
        found_distances=empty,
        random_distances=empty,
        estimated=empty,
        true=empty,
        sampled_found=empty.astype(bool),
        cluster_sizes=empty.astype(int),
    )
    assert "| documents | 0 |" in path.read_text()
    assert "ground truth" not in path.read_text()

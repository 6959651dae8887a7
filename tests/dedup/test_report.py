import math
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusimhash import TextFeaturizer, hamming
from gpusimhash._output_names import PLOTS
from gpusimhash.dedup import report as report_module
from gpusimhash.dedup.report import _plots as report_plots
from gpusimhash.dedup.report._render import write_report
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
    monkeypatch.setattr(report_plots, "pyplot", lambda: None)
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


# ---------------------------------------------------------------- seeing why (issue 14, item 4)


def clustered_corpus():
    """Three clusters of sizes 4, 3 and 2, and two singletons; codes from the real fingerprint."""
    texts = [
        "the river flooded the old mill after three days of rain",  # 0: kept, cluster 0
        "the river flooded the old mill after three days of rain!",
        "the river flooded the old mill after three days of heavy rain",
        "the river flooded an old mill after three days of rain",
        "bake the bread until the crust turns golden",  # 4: kept, cluster 1
        "bake the bread until the crust turns golden brown",
        "Bake the bread until the crust turns golden.",
        "the ferry leaves every hour from the harbour",  # 7: kept, cluster 2
        "the ferry leaves every hour from the old harbour",
        "a quiet library lends tools as well as books",
        "farmers expect a late harvest after a cold summer",
    ]
    labels = np.array([0, 0, 0, 0, 1, 1, 1, 2, 2, 3, 4])
    kept_rows = np.array([0, 4, 7, 9, 10])
    similarity = np.array([1.0, 0.99, 0.91, 0.78, 1.0, 0.93, 1.0, 1.0, 0.95, np.nan, np.nan])
    return texts, labels, kept_rows, similarity


def test_examples_show_the_largest_clusters_least_similar_members_first():
    from gpusimhash import fingerprint, near_duplicate_groups

    texts, labels, kept_rows, similarity = clustered_corpus()
    codes = fingerprint(texts, bits=128, device="cpu")
    groups = near_duplicate_groups(codes, max_distance=30)
    view = report_module.ClusterView(labels, kept_rows, similarity)
    sample = report_module.sample_pairs(groups, codes, seed=0, clusters=view)
    examples = sample["examples"]
    assert [(e["size"], e["kept"]) for e in examples] == [(4, 0), (3, 4), (2, 7)]
    assert examples[0]["members"] == [3, 2, 1]  # least similar to the kept one first
    assert examples[1]["members"] == [5, 6]
    for example in examples:
        expected = [int(hamming(codes[r], codes[example["kept"]])[0]) for r in example["members"]]
        assert example["distances"] == expected
    assert set(range(9)) <= set(sample["rows"].tolist())  # their texts are collected
    data = report_module.sampled_cosines(sample, dict(enumerate(texts)), TextFeaturizer())
    assert data["examples"][0]["kept_text"] == texts[0]
    assert data["examples"][0]["member_texts"] == [texts[3], texts[2], texts[1]]


def test_candidates_without_a_radius_sample_no_neighbourhood():
    # from the features the radius is the code length: every code would be a neighbour
    codes = np.random.default_rng(2).integers(0, 256, size=(50, 8), dtype=np.uint8)

    def searched(queries, limit):
        raise AssertionError(f"searched {queries.size} queries up to {limit}")

    sample = report_module.draw_sample(
        np.array([[0, 1]]),
        np.array([5]),
        [],
        n=50,
        bits=64,
        radius=64,
        seed=0,
        codes_of=codes.__getitem__,
        neighbourhood=searched,
    )
    assert sample["sampled_documents"] == 0
    assert sample["neighbourhood"].size == 0
    assert (sample["kind"] == "beyond").sum() == 0
    assert (sample["kind"] == "random").sum() > 0


def test_the_neighbourhood_is_every_distance_up_to_the_reach():
    rng = np.random.default_rng(4)
    base = rng.integers(0, 256, size=(30, 8), dtype=np.uint8)
    flips = np.zeros((30, 8), np.uint8)
    flips[:, 0] = rng.integers(0, 256, 30, dtype=np.uint8)  # neighbours a few bits away
    codes = np.concatenate([base, base ^ flips])
    from gpusimhash import near_duplicate_groups

    radius = 3
    sample = report_module.sample_pairs(near_duplicate_groups(codes, max_distance=radius), codes, 1)
    assert sample["sampled_documents"] == 60  # few documents: every one is a query
    limit = sample["reach"]
    assert limit == report_module.reach(64, radius) == 7
    i, j = np.meshgrid(np.arange(60), np.arange(60), indexing="ij")
    off = i != j
    everything = hamming(codes[i[off]], codes[j[off]])
    assert sorted(sample["neighbourhood"].tolist()) == sorted(everything[everything <= limit])
    beyond = sample["pairs"][sample["kind"] == "beyond"]
    distances = hamming(codes[beyond[:, 0]], codes[beyond[:, 1]])
    assert ((distances > radius) & (distances <= limit)).all()
    assert len(beyond) == int(((everything > radius) & (everything <= limit)).sum())


def test_report_shows_clusters_and_what_lies_beyond_the_radius(tmp_path):
    texts = clustered_corpus()[0]
    examples = [
        {
            "size": 4,
            "kept": 0,
            "members": [3, 2],
            "similarities": [0.78, 0.91],
            "distances": [12, 9],
            "kept_text": texts[0],
            "member_texts": ["an | odd\ntext", texts[2]],
        }
    ]
    true = np.array([0.95, 0.9, 0.85, 0.5, np.nan, 0.1])
    beyond = np.array([False, True, True, True, True, False])
    summary = {
        "settings": {"bits": 64, "max_distance": 9, "similarity": "cosine", "threshold": 0.8},
        "results": {"documents": 11},
    }
    path = write_report(
        tmp_path,
        summary,
        found_distances=np.array([0, 3]),
        random_distances=np.array([30, 33]),
        estimated=np.array([0.9, 0.8, 0.8, 0.7, 0.7, 0.1]),
        true=true,
        sampled_found=np.array([True, False, False, False, False, False]),
        cluster_sizes=np.array([4, 3, 2, 2, 2]),
        sampled_beyond=beyond,
        neighbourhood={"neighbourhood": np.array([0, 1, 9, 10, 12]), "radius": 9, "reach": 13}
        | {"documents": 5},
        examples=examples,
    )
    text = path.read_text()
    assert "### 1. 4 documents, row 0 kept" in text
    assert f"| 0 (kept) | | | {texts[0]} |" in text
    assert "| 3 | 0.780 ⚠ | 12 | an \\| odd text |" in text  # below the threshold: a chain
    assert f"| 2 | 0.910 | 9 | {texts[2]} |" in text
    assert "3 within the candidate radius 9, 2 beyond it" in text
    assert "Of 3 sampled pairs just beyond the radius, 2 have a true cosine at or above 0.8" in text


def test_cluster_sizes_are_drawn_log_log(monkeypatch, tmp_path):
    drawn = []
    monkeypatch.setattr(report_plots, "_save", lambda plt, fig, path, **margins: drawn.append(fig))
    plt = report_plots.pyplot()
    report_plots.plot_cluster_sizes(plt, tmp_path / "x.png", np.array([2, 2, 3, 2690]))
    (ax,) = drawn[0].axes
    assert (ax.get_xscale(), ax.get_yscale()) == ("log", "log")
    xs, ys = ax.lines[0].get_data()
    assert (list(xs), list(ys)) == ([2, 3, 2690], [2, 1, 1])
    drawn[0].canvas.draw()
    labels = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
    assert labels
    assert not any("$" in text for text in labels)
    plt.close(drawn[0])


@pytest.mark.parametrize("bits", [64, 256, 1024])
def test_hamming_histograms_bin_every_distance_as_hist_would(monkeypatch, tmp_path, bits):
    drawn = []
    monkeypatch.setattr(report_plots, "_save", lambda plt, fig, path, **margins: drawn.append(fig))
    plt = report_plots.pyplot()
    rng = np.random.default_rng(bits)
    distances = {"found": rng.integers(0, bits // 4, 300), "random": rng.integers(0, bits + 1, 500)}
    reach = bits // 4
    neighbourhood = rng.integers(0, reach + 1, 2000)
    report_plots.plot_hamming(
        plt, tmp_path / "x.png", bits, reach - 2, distances, neighbourhood, reach
    )
    whole, near = drawn[0].axes
    width = max(1, bits // 256)
    edges = np.arange(-0.5, bits + width + 0.5, width)
    _, reference = plt.subplots(1, 2)
    for key in ("random", "found"):
        reference[0].hist(distances[key], bins=edges, density=True, histtype="stepfilled")
    reference[1].hist(neighbourhood, bins=np.arange(-0.5, reach + 1.5), histtype="stepfilled")
    for drawn_axis, reference_axis in zip((whole, near), reference, strict=True):
        assert len(drawn_axis.patches) == len(reference_axis.patches)
        for got, expected in zip(drawn_axis.patches, reference_axis.patches, strict=True):
            np.testing.assert_allclose(got.get_xy(), expected.get_xy(), rtol=1e-12)
    plt.close("all")


def test_without_a_radius_the_plot_says_no_neighbourhood_was_sampled(monkeypatch, tmp_path):
    drawn = []
    monkeypatch.setattr(report_plots, "_save", lambda plt, fig, path, **margins: drawn.append(fig))
    plt = report_plots.pyplot()
    distances = {"found": np.array([0, 3, 9]), "random": np.array([30, 31, 40])}
    empty = np.zeros(0, np.int64)
    report_plots.plot_hamming(plt, tmp_path / "x.png", 64, 64, distances, empty, 64)
    whole, near = drawn[0].axes
    assert not near.axison
    assert [t.get_text() for t in near.texts] == [
        "Candidates from the features:\nno Hamming radius, no neighbourhood sampled"
    ]
    assert not whole.lines  # no radius line on the distances either
    plt.close("all")

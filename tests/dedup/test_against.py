"""Dedup of a new batch against a saved index: matching, what stays kept, adding the rest."""

import numpy as np
import pytest

from gpusimhash import SimHashIndex, TextFeaturizer
from gpusimhash.dedup import against
from gpusimhash.join._radius import cosine_radius

OLD = ["the river flooded the old mill", "bake the bread until golden brown"]
NEW = [
    "The river flooded the old mill!",  # a copy of OLD[0]: its cluster goes
    "the river flooded the old mill!!",  # same cluster as row 0
    "a ferry leaves every hour from the harbour",  # new
    "bake the bread until golden and brown",  # a near copy of OLD[1]
]


@pytest.fixture
def index(tmp_path):
    built = SimHashIndex(bits=256, seed=5, featurizer=TextFeaturizer(ngram=1))
    built.add(OLD, ids=["old-0", "old-1"])
    built.save(tmp_path / "idx")
    return SimHashIndex.load(tmp_path / "idx")


def test_settings_come_from_the_index(index):
    settings = index.settings
    assert (settings.bits, settings.seed) == (256, 5)
    np.testing.assert_array_equal(settings.fingerprint(NEW), index.to_codes(NEW))


def test_clusters_whose_kept_document_is_indexed_are_removed(index):
    codes = index.to_codes(NEW)
    labels = np.array([0, 0, 1, 2])
    kept = np.array([True, False, True, True])
    radius = against.index_radius(256, "cosine", 0.8)
    assert radius == cosine_radius(256, 0.8)
    found = against.match_clusters(index, codes, np.array([0, 2, 3]), radius)
    assert found.matched.tolist() == [True, False, True]
    assert found.ids.tolist() == ["old-0", None, "old-1"]
    assert found.distances[1] == -1
    assert found.distances[0] == 0
    assert found.kept(labels, kept).tolist() == [False, False, True, False]
    strict = against.match_clusters(index, codes, np.array([0, 2, 3]), 0)
    assert strict.matched.tolist() == [True, False, False]


def test_an_empty_index_matches_nothing():
    empty = SimHashIndex(bits=64)
    found = against.match_clusters(empty, empty.to_codes(NEW), np.arange(4), 64)
    assert found.matched.tolist() == [False] * 4
    assert found.ids.tolist() == [-1] * 4


def test_codes_of_another_length_are_refused(index):
    with pytest.raises(ValueError, match="32 bytes per code"):
        against.match_clusters(index, np.zeros((2, 8), np.uint8), np.array([0]), 3)


def test_add_kept_grows_the_saved_index(index, tmp_path):
    folder = tmp_path / "idx"
    codes = index.to_codes(NEW)
    assert against.add_kept(folder, codes[[2]], ["new-2"]) == 1
    grown = SimHashIndex.load(folder)
    assert grown.ids().tolist() == ["old-0", "old-1", "new-2"]
    np.testing.assert_array_equal(grown.codes_of(["new-2"]), codes[[2]])
    with pytest.raises(ValueError, match="'new-2' is already in the index"):
        against.add_kept(folder, codes[[2]], ["new-2"])
    assert SimHashIndex.load(folder).ids().tolist() == ["old-0", "old-1", "new-2"]


def test_a_run_refuses_other_fingerprint_settings(index, tmp_path):
    from gpusimhash.fingerprinting import FingerprintSettings

    with pytest.raises(ValueError, match="the run must use the same settings"):
        against.Against.open(tmp_path / "idx", FingerprintSettings(bits=128, seed=5))
    with pytest.raises(ValueError, match="manifest.json: missing"):
        against.Against.open(tmp_path / "nothing", index.settings)


def test_a_run_removes_reports_and_adds(index, tmp_path):
    folder = tmp_path / "idx"
    run = against.Against.open(folder, index.settings)
    codes = index.to_codes(NEW)
    labels, kept = np.array([0, 0, 1, 2]), np.array([1, 0, 1, 1], bool)
    kept_rows = np.array([0, 2, 3])
    still = run.remove_indexed(codes, labels, kept, kept_rows, "cosine", 0.8)
    assert still.tolist() == [False, False, True, False]
    assert run.summary() == {"removed_as_indexed": 3, "clusters_matching_index": 2}
    records = run.records(["n-0", "n-1", "n-2", "n-3"])
    assert [(r["index_id"], r["kept_id"], r["ids"], r["rows"]) for r in records] == [
        ("old-0", "n-0", ["n-0", "n-1"], [0, 1]),
        ("old-1", "n-3", ["n-3"], [3]),
    ]
    assert run.records(None)[1]["ids"] == [3]  # no id field: rows are the ids
    assert records[0]["distance"] == 0
    assert run.add(codes, still, ["n-0", "n-1", "n-2", "n-3"]) == 1
    assert SimHashIndex.load(folder).ids().tolist() == ["old-0", "old-1", "n-2"]


def test_the_removed_clusters_are_written(index, tmp_path):
    import json

    run = against.Against.open(tmp_path / "idx", index.settings)
    codes = index.to_codes(NEW)
    run.remove_indexed(
        codes, np.array([0, 0, 1, 2]), np.ones(4, bool), np.array([0, 2, 3]), "cosine", 0.8
    )
    name, description = run.write(tmp_path, "jsonl", None)
    assert name == "in_index.jsonl"
    assert description.startswith("2 clusters removed as already in the index")
    lines = [json.loads(line) for line in (tmp_path / name).read_text().splitlines()]
    assert [(r["index_id"], r["kept_id"], r["rows"]) for r in lines] == [
        ("old-0", 0, [0, 1]),
        ("old-1", 3, [3]),
    ]

"""Search results: short reprs, one query at a time, pandas frames, the same names as the CLI."""

import inspect
import sys

import numpy as np
import pytest

from gpusimhash import SimHashIndex
from gpusimhash.cli import options
from gpusimhash.index._results import Hits, RangeResult, SearchResult


@pytest.fixture(scope="module")
def index():
    codes = np.random.default_rng(0).integers(0, 256, size=(500, 8), dtype=np.uint8)
    built = SimHashIndex(64)
    built.add(codes, ids=np.arange(1000, 1500))
    return built, codes


def test_reprs_are_short(index):
    built, codes = index
    for result in (built.search(codes, k=50), built.range_search(codes, max_distance=64)):
        text = repr(result)
        assert len(text) < 120, text
        assert "n_queries=500" in text
    assert repr(built.search(codes[:1], k=3).query(0)).startswith("Hits(n=3, ids=[1000, ")


def test_query_gives_one_querys_hits_without_padding(index):
    built, codes = index
    nearest = built.search(codes[:2], k=3)
    hits = nearest.query(1)
    assert isinstance(hits, Hits)
    np.testing.assert_array_equal(hits.ids, nearest.ids[1])
    np.testing.assert_array_equal(hits.distances, nearest.distances[1])
    small = SimHashIndex(64)
    small.add(codes[:2])
    padded = small.search(codes[:1], k=5)
    assert padded.query(0).ids.tolist() == [0, 1]
    assert padded.query(-1).distances.tolist() == padded.distances[0, :2].tolist()
    within = built.range_search(codes[:3], max_distance=20)
    for q in range(3):
        a, b = within.lims[q], within.lims[q + 1]
        np.testing.assert_array_equal(within.query(q).ids, within.ids[a:b])
    with pytest.raises(IndexError, match="query 3 out of range for 3 queries"):
        within.query(3)


def test_to_pandas_has_one_row_per_result(index):
    pytest.importorskip("pandas")
    built, codes = index
    within = built.range_search(codes[:4], max_distance=24)
    frame = within.to_pandas()
    assert list(frame.columns) == ["query", "id", "distance", "estimated_cosine"]
    assert len(frame) == within.lims[-1]
    assert frame["query"].tolist() == np.repeat(np.arange(4), np.diff(within.lims)).tolist()
    small = SimHashIndex(64)
    small.add(codes[:2], ids=["a", "b"])
    nearest = small.search(codes[:1], k=4).to_pandas()
    assert nearest["id"].tolist() == ["a", "b"]
    assert nearest["distance"].tolist()[0] == 0


def test_unpacking_and_field_names():
    assert SearchResult._fields == ("distances", "ids", "estimated_cosines")
    assert RangeResult._fields == ("lims", "distances", "ids", "estimated_cosines")


def test_the_index_and_the_command_line_share_the_default_bits():
    default = inspect.signature(SimHashIndex).parameters["bits"].default
    assert default == options.DEFAULT_BITS == 128
    assert SimHashIndex().bits == 128


def test_to_pandas_without_pandas_says_what_to_install(index, monkeypatch):
    built, codes = index
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas raises ImportError
    with pytest.raises(ImportError, match="to_pandas needs pandas: pip install pandas"):
        built.search(codes[:1], k=1).to_pandas()

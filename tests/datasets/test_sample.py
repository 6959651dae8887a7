import gzip
import json
import random
import re
from collections import Counter

import numpy as np
import pytest
import scipy.sparse as sp

from gpusimhash.datasets.sample import (
    MAX_UNRELATED_COSINE,
    build_sample,
    english_original,
    english_variant,
    sample_corpus_path,
)


@pytest.fixture(scope="module")
def records():
    with gzip.open(sample_corpus_path(), "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def word_count_cosines(texts):
    rows = [Counter(re.findall(r"\w+", t.lower())) for t in texts]
    columns = {}
    data, indices, indptr = [], [], [0]
    for row in rows:
        for word, count in row.items():
            indices.append(columns.setdefault(word, len(columns)))
            data.append(count)
        indptr.append(len(indices))
    matrix = sp.csr_matrix((data, indices, indptr), shape=(len(rows), len(columns)), dtype=float)
    norms = np.sqrt(matrix.multiply(matrix).sum(axis=1)).A1
    matrix = sp.diags(1 / norms) @ matrix
    return (matrix @ matrix.T).toarray()


def test_sample_is_small_and_well_formed(records):
    assert sample_corpus_path().stat().st_size < 300_000
    assert 3000 <= len(records) <= 5000
    assert [r["id"] for r in records] == list(range(len(records)))
    for r in records:
        assert set(r) == {"id", "text", "group", "kind", "source"}
        assert isinstance(r["text"], str)
        assert r["text"]
        assert r["kind"] in ("original", "exact", "near")
        assert r["source"] in ("english", "synthetic")


def test_ground_truth_is_consistent(records):
    kinds = Counter(r["kind"] for r in records)
    assert kinds["exact"] > 200
    assert kinds["near"] > 600
    for r in records:
        original = records[r["group"]]
        assert original["kind"] == "original"
        assert original["group"] == original["id"]
        assert original["source"] == r["source"]
        if r["kind"] == "exact":
            assert r["text"] == original["text"]
        if r["kind"] == "near":
            assert r["text"] != original["text"]


def test_unrelated_english_originals_are_dissimilar(records):
    english = [r["text"] for r in records if r["source"] == "english" and r["kind"] == "original"]
    cosines = word_count_cosines(english)
    np.fill_diagonal(cosines, 0.0)
    assert cosines.max() < MAX_UNRELATED_COSINE + 1e-9


def test_near_copies_stay_similar(records):
    near = [r for r in records if r["kind"] == "near"]
    texts = [t for r in near for t in (r["text"], records[r["group"]]["text"])]
    cosines = word_count_cosines(texts)
    pair_cosines = cosines[np.arange(0, len(texts), 2), np.arange(1, len(texts), 2)]
    assert np.median(pair_cosines) > 0.9
    assert np.quantile(pair_cosines, 0.1) > 0.7


def test_sample_is_reproducible(tmp_path, records):
    path = tmp_path / "again.jsonl.gz"
    assert build_sample(path) == len(records)
    with gzip.open(path, "rt", encoding="utf-8") as f:
        assert [json.loads(line) for line in f] == records


def test_english_variant_always_changes_the_text():
    rng = random.Random(5)
    for _ in range(500):
        text = english_original(rng)
        assert english_variant(text, rng) != text

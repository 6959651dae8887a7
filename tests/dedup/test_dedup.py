import json

import numpy as np
import pytest

from gpusimhash.dedup.pipeline import dedup_file


def write_lines(path, lines):
    path.write_text("".join(line + "\n" for line in lines))
    return path


def test_clusters_and_keep_policies(tmp_path):
    lines = ["blue sky", "red fox", "red fox red fox", "blue sky", "red fox", "green tea"]
    path = write_lines(tmp_path / "a.txt", lines)
    # 64-bit codes: "red fox" and "red fox red fox" have the same features, doubled weights
    for keep, expected in (("first", [0, 1, 5]), ("longest", [0, 2, 5])):
        result = dedup_file(path, tmp_path / keep, bits=64, max_distance=0, keep=keep)
        assert np.flatnonzero(result.kept).tolist() == expected
        assert result.cluster.tolist() == [0, 1, 1, 0, 1, -1]
        assert result.summary["cluster_sizes"] == {"1": 1, "2": 1, "3": 1}


def test_keep_by_score(tmp_path):
    path = tmp_path / "a.jsonl"
    docs = [{"text": "same words", "s": 1}, {"text": "same words", "s": 5}, {"text": "x", "s": 0}]
    path.write_text("".join(json.dumps(d) + "\n" for d in docs))
    result = dedup_file(path, tmp_path / "o", max_distance=0, keep="score", score_field="s")
    assert result.kept.tolist() == [False, True, True]


def test_dedup_file_refuses_bad_options(tmp_path):
    path = tmp_path / "a.txt"
    path.write_text("a\nb\n")
    with pytest.raises(ValueError, match="keep must be one of"):
        dedup_file(path, tmp_path / "o", keep="best", max_distance=3)
    with pytest.raises(ValueError, match="score field"):
        dedup_file(path, tmp_path / "o", keep="score", max_distance=3)
    with pytest.raises(ValueError, match="give one of max_distance, min_cosine and min_jaccard"):
        dedup_file(path, tmp_path / "o", verify=False, max_distance=3, min_cosine=0.9)
    with pytest.raises(ValueError, match="cluster must be one of star, components"):
        dedup_file(path, tmp_path / "o", cluster="single")


def test_dedup_file_reports_codes_clusters_and_kept(tmp_path):
    path = tmp_path / "a.txt"
    path.write_text("red fox\nblue sky\nred fox\nred fox\n")
    result = dedup_file(path, tmp_path / "o", bits=64, max_distance=0)
    assert result.kept.tolist() == [True, True, False, False]
    assert result.cluster.tolist() == [0, -1, 0, 0]
    assert result.codes.shape == (4, 8)
    results = result.summary["results"]
    assert results["candidate_pairs"] == 3
    assert results["candidate_code_pairs"] == 0
    # three copies are one unit: nothing to compare, and the verified pairs are not listed
    assert results["pairs_verified"] == 0
    assert results["near_duplicate_pairs"] is None
    assert result.summary["results"]["clusters"] == 1

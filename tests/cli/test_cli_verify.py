"""dedup's verification, clustering and guard-rail options, end to end."""

import json
import re

import numpy as np

from gpusimhash import verify
from gpusimhash.cli import dedup as cli_dedup
from gpusimhash.cli import main
from gpusimhash.verify._pairs import verify_pairs

CHAIN = [
    "alpha beta gamma delta epsilon zeta eta theta",
    "alpha beta gamma delta epsilon zeta eta iota",
    "alpha beta gamma delta epsilon zeta kappa iota",
    "alpha beta gamma delta epsilon lambda kappa iota",
    "",
    "...",
    "something else entirely",
]


def dedup(tmp_path, capsys, *args, docs=CHAIN):
    path = tmp_path / "in.txt"
    path.write_text("".join(t + "\n" for t in docs), encoding="utf-8")
    out = tmp_path / "out"
    code = main(
        ["dedup", str(path), "--out", str(out), "--no-report", "--json", "-q", "--overwrite", *args]
    )
    captured = capsys.readouterr()
    summary = json.loads(captured.out) if code == 0 else None
    duplicates = (
        [json.loads(line) for line in (out / "duplicates.jsonl").read_text().splitlines()]
        if code == 0
        else None
    )
    return code, summary, duplicates, captured.err


def test_cli_defaults_are_the_librarys():
    assert cli_dedup.DEFAULT_MIN_COSINE == verify.DEFAULT_MIN_COSINE
    assert cli_dedup.DEFAULT_CANDIDATE_RECALL == verify.DEFAULT_CANDIDATE_RECALL


def test_star_clusters_never_chain(tmp_path, capsys):
    # neighbours share 7 of 8 words (cosine 0.875), two apart 6 of 8 (0.75)
    code, summary, duplicates, err = dedup(tmp_path, capsys)
    assert code == 0, err
    assert err == ""
    assert [(c["rows"], c["kept_row"]) for c in duplicates] == [([0, 1], 0), ([2, 3], 2)]
    assert [c["similarities"] for c in duplicates] == [[1.0, 0.875], [1.0, 0.875]]
    results = summary["results"]
    assert results["removed_below_threshold"] == 0
    assert results["lowest_similarity_to_kept"] == 0.875
    assert results["largest_cluster"] == 2
    assert results["featureless_documents"] == 2
    assert summary["settings"]["cluster"] == "star"
    assert summary["settings"]["verify"] is True


def test_components_chain_and_warn(tmp_path, capsys):
    code, summary, duplicates, err = dedup(tmp_path, capsys, "--cluster", "components")
    assert code == 0
    assert [c["rows"] for c in duplicates] == [[0, 1, 2, 3]]
    assert duplicates[0]["similarities"] == [1.0, 0.875, 0.75, 0.625]
    assert summary["results"]["removed_below_threshold"] == 2
    assert err.startswith("gpusimhash: warning: 2 removed documents are below the cosine threshold")
    assert len(err.splitlines()) == 1


def test_every_removed_document_is_verified_against_its_kept_one(tmp_path, capsys):
    rng = np.random.default_rng(5)
    words = [f"w{k}" for k in range(40)]
    base = [list(rng.choice(words, 10)) for _ in range(30)]
    docs = []
    for k in range(300):
        tokens = list(base[k % 30])
        for _ in range(rng.integers(0, 4)):
            tokens[rng.integers(10)] = str(rng.choice(words))
        docs.append(" ".join(tokens))
    for options in ([], ["--min-jaccard", "0.6"], ["--keep", "longest", "--bits", "64"]):
        code, summary, duplicates, err = dedup(tmp_path, capsys, *options, docs=docs)
        assert code == 0, err
        assert summary["results"]["removed_below_threshold"] == 0
        measure = "jaccard" if "--min-jaccard" in options else "cosine"
        value = 0.6 if measure == "jaccard" else 0.8
        pairs = [
            (row, c["kept_row"]) for c in duplicates for row in c["rows"] if row != c["kept_row"]
        ]
        assert pairs
        checked, similarity = verify_pairs(docs, pairs, **{f"min_{measure}": value})
        assert len(checked) == len(pairs)
        expected = sorted(
            s
            for c in duplicates
            for r, s in zip(c["rows"], c["similarities"], strict=True)
            if r != c["kept_row"]
        )
        np.testing.assert_array_equal(np.sort(similarity), expected)


def test_featureless_documents_pair_up_only_when_asked(tmp_path, capsys):
    docs = ["", "...", "a b c", "!!", "x y"]
    code, summary, duplicates, _ = dedup(tmp_path, capsys, docs=docs)
    assert code == 0
    assert duplicates == []
    assert summary["results"]["featureless_documents"] == 3
    code, summary, duplicates, _ = dedup(tmp_path, capsys, "--empty-as-duplicates", docs=docs)
    assert [c["rows"] for c in duplicates] == [[0, 1, 3]]
    assert summary["results"]["removed"] == 2


def test_no_verify_is_todays_dedup(tmp_path, capsys):
    # estimated cosine 0.7 is radius 64 of 256 bits: the chain 0-1-2-3 (distances 32 to 50)
    code, summary, duplicates, err = dedup(
        tmp_path, capsys, "--no-verify", "--cluster", "components", "--min-cosine", "0.7"
    )
    assert code == 0
    assert summary["settings"]["verify"] is False
    assert summary["settings"]["max_distance"] == 64
    assert [c["rows"] for c in duplicates] == [[0, 1, 2, 3]]
    assert duplicates[0]["similarities"] == [1.0, 0.875, 0.75, 0.625]
    assert summary["results"]["removed_below_threshold"] == 1
    assert "warning: 1 removed documents are below" in err


def test_guard_rail_refuses_in_one_line(tmp_path, capsys):
    # 15,000 documents at --min-cosine -1: every pair is a candidate, over the budget
    rng = np.random.default_rng(0)
    docs = [" ".join(rng.choice([f"w{k}" for k in range(500)], 6)) for _ in range(15_000)]
    code, _, _, err = dedup(tmp_path, capsys, "--min-cosine", "-1", docs=docs)
    assert code == 1
    assert err.count("\n") == 1
    assert re.match(
        r"gpusimhash: error: about 1\d\d,\d{3},\d{3} candidate pairs at Hamming radius 256", err
    )
    assert "--force" in err

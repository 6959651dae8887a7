"""What a user sees in report.md after `gpusimhash dedup`: the clusters and the threshold."""

import json
import re
import subprocess
import sys

import pytest

ORIGINAL = "the river flooded the old mill after three days of heavy rain in the valley below"
EDITS = [
    ORIGINAL,
    ORIGINAL + " again",
    ORIGINAL.replace("heavy", "steady"),
    "bake the bread at two hundred degrees until the crust turns a deep golden brown",
    "bake the bread at two hundred degrees until the crust turns a deep golden brown!",
    "a quiet library in the north of the city lends tools as well as books to members",
]


@pytest.mark.parametrize("candidates", ["auto", "codes"])
def test_the_report_shows_the_largest_clusters_and_the_threshold(tmp_path, candidates):
    path = tmp_path / "docs.jsonl"
    path.write_text("".join(json.dumps({"text": t}) + "\n" for t in EDITS))
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "gpusimhash", "dedup", str(path), "--out", str(out), "-q"]
        + ["--candidates", candidates],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "### 1. 3 documents, row 0 kept" in report
    assert f"| 0 (kept) | | | {ORIGINAL} |" in report
    assert re.search(r"\| [12] \| 0\.\d{3} \| \d+ \| the river flooded", report)
    assert "### 2. 2 documents, row 3 kept" in report
    neighbours = re.search(r"Neighbours of 6 sampled documents up to distance \d+", report)
    # the defaults take the candidates from the features: no radius, no neighbourhood to sample
    assert (neighbours is not None) == (candidates == "codes")
    assert ("not from a Hamming radius" in report) == (candidates == "auto")
    assert "(log-log)" in report


def test_the_report_names_documents_by_their_ids(tmp_path):
    path = tmp_path / "docs.jsonl"
    path.write_text(
        "".join(json.dumps({"id": f"doc-{n}", "text": t}) + "\n" for n, t in enumerate(EDITS))
    )
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "gpusimhash", "dedup", str(path), "--out", str(out), "-q"],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "### 1. 3 documents, doc-0 (row 0) kept" in report
    assert "| id | row | similarity | distance | text |" in report
    assert f"| doc-0 | 0 (kept) | | | {ORIGINAL} |" in report
    assert re.search(r"\| doc-[12] \| [12] \| 0\.\d{3} \| \d+ \| the river flooded", report)

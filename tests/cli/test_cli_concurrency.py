"""Concurrent ``gpusimhash index add`` commands: each waits for the other, nothing is lost."""

import json
import subprocess
import sys

import numpy as np

from gpusimhash import SimHashIndex
from gpusimhash.cli import main


def write_docs(path, start, n):
    lines = (
        json.dumps({"text": f"document {i} on topic {i * 7919 % 997}"})
        for i in range(start, start + n)
    )
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_concurrent_adds_keep_every_document(tmp_path):
    write_docs(tmp_path / "base.jsonl", 0, 300)
    write_docs(tmp_path / "a.jsonl", 300, 200)
    write_docs(tmp_path / "b.jsonl", 500, 200)
    folder = tmp_path / "idx"
    assert main(["index", "build", str(tmp_path / "base.jsonl"), "--out", str(folder), "-q"]) == 0
    command = [sys.executable, "-m", "gpusimhash", "index", "add", str(folder)]
    runs = [
        subprocess.Popen([*command, str(tmp_path / name), "-q"], stderr=subprocess.PIPE, text=True)
        for name in ("a.jsonl", "b.jsonl")
    ]
    for run in runs:
        _, stderr = run.communicate(timeout=120)
        assert run.returncode == 0, stderr
    index = SimHashIndex.load(folder)
    assert len(index) == 700
    np.testing.assert_array_equal(np.sort(index.ids()), np.arange(700))


def test_query_with_a_huge_k_answers_with_the_entries_there_are(tmp_path, capsys):
    write_docs(tmp_path / "base.jsonl", 0, 20)
    folder = tmp_path / "idx"
    assert main(["index", "build", str(tmp_path / "base.jsonl"), "--out", str(folder), "-q"]) == 0
    text = f"document 3 on topic {3 * 7919 % 997}"
    args = ["index", "query", str(folder), text, "-k", "300000000", "--json"]
    assert main(args) == 0
    found = json.loads(capsys.readouterr().out)["queries"][0]["results"]
    assert len(found) == 20
    assert found[0] == {"id": 3, "distance": 0, "estimated_cosine": 1.0}


def test_out_of_memory_advice_names_the_threshold(monkeypatch, capsys, tmp_path):
    from gpusimhash.cli import index as index_command

    def exhausted(args):
        raise MemoryError

    monkeypatch.setattr(index_command, "run_stats", exhausted)
    assert main(["index", "stats", str(tmp_path)]) == 1
    assert "try a smaller --max-distance or a higher --min-cosine" in capsys.readouterr().err

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

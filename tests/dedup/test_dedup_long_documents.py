"""A document too long for the memory: the error names it, its file and size, not the pairs."""

import json
import subprocess
import sys

from gpusimhash import _memory
from gpusimhash.cli import main

ARGS = ["-q", "--bits", "64", "--max-distance", "3", "--no-report"]


def test_a_document_longer_than_the_memory_holds_is_refused_by_name(tmp_path, monkeypatch, capsys):
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    first.write_text(json.dumps({"text": "a b c"}) + "\n")
    texts = ["d e f", "g h i", "x " * 50_000]
    second.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))
    monkeypatch.setattr(_memory, "available_memory", lambda: 10**6)
    out = tmp_path / "out"
    assert main(["dedup", str(first), str(second), "--out", str(out), *ARGS]) == 1
    error = capsys.readouterr().err
    assert f"{second}, document 3: a text of 100,000 characters needs, to featurize," in error
    assert "more than the 1 MB of memory available: split that document or leave it out" in error
    assert "pairs" not in error
    assert not (out / "kept.jsonl").exists()


RUN_UNDER_A_LIMIT = """
import resource, sys
from gpusimhash.cli import main
small, huge, out, extra = sys.argv[1:]
args = ["-q", "--bits", "64", "--max-distance", "3", "--no-report"]
assert main(["dedup", small, "--out", out + ".warm", *args]) == 0  # compiled loops loaded
status = open("/proc/self/status").read().split("VmSize:")[1]
limit = int(status.split()[0]) * 1024 + int(extra)
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
sys.exit(main(["dedup", huge, "--out", out, *args]))
"""


def test_memory_that_runs_out_while_featurizing_names_the_longest_document(tmp_path):
    small, huge = tmp_path / "small.txt", tmp_path / "huge.txt"
    small.write_text("a b c\na b c\nd e f\n")
    letters = "abcdefghijklmnopqrstuvwxyz"
    huge.write_text("a short line\n" + " ".join(letters[i % 26] for i in range(5_000_000)) + "\n")
    done = subprocess.run(
        [sys.executable, "-c", RUN_UNDER_A_LIMIT, small, huge, tmp_path / "out", str(60 << 20)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    error = done.stderr.strip().splitlines()[-1]
    assert error.startswith(f"gpusimhash: error: out of memory featurizing {huge}, document 2: ")
    assert "9,999,999 bytes of text, the longest of a batch of 2 documents" in error
    assert "pairs" not in error


def test_the_report_featurizes_a_text_in_many_sampled_pairs_once():
    import numpy as np

    from gpusimhash import TextFeaturizer
    from gpusimhash.dedup.report._sample import sampled_cosines
    from gpusimhash.evaluation import true_cosines

    seen = []

    class Counting(TextFeaturizer):
        def transform(self, texts, **kwargs):
            seen.append(list(texts))
            return super().transform(texts, **kwargs)

    texts = {0: "a b " * 1000, 1: "a b c", 2: "a", 3: ""}
    pairs = np.array([[0, 1], [0, 2], [0, 3], [1, 2], [0, 1]])
    sample = {
        "pairs": pairs,
        "examples": [],
        "kind": np.array(["found"] * len(pairs)),
        **dict.fromkeys(["found_distances", "random_distances", "estimated"], np.zeros(5)),
        **dict.fromkeys(["neighbourhood", "radius", "reach", "sampled_documents"], None),
    }
    true = sampled_cosines(sample, texts, Counting())["true"]
    assert seen == [[texts[0], texts[1], texts[2], texts[3]]]  # each text once
    expected = true_cosines(
        TextFeaturizer(), [texts[a] for a in pairs[:, 0]], [texts[b] for b in pairs[:, 1]]
    )
    np.testing.assert_array_equal(true, expected)

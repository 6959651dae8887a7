"""index build and add read plain text as UTF-8 bytes: the codes the same texts get as str."""

import json

import numpy as np

from gpusimhash import SimHashIndex, fingerprint
from gpusimhash.cli import main
from gpusimhash.io import lines

TEXTS = ["Ärger über Straßen", "😀 emoji line", "", "plain words here", "日本語", "x y"] * 3


def test_index_build_and_add_from_text_read_as_bytes(tmp_path, monkeypatch):
    (tmp_path / "a.txt").write_text("".join(t + "\n" for t in TEXTS[:10]), encoding="utf-8")
    (tmp_path / "b.txt").write_text("".join(t + "\n" for t in TEXTS[10:]), encoding="utf-8")
    read = []
    original = lines.read_line_batches

    def recording(*args, **kwargs):
        read.append(args[0])
        return original(*args, **kwargs)

    monkeypatch.setattr(lines, "read_line_batches", recording)
    folder = tmp_path / "idx"
    common = ["--bits", "128", "--batch-size", "4", "-q"]
    assert main(["index", "build", str(tmp_path / "a.txt"), "--out", str(folder), *common]) == 0
    assert main(["index", "add", str(folder), str(tmp_path / "b.txt"), *common[2:]]) == 0
    assert [p.name for p in read] == ["a.txt", "b.txt"]
    index = SimHashIndex.load(folder)
    stored = index.codes_of(list(range(len(TEXTS))))
    expected = fingerprint(TEXTS, bits=128, device="cpu", featurizer=index.featurizer)
    np.testing.assert_array_equal(stored, expected)
    (tmp_path / "c.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in TEXTS))
    from_json = tmp_path / "idx_json"
    assert (
        main(["index", "build", str(tmp_path / "c.jsonl"), "--out", str(from_json), *common]) == 0
    )
    np.testing.assert_array_equal(
        SimHashIndex.load(from_json).codes_of(list(range(len(TEXTS)))), stored
    )

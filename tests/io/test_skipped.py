"""read_batches(skipped=...): invalid records left out, counted and named; damaged files still raise."""

import gzip
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from gpusimhash.io.lines import document_batches
from gpusimhash.io.readers import InputError, read_batches
from gpusimhash.io.skipped import Skipped


def read(path, **kwargs):
    skipped = Skipped()
    batches = list(read_batches(path, skipped=skipped, batch_size=2, records=True, **kwargs))
    rows = [int(r) for b in batches for r in b.rows]
    assert rows == list(range(len(rows)))  # skipped records are not rows
    return [t for b in batches for t in b.texts], [i for b in batches for i in b.ids], skipped


def test_jsonl(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_bytes(
        b'{"text": "a", "id": 1}\n{"text": \n\n{"body": "b", "id": 2}\n{"text": 5, "id": 3}\n'
        b'{"text": "bad \xff", "id": 4}\n{"text": "x \\ud800", "id": 5}\n{"text": "c", "id": 1.5}\n'
        b'[1]\n{"text": "d", "id": 6}\n'
    )
    texts, ids, skipped = read(path, id_field="id")
    assert (texts, ids) == (["a", "d"], [1, 6])
    assert skipped.count == 7
    assert [e.split(": ")[0].split(", ")[1] for e in skipped.examples] == [
        "line 2",
        "line 4",
        "line 5",
        "line 6",
        "line 7",
        "line 8",
        "line 9",
    ]
    with pytest.raises(InputError, match="line 2: not valid JSON"):
        list(read_batches(path))


def test_text_csv_and_parquet(tmp_path):
    text = tmp_path / "d.txt"
    text.write_bytes(b"one\nt\xffwo\nthree\n")
    texts, ids, skipped = read(text)
    assert (texts, ids, skipped.count) == (["one", "three"], [0, 1], 1)
    found = Skipped()
    lines = [t for b in document_batches(text, skipped=found) for t in b.texts]
    assert (lines, found.count) == (["one", "three"], 1)
    csv = tmp_path / "d.csv"
    csv.write_text("id,text\n1,a\n2,b,extra\n3,c\n")
    texts, ids, skipped = read(csv, id_field="id")
    assert (texts, ids, skipped.examples) == (
        ["a", "c"],
        ["1", "3"],
        [f"{csv}, line 3: 3 fields, the header has 2"],
    )
    parquet = tmp_path / "d.parquet"
    pq.write_table(pa.table({"text": ["a", None, "c", "d"], "id": [1, 2, None, 4]}), parquet)
    texts, ids, skipped = read(parquet, id_field="id")
    assert (texts, ids, skipped.count) == (["a", "d"], [1, 4], 2)
    assert "row 1: column 'text' must be a string, got null" in skipped.examples[0]


def test_damaged_files_still_raise(tmp_path):
    path = tmp_path / "c.jsonl.gz"
    data = gzip.compress(
        b"".join(json.dumps({"text": f"d {k}"}).encode() + b"\n" for k in range(5000))
    )
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(InputError, match="cannot read"):
        read(path)
    quote = tmp_path / "q.csv"
    quote.write_text('text\n"never closed\nb\n')
    with pytest.raises(InputError, match="unterminated quote"):
        read(quote)


def test_the_first_examples_are_kept(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text("nope\n" * 50)
    texts, _, skipped = read(path)
    assert (texts, skipped.count, len(skipped.examples)) == ([], 50, Skipped.LIMIT)

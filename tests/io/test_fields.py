"""Text fields: nested (meta.text), several joined (title,body), in JSONL, CSV and Parquet."""

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from gpusimhash.io.fields import TextField
from gpusimhash.io.readers import InputError, read_batches

ROWS = [
    {"title": "A cat", "body": "sat on the mat", "meta": {"text": "inner one", "n": 1}},
    {"title": "A dog", "body": "ran", "meta": {"text": "inner two", "n": 2}},
]


def texts(path, **kwargs):
    return [t for batch in read_batches(path, **kwargs) for t in batch.texts]


def write(tmp_path, kind, rows):
    path = tmp_path / f"docs.{kind}"
    if kind == "jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    elif kind == "csv":
        path.write_text("title,body\n" + "".join(f"{r['title']},{r['body']}\n" for r in rows))
    else:
        pq.write_table(pa.Table.from_pylist(rows), path)
    return path


@pytest.mark.parametrize("kind", ["jsonl", "csv", "parquet"])
def test_several_fields_are_joined_with_a_newline(tmp_path, kind):
    path = write(tmp_path, kind, ROWS)
    assert texts(path, text_field="title,body") == ["A cat\nsat on the mat", "A dog\nran"]
    assert texts(path, text_field="body") == ["sat on the mat", "ran"]


@pytest.mark.parametrize("kind", ["jsonl", "parquet"])
def test_nested_fields(tmp_path, kind):
    path = write(tmp_path, kind, ROWS)
    assert texts(path, text_field="meta.text") == ["inner one", "inner two"]
    assert texts(path, text_field="title,meta.text") == ["A cat\ninner one", "A dog\ninner two"]
    with pytest.raises(InputError, match=r"docs\.\w+, (line 1|row 0): field 'meta\.n' must be"):
        texts(path, text_field="meta.n")
    with pytest.raises(InputError, match=r"no field 'meta\.body' \(fields: n, text\)"):
        texts(path, text_field="meta.body")


def test_a_field_named_with_a_dot_is_that_field(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text(json.dumps({"meta.text": "flat", "meta": {"text": "nested"}}) + "\n")
    assert texts(path, text_field="meta.text") == ["flat"]


def test_missing_parts_are_named(tmp_path):
    path = write(tmp_path, "csv", ROWS)
    with pytest.raises(InputError, match=r"no column 'summary' in the header \(columns: title"):
        texts(path, text_field="title,summary")
    path = write(tmp_path, "parquet", ROWS)
    with pytest.raises(InputError, match=r"no column 'summary' \(columns: title, body, meta\)"):
        texts(path, text_field="summary,body")
    jsonl = write(tmp_path, "jsonl", [{"title": "x", "meta": "not an object"}])
    with pytest.raises(InputError, match=r"line 1: field 'meta\.text' is inside a str"):
        texts(jsonl, text_field="meta.text")
    with pytest.raises(ValueError, match="has an empty field name"):
        TextField.parse("title,,body")

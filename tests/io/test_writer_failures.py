"""RecordWriter under awkward records and interruptions: no lost fields, no stray files."""

import os

import pyarrow.parquet as pq
import pytest

from gpusimhash.io import _atomic, writers
from gpusimhash.io.writers import RecordWriter


def test_parquet_keeps_fields_first_seen_after_row_0(tmp_path):
    path = tmp_path / "kept.parquet"
    with RecordWriter(path) as writer:
        writer.write([{"id": 1, "text": "a"}, {"id": 2, "text": "b", "url": "u", "score": 0.5}])
        writer.write([{"id": 3, "text": "c", "score": 2.0}])
    assert pq.read_table(path).to_pylist() == [
        {"id": 1, "text": "a", "url": None, "score": None},
        {"id": 2, "text": "b", "url": "u", "score": 0.5},
        {"id": 3, "text": "c", "url": None, "score": 2.0},
    ]


def test_parquet_keeps_fields_first_seen_in_a_later_batch(tmp_path):
    path = tmp_path / "kept.parquet"
    with RecordWriter(path) as writer:
        writer.write([{"id": 1, "note": None}, {"id": 2, "note": None}])
        writer.write([{"id": 3, "url": "u", "note": None}])
        writer.write([{"id": 4, "note": "typed at last"}])
        writer.write([{"id": 5, "score": 0.5}])
    table = pq.read_table(path)
    assert table.column_names == ["id", "note", "url", "score"]
    assert str(table.schema.field("note").type) == "string"
    assert table.to_pylist() == [
        {"id": 1, "note": None, "url": None, "score": None},
        {"id": 2, "note": None, "url": None, "score": None},
        {"id": 3, "note": None, "url": "u", "score": None},
        {"id": 4, "note": "typed at last", "url": None, "score": None},
        {"id": 5, "note": None, "url": None, "score": 0.5},
    ]
    assert sorted(os.listdir(tmp_path)) == ["kept.parquet"]


def test_parquet_keeps_doubles_that_follow_ints_in_a_column(tmp_path):
    # the column becomes double: no 0.75 written as 0
    path = tmp_path / "kept.parquet"
    with RecordWriter(path) as writer:
        writer.write([{"score": 1, "scores": [1]}])
        writer.write([{"score": 0.75, "scores": [2, 0.5]}])
    table = pq.read_table(path)
    assert [str(t) for t in table.schema.types] == ["double", "list<element: double>"]
    assert table.to_pylist() == [
        {"score": 1.0, "scores": [1.0]},
        {"score": 0.75, "scores": [2.0, 0.5]},
    ]


def test_parquet_keeps_struct_keys_first_seen_in_a_later_batch(tmp_path):
    path = tmp_path / "kept.parquet"
    with RecordWriter(path) as writer:
        writer.write([{"meta": {"lang": "en"}}])
        writer.write([{"meta": {"lang": "de", "source": "x", "n": 1}}, {"meta": None}])
    assert pq.read_table(path).to_pylist() == [
        {"meta": {"lang": "en", "source": None, "n": None}},
        {"meta": {"lang": "de", "source": "x", "n": 1}},
        {"meta": None},
    ]


def test_parquet_refuses_a_field_it_cannot_store(tmp_path):
    path = tmp_path / "kept.parquet"
    writer = RecordWriter(path)
    writer.write([{"id": 1}])
    with pytest.raises(ValueError, match=r"do not fit the Parquet columns \(field 'id'"):
        writer.write([{"id": "x"}])
    writer.abort()
    assert os.listdir(tmp_path) == []
    writer = RecordWriter(path)
    with pytest.raises(ValueError, match=r"do not fit the Parquet columns \(field 'id'"):
        writer.write([{"id": 1, "text": "a"}, {"id": "x", "text": "b"}])
    writer.abort()
    assert os.listdir(tmp_path) == []


def test_parquet_stores_integers_past_int64_as_uint64(tmp_path):
    path = tmp_path / "kept.parquet"
    top = 2**64 - 1
    with RecordWriter(path) as writer:
        writer.write([{"id": 1, "ids": [1, 2], "kept": {"id": 3}}])
        writer.write([{"id": top, "ids": [top, 0], "kept": {"id": top - 1}}])
    table = pq.read_table(path)
    assert [str(t) for t in table.schema.types] == [
        "uint64",
        "list<element: uint64>",
        "struct<id: uint64>",
    ]
    assert table.to_pylist()[1] == {"id": top, "ids": [top, 0], "kept": {"id": top - 1}}


@pytest.mark.parametrize(
    "batches",
    [
        [[{"id": 2**64}]],  # past uint64
        [[{"id": -1}, {"id": 2**63}]],  # no integer type holds both
        [[{"id": -1}], [{"id": 2**63}]],  # the same, in two batches
        [[{"ids": [-1, 2**63]}]],
    ],
)
def test_parquet_refuses_integers_no_column_holds(tmp_path, batches):
    writer = RecordWriter(tmp_path / "kept.parquet")
    for batch in batches[:-1]:
        writer.write(batch)
    with pytest.raises(ValueError, match=r"do not fit the Parquet columns .*write JSONL instead"):
        writer.write(batches[-1])
    writer.abort()
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_interrupt_while_closing_leaves_no_temporary_file(tmp_path, monkeypatch, fmt):
    def interrupted(temporary, path):
        raise KeyboardInterrupt

    monkeypatch.setattr(writers, "commit", interrupted)
    with pytest.raises(KeyboardInterrupt), RecordWriter(tmp_path / f"kept.{fmt}") as writer:
        writer.write([{"id": 1}])
    assert os.listdir(tmp_path) == []


def test_interrupt_while_opening_leaves_no_temporary_file(tmp_path, monkeypatch):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fdopen", interrupted)
    with pytest.raises(KeyboardInterrupt):
        RecordWriter(tmp_path / "kept.jsonl")
    monkeypatch.setattr(os, "chmod", interrupted)
    with pytest.raises(KeyboardInterrupt):
        _atomic.temporary_beside(tmp_path / "kept.jsonl")
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("name", ["kept.csv", "kept.csv.gz"])
def test_csv_output_keeps_the_columns_and_round_trips(tmp_path, name):
    from gpusimhash.io.readers import read_batches

    source = tmp_path / "in.csv"
    source.write_text('id,text,note\n1,"a, quoted\nline",x\n2,b,\n', encoding="utf-8")
    records = [r for b in read_batches(source, records=True) for r in b.records]
    with RecordWriter(tmp_path / name) as writer:
        writer.write(records[:1])
        writer.write(records[1:])
    again = [r for b in read_batches(tmp_path / name, records=True) for r in b.records]
    assert again == records
    with RecordWriter(tmp_path / "mixed.csv") as writer:
        writer.write([{"a": None, "b": [1, "x"], "c": 0.5, "d": True, "e": "s"}])
    assert (tmp_path / "mixed.csv").read_text().splitlines() == [
        "a,b,c,d,e",
        ',"[1, ""x""]",0.5,true,s',
    ]

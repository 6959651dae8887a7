import csv
import gzip
import json
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from gpusimhash.io.readers import InputError, detect_format, read_batches
from gpusimhash.io.writers import RecordWriter

DOCS = [
    {"id": 10, "text": "the cat sat", "lang": "en"},
    {"id": 11, "text": "ünïcödé, 😀 astral", "lang": "xx"},
    {"id": 12, "text": "", "lang": "en"},
    {"id": 13, "text": 'tab\there, comma, "quote"\nnewline', "lang": "en"},
    {"id": 14, "text": "last one", "lang": "en"},
]


def write_jsonl(path, records, opener=open):
    with opener(path, "wt", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")


def write_csv(path, records, delimiter=","):
    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(records[0]), delimiter=delimiter)
        writer.writeheader()
        writer.writerows(records)


def read_all(path, **kwargs):
    batches = list(read_batches(path, **kwargs))
    rows = np.concatenate([b.rows for b in batches]) if batches else np.empty(0, np.int64)
    ids = [i for b in batches for i in b.ids]
    texts = [t for b in batches for t in b.texts]
    return batches, rows, ids, texts


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("a.jsonl", "jsonl"),
        ("a.NDJSON", "jsonl"),
        ("a.json.gz", "jsonl"),
        ("a.parquet", "parquet"),
        ("a.pq", "parquet"),
        ("a.csv", "csv"),
        ("a.tsv.gz", "tsv"),
        ("a.txt", "text"),
        ("README", "text"),
    ],
)
def test_detect_format(name, expected):
    assert detect_format(name) == expected


@pytest.mark.parametrize("kind", ["jsonl", "jsonl.gz", "csv", "tsv", "parquet"])
@pytest.mark.parametrize("batch_size", [1, 2, 5, 100])
def test_every_format_reads_the_same_documents(tmp_path, kind, batch_size):
    path = tmp_path / f"docs.{kind}"
    if kind == "jsonl":
        write_jsonl(path, DOCS)
    elif kind == "jsonl.gz":
        write_jsonl(path, DOCS, gzip.open)
    elif kind in ("csv", "tsv"):
        write_csv(path, DOCS, "\t" if kind == "tsv" else ",")
    else:
        pq.write_table(pa.Table.from_pylist(DOCS), path)
    batches, rows, ids, texts = read_all(path, id_field="id", batch_size=batch_size, records=True)
    assert texts == [d["text"] for d in DOCS]
    expected_ids = [d["id"] for d in DOCS]
    assert ids == (expected_ids if kind not in ("csv", "tsv") else [str(i) for i in expected_ids])
    assert rows.tolist() == list(range(len(DOCS)))
    assert all(len(b) <= batch_size for b in batches)
    records = [r for b in batches for r in b.records]
    assert [r["lang"] for r in records] == [d["lang"] for d in DOCS]


@pytest.mark.parametrize("kind", ["jsonl", "csv", "parquet"])
def test_ids_default_to_row_numbers_and_records_are_optional(tmp_path, kind):
    path = tmp_path / f"docs.{kind}"
    if kind == "jsonl":
        write_jsonl(path, DOCS)
    elif kind == "csv":
        write_csv(path, DOCS)
    else:
        pq.write_table(pa.Table.from_pylist(DOCS), path)
    batches, _, ids, _ = read_all(path, batch_size=2)
    assert ids == [0, 1, 2, 3, 4]
    assert all(b.records is None for b in batches)


def test_text_field_is_chosen(tmp_path):
    path = tmp_path / "docs.jsonl"
    write_jsonl(path, [{"body": "x y", "title": "t1"}, {"body": "z", "title": "t2"}])
    assert read_all(path, text_field="title")[3] == ["t1", "t2"]
    assert read_all(path, text_field="body", id_field="title")[2] == ["t1", "t2"]


def test_plain_text_is_one_document_per_line(tmp_path):
    path = tmp_path / "docs.txt.gz"
    with gzip.open(path, "wb") as f:
        f.write("first line\r\n\nthird ü\nno newline".encode())
    batches, rows, ids, texts = read_all(path, batch_size=3, records=True)
    assert texts == ["first line", "", "third ü", "no newline"]
    assert ids == rows.tolist() == [0, 1, 2, 3]
    assert batches[0].records[2] == {"id": 2, "text": "third ü"}


def test_blank_jsonl_lines_are_skipped_but_counted_in_errors(tmp_path):
    path = tmp_path / "docs.jsonl"
    path.write_text('{"text": "a"}\n\n   \n{"text": "b"}\n{"txt": "c"}\n')
    with pytest.raises(InputError, match=r"docs\.jsonl, line 5: no field 'text' \(fields: txt\)"):
        read_all(path)
    path.write_text('{"text": "a"}\n\n{"text": "b"}\n')
    assert read_all(path)[3] == ["a", "b"]


def test_byte_order_marks_are_ignored(tmp_path):
    (tmp_path / "bom.csv").write_bytes("\ufefftext,id\na,1\n".encode())
    (tmp_path / "bom.jsonl").write_bytes('\ufeff{"text": "a"}\n'.encode())
    (tmp_path / "bom.txt").write_bytes("\ufeffa\n".encode())
    for name in ("bom.csv", "bom.jsonl", "bom.txt"):
        assert read_all(tmp_path / name)[3] == ["a"]


def test_empty_files_give_no_batches(tmp_path):
    for name in ("e.jsonl", "e.csv", "e.txt"):
        (tmp_path / name).write_text("")
        assert list(read_batches(tmp_path / name)) == []


@pytest.mark.parametrize(
    ("content", "kwargs", "message"),
    [
        ('{"text": 5}\n', {}, r"line 1: field 'text' must be a string, got int"),
        ('{"text": null}\n', {}, r"line 1: field 'text' must be a string, got null"),
        ('{"text": "a"}\n{"text": "b"\n', {}, r"line 2: not valid JSON"),
        ('["text"]\n', {}, r"line 1: expected a JSON object, got list"),
        ('{"text": "a"}\n', {"id_field": "id"}, r"line 1: no field 'id'"),
        (
            '{"text": "a", "id": [1]}\n',
            {"id_field": "id"},
            r"line 1: id field 'id' must be an integer",
        ),
        (
            '{"text": "a", "id": true}\n',
            {"id_field": "id"},
            r"line 1: id field 'id' must be an integer",
        ),
    ],
)
def test_jsonl_errors_name_file_line_and_field(tmp_path, content, kwargs, message):
    path = tmp_path / "bad.jsonl"
    path.write_text(content)
    with pytest.raises(InputError, match=r"bad\.jsonl, " + message):
        read_all(path, **kwargs)


def test_invalid_utf8_names_the_line(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_bytes(b"fine\nbad \xff byte\n")
    with pytest.raises(InputError, match=r"bad\.txt, line 2: not valid UTF-8"):
        read_all(path)
    csv_path = tmp_path / "bad.csv"
    csv_path.write_bytes(b"text\nfine\nbad \xff\n")
    with pytest.raises(InputError, match=r"bad\.csv, line \d: not valid UTF-8"):
        read_all(csv_path)


def test_truncated_gzip_is_named(tmp_path):
    path = tmp_path / "cut.jsonl.gz"
    data = gzip.compress(b'{"text": "a"}\n' * 5000)
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(InputError, match=r"cut\.jsonl\.gz, line \d+: cannot read"):
        read_all(path)


def test_csv_errors(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("title,body\na,b\n")
    with pytest.raises(
        InputError, match=r"bad\.csv: no column 'text' in the header \(columns: title, body\)"
    ):
        read_all(path)
    with pytest.raises(InputError, match=r"no column 'key'"):
        read_all(path, text_field="body", id_field="key")
    path.write_text("text,id\na,1\nb\n")
    with pytest.raises(InputError, match=r"bad\.csv, line 3: 1 fields, the header has 2"):
        read_all(path)


def test_parquet_errors(tmp_path):
    path = tmp_path / "bad.parquet"
    pq.write_table(pa.Table.from_pylist([{"body": "a", "n": 1}]), path)
    with pytest.raises(InputError, match=r"bad\.parquet: no column 'text' \(columns: body, n\)"):
        read_all(path)
    with pytest.raises(InputError, match=r"row 0: column 'n' must be a string, got int"):
        read_all(path, text_field="n")
    pq.write_table(pa.Table.from_pylist([{"text": "a"}, {"text": None}]), path)
    with pytest.raises(InputError, match=r"row 1: column 'text' must be a string, got null"):
        read_all(path)
    path.write_bytes(b"PAR1 this is not parquet")
    with pytest.raises(InputError, match=r"bad\.parquet: not a readable Parquet file"):
        read_all(path)


def test_missing_file_raises_file_not_found(tmp_path):
    for name in ("none.jsonl", "none.parquet"):
        with pytest.raises(FileNotFoundError):
            read_all(tmp_path / name)


def test_bad_arguments(tmp_path):
    path = tmp_path / "a.txt"
    path.write_text("x\n")
    with pytest.raises(ValueError, match="format must be one of"):
        read_all(path, format="xml")
    with pytest.raises(ValueError, match="batch_size"):
        read_all(path, batch_size=0)


@pytest.mark.parametrize("name", ["out.jsonl", "out.jsonl.gz", "out.parquet"])
def test_writer_round_trip(tmp_path, name):
    path = tmp_path / name
    with RecordWriter(path) as writer:
        writer.write(DOCS[:2])
        writer.write([])
        writer.write(DOCS[2:])
    assert writer.count == len(DOCS)
    batches = list(read_batches(path, id_field="id", records=True))
    assert [r for b in batches for r in b.records] == DOCS
    assert os.listdir(tmp_path) == [name]


def write_then_fail(path, failure):
    with RecordWriter(path) as writer:
        writer.write(DOCS)
        failure(writer)


def interrupt(writer):
    raise RuntimeError("interrupted")


def test_writer_failure_keeps_the_previous_file(tmp_path):
    path = tmp_path / "out.parquet"
    with RecordWriter(path) as writer:
        writer.write(DOCS)
    before = path.read_bytes()
    bad = [{"id": "not an int", "text": 3, "lang": "en"}]
    with pytest.raises(ValueError, match="do not fit the Parquet columns"):
        write_then_fail(path, lambda writer: writer.write(bad))
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["out.parquet"]
    with pytest.raises(RuntimeError, match="interrupted"):
        write_then_fail(tmp_path / "new.jsonl", interrupt)
    assert os.listdir(tmp_path) == ["out.parquet"]


def test_written_files_get_the_default_mode(tmp_path):
    old = os.umask(0o027)
    try:
        with RecordWriter(tmp_path / "out.jsonl") as writer:
            writer.write(DOCS)
    finally:
        os.umask(old)
    assert (tmp_path / "out.jsonl").stat().st_mode & 0o777 == 0o640


def test_empty_parquet_output_is_readable(tmp_path):
    path = tmp_path / "empty.parquet"
    with RecordWriter(path):
        pass
    assert pq.read_table(path).num_rows == 0


def test_writer_refuses_unknown_format_and_missing_folder(tmp_path):
    with pytest.raises(ValueError, match="one of jsonl, parquet, csv, got 'xml'"):
        RecordWriter(tmp_path / "x.xml", format="xml")
    with pytest.raises(FileNotFoundError):
        RecordWriter(tmp_path / "missing" / "x.jsonl")

"""Hostile and damaged input files: every problem is one InputError naming file and line."""

import gzip
import io
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from gpusimhash.io import readers
from gpusimhash.io.readers import InputError, read_batches


def read_texts(path, **kwargs):
    return [t for batch in read_batches(path, **kwargs) for t in batch.texts]


def corrupt_gzip(path, lines=20_000):
    data = bytearray(
        gzip.compress(
            b"".join(
                b'{"text": "document %d about %d"}\n' % (i, i * 7919 % 1000) for i in range(lines)
            )
        )
    )
    data[100:108] = bytes(b ^ 0xFF for b in data[100:108])
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("fmt", ["jsonl", "text", "csv"])
def test_corrupt_deflate_data_is_an_input_error(tmp_path, fmt):
    path = tmp_path / f"c.{fmt}.gz"
    corrupt_gzip(path)
    with pytest.raises(InputError, match=r"c\.\w+\.gz, line \d+: cannot read \(Error -3"):
        read_texts(path, format=fmt)


def test_empty_gz_file_is_not_gzip_data(tmp_path):
    path = tmp_path / "empty.jsonl.gz"
    path.write_bytes(b"")
    with pytest.raises(InputError, match="empty.jsonl.gz: an empty file, not gzip data"):
        read_texts(path)


@pytest.mark.parametrize("fmt", ["text", "jsonl", "csv"])
def test_a_line_without_end_is_refused_at_the_limit(tmp_path, monkeypatch, fmt):
    monkeypatch.setattr(readers, "MAX_LINE_BYTES", 1000)
    path = tmp_path / "long"
    header = b"text\n" if fmt == "csv" else b""
    first = b'{"text": "' + b"x" * 987 + b'"}\n' if fmt == "jsonl" else b"x" * 999 + b"\n"
    assert len(first) == 1000
    path.write_bytes(header + first + b"\0" * 5000)
    line = 3 if fmt == "csv" else 2
    with pytest.raises(InputError, match=f"long, line {line}: longer than 1,000 bytes"):
        read_texts(path, format=fmt)


def test_dev_full_is_refused_in_bounded_memory(monkeypatch):
    monkeypatch.setattr(readers, "MAX_LINE_BYTES", 1 << 20)
    with pytest.raises(InputError, match="/dev/full, line 1: longer than"):
        read_texts("/dev/full", format="text")


def test_lone_surrogate_names_line_and_field(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_text(
        '{"text": "a"}\n{"text": "pair \\ud83d\\ude00 is fine"}\n'
        '{"text": "ok", "meta": {"title": ["x", "y \\ud800 z"]}}\n',
        encoding="ascii",
    )
    with pytest.raises(
        InputError, match=r"s\.jsonl, line 3: field 'meta\.title\[1\]' holds a lone"
    ):
        read_texts(path)
    path.write_text('{"text": "pair \\ud83d\\ude00 and a literal \\\\ud800"}\n', encoding="ascii")
    assert read_texts(path) == ["pair \U0001f600 and a literal \\ud800"]


def test_json_huge_integer_and_deep_nesting_name_the_line(tmp_path):
    path = tmp_path / "j.jsonl"
    path.write_text('{"text": "a"}\n{"text": "b", "id": ' + "9" * 5000 + "}\n")
    with pytest.raises(InputError, match=r"j\.jsonl, line 2: not readable JSON"):
        read_texts(path)
    path.write_text('{"text": "a", "x": ' + "[" * 100_000 + "]" * 100_000 + "}\n")
    with pytest.raises(InputError, match=r"j\.jsonl, line 1: JSON nested too deeply"):
        read_texts(path)


def test_csv_unterminated_quote(tmp_path):
    path = tmp_path / "q.csv"
    path.write_text('id,text\n1,"never closed\n2,b\n')
    with pytest.raises(
        InputError, match=r"q\.csv, line 3: malformed CSV \(an unterminated quote\)"
    ):
        read_texts(path)


def test_csv_repeated_column_is_refused(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("id,text,text\n1,a,b\n")
    with pytest.raises(InputError, match="d.csv: the header repeats column 'text'"):
        read_texts(path)


def test_csv_bad_utf8_names_its_own_line(tmp_path):
    path = tmp_path / "u.csv"
    path.write_bytes(
        b"id,text\n" + b"".join(b"%d,row %d\n" % (i, i) for i in range(5000)) + b"9,\xff\n"
    )
    with pytest.raises(InputError, match=r"u\.csv, line 5002: not valid UTF-8"):
        read_texts(path)


def test_csv_quoted_newlines_still_read(tmp_path):
    path = tmp_path / "n.csv"
    path.write_bytes(b'\xef\xbb\xbfid,text\r\n1,"two\r\nlines"\r\n2,b\r\n')
    assert read_texts(path) == ["two\r\nlines", "b"]


@pytest.mark.parametrize("fmt", ["csv", "tsv"])
def test_a_csv_record_over_the_limit_is_refused_whatever_its_lines(tmp_path, monkeypatch, fmt):
    monkeypatch.setattr(readers, "MAX_LINE_BYTES", 1 << 16)
    path = tmp_path / f"q.{fmt}"
    with path.open("w") as stream:  # 2 MB of short lines in one quoted field
        stream.write('id\ttext\n1\t"a\n' if fmt == "tsv" else 'id,text\n1,"a\n')
        stream.writelines("ab\n" for _ in range(700_000))
        stream.write('"\n')
    lines = []
    monkeypatch.setattr(readers, "_decode", lambda raw, p, line: lines.append(line) or raw.decode())
    with pytest.raises(
        InputError,
        match=r"q\.\w+, line 2: a record longer than 65,536 bytes \(by line 21,\d+: an unterm",
    ):
        read_texts(path, format=fmt)
    assert max(lines) < 30_000  # stopped at the limit, not at the end of the field


def test_csv_records_each_under_the_limit_are_read(tmp_path, monkeypatch):
    monkeypatch.setattr(readers, "MAX_LINE_BYTES", 1 << 10)
    path = tmp_path / "many.csv"
    texts = ["x\n" * 300 for _ in range(50)]  # 600 bytes each, 30,000 in all
    path.write_text("text\n" + "".join(f'"{t}"\n' for t in texts))
    assert read_texts(path) == texts
    path.write_text("text\n" + '"' + "y\n" * 600 + '"\n')
    with pytest.raises(InputError, match=r"line 2: a record longer than 1,024 bytes"):
        read_texts(path)


def test_damaged_parquet_pages_name_the_file(tmp_path):
    table = pa.Table.from_pylist([{"id": i, "text": f"text number {i} " * 3} for i in range(2000)])
    buffer = io.BytesIO()
    pq.write_table(table, buffer, compression="snappy")
    data = buffer.getvalue()
    messages = []
    for k, offset in enumerate(range(8, len(data) - 2000, max(1, (len(data) - 2000) // 60))):
        mutant = bytearray(data)
        mutant[offset] ^= 0x5A
        path = tmp_path / f"m{k}.parquet"
        path.write_bytes(bytes(mutant))
        try:
            read_texts(path, records=True)
        except InputError as error:
            messages.append((path, str(error)))
    assert messages
    assert all(message.startswith(str(path)) for path, message in messages)


def test_reading_is_unchanged_for_good_files(tmp_path):
    path = tmp_path / "g.jsonl"
    records = [{"text": f"doc {i} é😀", "id": i} for i in range(50)]
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    batches = list(read_batches(path, id_field="id", batch_size=7, records=True))
    assert [r for b in batches for r in b.records] == records

"""CSV output: a field first seen in a later batch widens the file written so far."""

import gzip

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusimhash.io.readers import read_batches
from gpusimhash.io.writers import RecordWriter, rewrite_csv

FIELDS = ("id", "text", "url", "a,b", 'q"')
VALUES = st.one_of(
    st.none(),
    st.integers(-5, 5),
    st.text(alphabet='ab ,"\n\r\t\u00e9', max_size=8),
)
RECORDS = st.lists(st.dictionaries(st.sampled_from(FIELDS), VALUES), max_size=4)


def written(path):
    data = path.read_bytes()
    return gzip.decompress(data) if path.name.endswith(".gz") else data


@settings(max_examples=60, deadline=None)
@given(st.lists(RECORDS, min_size=1, max_size=5), st.sampled_from(["o.csv", "o.csv.gz"]))
def test_batch_by_batch_is_the_file_written_at_once(tmp_path_factory, batches, name):
    folder = tmp_path_factory.mktemp("csv")
    with RecordWriter(folder / name) as writer:
        for batch in batches:
            writer.write(batch)
    with RecordWriter(folder / f"once-{name}") as writer:
        writer.write([record for batch in batches for record in batch])
    assert written(folder / name) == written(folder / f"once-{name}")
    assert sorted(p.name for p in folder.iterdir()) == sorted([name, f"once-{name}"])


@pytest.mark.parametrize("name", ["kept.csv", "kept.csv.gz"])
def test_a_late_field_is_empty_in_the_earlier_rows(tmp_path, name):
    long_text = "x, y\n" * 40_000  # one cell over csv's default field limit of 131,072
    with RecordWriter(tmp_path / name) as writer:
        writer.write([{"id": 1, "text": long_text}])
        writer.write([{"id": 2, "text": "b", "lang": "en"}])
        writer.write([{"id": 3, "score": 0.5}])
    records = [r for b in read_batches(tmp_path / name, records=True) for r in b.records]
    assert records == [
        {"id": "1", "text": long_text, "lang": "", "score": ""},
        {"id": "2", "text": "b", "lang": "en", "score": ""},
        {"id": "3", "text": "", "lang": "", "score": "0.5"},
    ]
    assert [p.name for p in tmp_path.iterdir()] == [name]


def test_a_header_alone_is_a_file_of_no_records(tmp_path):
    with RecordWriter(tmp_path / "o.csv") as writer:
        writer.write_header(["id", "text"])
    assert (tmp_path / "o.csv").read_bytes() == b"id,text\r\n"
    assert list(read_batches(tmp_path / "o.csv")) == []


def test_records_after_a_header_widen_it(tmp_path):
    with RecordWriter(tmp_path / "o.csv") as writer:
        writer.write_header(["id", "text"])
        writer.write([{"text": "a cat", "url": "u"}])
        writer.write_header(["other"])  # a file with a header keeps it
    assert (tmp_path / "o.csv").read_bytes() == b"id,text,url\r\n,a cat,u\r\n"


def test_a_header_is_for_csv_only(tmp_path):
    with RecordWriter(tmp_path / "o.jsonl") as writer, pytest.raises(ValueError, match="CSV"):
        writer.write_header(["id"])


@settings(max_examples=60, deadline=None)
@given(st.lists(RECORDS.filter(lambda r: any(r)), min_size=1, max_size=4))
def test_parts_rewritten_under_every_parts_header_are_the_one_file(tmp_path_factory, parts):
    # what the distributed dedup does to its CSV parts (parts of records only)
    folder = tmp_path_factory.mktemp("parts")
    with RecordWriter(folder / "one.csv") as writer:
        for records in parts:
            writer.write(records)
    headers = []
    for k, records in enumerate(parts):
        with RecordWriter(folder / f"part-{k}.csv") as writer:
            writer.write(records)
            headers.append(writer.csv_header)
    names = list(dict.fromkeys(name for header in headers for name in header))
    for k in range(len(parts)):
        rewrite_csv(folder / f"part-{k}.csv", names)
    header = written(folder / "one.csv").split(b"\r\n", 1)[0] + b"\r\n"
    rewritten = [written(folder / f"part-{k}.csv") for k in range(len(parts))]
    assert all(part.startswith(header) for part in rewritten)
    together = header + b"".join(part[len(header) :] for part in rewritten)
    assert together == written(folder / "one.csv")


def test_a_column_the_header_lacks_is_refused_before_the_file_is_touched(tmp_path):
    path = tmp_path / "part.csv"
    path.write_bytes(b"id,text\r\n1,a\r\n")
    with pytest.raises(ValueError, match=r"part.csv: column 'id' is not in the header"):
        rewrite_csv(path, ["text"])
    assert path.read_bytes() == b"id,text\r\n1,a\r\n"
    assert [p.name for p in tmp_path.iterdir()] == ["part.csv"]

"""CSV output: a field first seen in a later batch widens the file written so far."""

import gzip

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusimhash.io.readers import read_batches
from gpusimhash.io.writers import RecordWriter

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

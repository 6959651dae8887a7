"""JSONL records as their lines: the rows, ids and texts of read_batches, the lines as they were."""

import gzip
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusimhash.io.readers import InputError, read_batches, read_json_lines
from gpusimhash.io.writers import RecordWriter

TEXTS = st.text(st.characters(codec="utf-8", exclude_characters="\n\r"), max_size=12)
RECORDS = st.lists(
    st.fixed_dictionaries(
        {"text": TEXTS, "id": st.integers(-(2**70), 2**70) | TEXTS},
        optional={"n": st.floats(allow_nan=False) | st.none(), "tags": st.lists(TEXTS, max_size=3)},
    ),
    max_size=25,
)
# how a record's line may be spelled: compact or spaced, escaped or not
STYLES = st.sampled_from(
    [
        {},
        {"separators": (",", ":")},
        {"ensure_ascii": False},
        {"ensure_ascii": False, "separators": (",", ":"), "sort_keys": True},
    ]
)
# what may stand between records: blank and white-space lines, and the line endings
GAPS = st.sampled_from(["", "\n", "  \n", "\t\r\n", "\u00a0\n"])


@settings(max_examples=60, deadline=None)
@given(
    records=RECORDS,
    style=STYLES,
    gaps=st.lists(GAPS, min_size=26, max_size=26),
    crlf=st.booleans(),
    bom=st.booleans(),
    compressed=st.booleans(),
    batch_size=st.integers(1, 7),
    id_field=st.sampled_from([None, "id"]),
)
def test_json_lines_are_the_records_read_batches_reads_and_their_lines(
    tmp_path_factory, records, style, gaps, crlf, bom, compressed, batch_size, id_field
):
    lines = [json.dumps(r, **style) for r in records]
    ending = "\r\n" if crlf else "\n"
    content = ("\ufeff" if bom else "") + "".join(
        gap + line + ending for gap, line in zip(gaps, lines, strict=False)
    )
    path = tmp_path_factory.mktemp("lines") / ("docs.jsonl.gz" if compressed else "docs.jsonl")
    data = content.encode("utf-8")
    path.write_bytes(gzip.compress(data) if compressed else data)
    expected = [
        b for b in read_batches(path, id_field=id_field, batch_size=batch_size, records=True)
    ]
    found = list(read_json_lines(path, id_field=id_field, batch_size=batch_size))
    assert [b.lines for b in found] == [lines[b.rows[0] : b.rows[-1] + 1] for b in found]
    assert [line for b in found for line in b.lines] == lines
    assert len(found) == len(expected)
    for ours, theirs in zip(found, expected, strict=True):
        assert ours.rows.tolist() == theirs.rows.tolist()
        assert [ours.document(k) for k in range(len(ours))] == list(
            zip(theirs.ids, theirs.texts, strict=True)
        )
        parsed = ours.parsed()
        assert (parsed.ids, parsed.texts, parsed.records) == (
            theirs.ids,
            theirs.texts,
            theirs.records,
        )


def test_a_bad_record_raises_when_parsed_naming_its_line(tmp_path):
    path = tmp_path / "docs.jsonl"
    path.write_text('{"text": "a"}\n\n{"body": "b"}\n{"text": 3\n')
    (batch,) = read_json_lines(path)
    assert batch.document(0) == (0, "a")
    with pytest.raises(InputError, match=r"docs.jsonl, line 3: no field 'text'"):
        batch.document(1)
    with pytest.raises(InputError, match=r"docs.jsonl, line 4: not valid JSON"):
        batch.document(2)


def test_invalid_utf8_raises_as_it_is_read(tmp_path):
    path = tmp_path / "docs.jsonl"
    path.write_bytes(b'{"text": "a"}\n{"text": "\xff"}\n')
    with pytest.raises(InputError, match=r"docs.jsonl, line 2: not valid UTF-8"):
        list(read_json_lines(path))


@pytest.mark.parametrize("name", ["out.jsonl", "out.jsonl.gz"])
def test_lines_are_written_as_they_are(tmp_path, name):
    lines = [
        '{"text":"a \\u00e9 cat","n":1.50}',
        '{"text": "\u2028 dog", "id": 10000000000000000000000}',
    ]
    with RecordWriter(tmp_path / name) as writer:
        writer.write_lines(lines)
        writer.write_lines([])
    read = gzip.open if name.endswith(".gz") else open
    with read(tmp_path / name, "rb") as handle:
        assert handle.read() == ("\n".join(lines) + "\n").encode("utf-8")
    assert writer.count == 2


def test_lines_are_for_jsonl_only(tmp_path):
    with (
        RecordWriter(tmp_path / "out.csv") as writer,
        pytest.raises(ValueError, match="JSON lines are written to JSONL, not csv"),
    ):
        writer.write_lines(['{"text": "a"}'])

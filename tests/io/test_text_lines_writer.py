"""RecordWriter.write_text_lines: the records of plain-text lines, byte for byte as write gives them."""

import gzip

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusimhash.io.writers import RecordWriter
from gpusimhash.utf8 import Utf8Texts

# every kind of character JSON escapes or passes through: quotes, backslashes, controls,
# non-ASCII, astral code points, the line separators
TEXTS = st.lists(st.text(st.characters(codec="utf-8"), max_size=30), max_size=20)


@settings(max_examples=60, deadline=None)
@given(texts=TEXTS, first=st.integers(0, 10**12), compressed=st.booleans())
def test_text_lines_are_written_as_their_records_would_be(
    tmp_path_factory, texts, first, compressed
):
    folder = tmp_path_factory.mktemp("lines")
    name = "out.jsonl.gz" if compressed else "out.jsonl"
    rows = list(range(first, first + len(texts)))
    with RecordWriter(folder / f"lines-{name}") as lines:
        every = Utf8Texts.from_strings(["skipped", *texts, "skipped"])
        lines.write_text_lines(rows, every, np.arange(1, len(texts) + 1))
    with RecordWriter(folder / f"records-{name}") as records:
        records.write([{"id": row, "text": text} for row, text in zip(rows, texts, strict=True)])
    read = gzip.open if compressed else open
    with read(folder / f"lines-{name}", "rb") as a, read(folder / f"records-{name}", "rb") as b:
        assert a.read() == b.read()
    assert lines.count == records.count == len(texts)


def test_text_lines_need_one_line_per_row(tmp_path):
    with (
        RecordWriter(tmp_path / "out.jsonl") as writer,
        pytest.raises(ValueError, match="2 rows and 1 lines"),
    ):
        writer.write_text_lines([0, 1], Utf8Texts.from_strings(["a"]), np.array([0]))


def test_text_lines_are_for_jsonl_only(tmp_path):
    with (
        RecordWriter(tmp_path / "out.csv") as writer,
        pytest.raises(ValueError, match="text lines are written to JSONL, not csv"),
    ):
        writer.write_text_lines([0], Utf8Texts.from_strings(["a"]), np.array([0]))

"""Lines split in bulk, a block at a time: readline's lines, limits and errors, any block size."""

from __future__ import annotations

import functools
import gzip
import io
import json
import re
import zlib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusimhash.io import readers
from gpusimhash.io.lines import read_line_batches
from gpusimhash.io.readers import InputError, read_batches, read_json_lines
from gpusimhash.io.skipped import Skipped

PATH = Path("f.jsonl")
BYTES = st.lists(st.sampled_from([b"a", b"bc", b"\n", b"\r", b"\xff", b" "]), max_size=40).map(
    b"".join
)


def _blocks_lines(data: bytes) -> tuple[list[tuple[int, bytes]], str | None]:
    """The lines `_raw_lines` yields from ``data``, and the message that stopped it (or None)."""
    lines: list[tuple[int, bytes]] = []
    try:
        lines.extend(readers._raw_lines(io.BytesIO(data), PATH))
    except InputError as error:
        return lines, str(error)
    return lines, None


def _readline_lines(data: bytes, limit: int) -> tuple[list[tuple[int, bytes]], str | None]:
    """What ``readline(limit + 1)`` reads: the lines, then the first one over ``limit`` named."""
    lines: list[tuple[int, bytes]] = []
    read = functools.partial(io.BytesIO(data).readline, limit + 1)
    for number, line in enumerate(iter(read, b""), 1):
        if len(line) > limit:
            return lines, f"{PATH}, line {number}: longer than {limit:,} bytes"
        lines.append((number, line))
    return lines, None


@settings(max_examples=300, deadline=None)
@given(data=BYTES, block=st.integers(1, 9), limit=st.sampled_from([3, 6, 1 << 28]))
def test_lines_and_long_lines_are_readlines_at_any_block_size(data, block, limit):
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(readers, "_BLOCK_BYTES", block)
        patch.setattr(readers, "MAX_LINE_BYTES", limit)
        lines, error = _blocks_lines(data)
    expected, expected_error = _readline_lines(data, limit)
    assert lines == expected
    assert (error is None) == (expected_error is None)
    if error is not None:
        assert error.startswith(expected_error)


def test_a_line_past_the_limit_is_refused_before_the_stream_ends(monkeypatch):
    monkeypatch.setattr(readers, "MAX_LINE_BYTES", 1 << 20)
    monkeypatch.setattr(readers, "_BLOCK_BYTES", 1 << 16)
    with open("/dev/zero", "rb") as endless:
        lines = readers._raw_lines(endless, Path("/dev/zero"))
        with pytest.raises(InputError, match="/dev/zero, line 1: longer than 1,048,576 bytes"):
            next(lines)


class _Broken(io.BytesIO):
    """A stream that fails on its second read."""

    reads = 0

    def read(self, size: int | None = -1) -> bytes:
        self.reads += 1
        if self.reads == 2:
            raise OSError("disk gone")
        return super().read(size)


def test_a_failed_read_names_the_line_it_was_reading(monkeypatch):
    monkeypatch.setattr(readers, "_BLOCK_BYTES", 8)  # "one\ntwo\n", then the read fails
    lines = readers._raw_lines(_Broken(b"one\ntwo\nthree\n"), PATH)
    assert [next(lines), next(lines)] == [(1, b"one\n"), (2, b"two\n")]
    with pytest.raises(InputError, match=r"f\.jsonl, line 3: cannot read \(disk gone\)"):
        next(lines)


RECORDS = st.lists(
    st.sampled_from(
        [
            b'{"text": "a cat", "id": 7}',
            b'{"text": "dog", "id": "x"}\r',
            b'{"text": "caf\xc3\xa9", "id": 1}',
            b"\xef\xbb\xbf" + b'{"text": "bom", "id": 2}',
            b"",
            b"  \t",
            b'{"text": "bad \xff", "id": 3}',
            b'{"text": 5, "id": 4}',
            b'["text"]',
            b'{"id": 5}',
            b'{"text": "n", "id": 1.5}',
            b'{"text": "lone \\ud800", "id": 6}',
            b'{"text": "big", "id": 18446744073709551616}',
        ]
    ),
    max_size=8,
)


def _documents(path: Path, **kwargs) -> tuple[list, list, list[str]]:
    """The ids and texts `read_batches` gives (skipping invalid records), and what it skipped."""
    skipped = Skipped()
    batches = list(read_batches(path, id_field="id", batch_size=3, skipped=skipped, **kwargs))
    ids = [i for batch in batches for i in batch.ids]
    texts = [t for batch in batches for t in batch.texts]
    return ids, texts, skipped.examples


def _json_lines(path: Path) -> tuple[list[str], list[int], str | None]:
    """The lines and line numbers `read_json_lines` gives, and the message that stopped it."""
    lines: list[str] = []
    numbers: list[int] = []
    try:
        for batch in read_json_lines(path, id_field="id", batch_size=2):
            lines += batch.lines
            numbers += batch.numbers
    except InputError as error:
        return lines, numbers, str(error)
    return lines, numbers, None


@settings(max_examples=150, deadline=None)
@given(records=RECORDS, block=st.integers(1, 40), final_newline=st.booleans())
def test_records_read_in_blocks_are_the_whole_records(
    tmp_path_factory, records, block, final_newline
):
    path = tmp_path_factory.mktemp("blocks") / "docs.jsonl"
    path.write_bytes(b"\n".join(records) + (b"\n" if final_newline else b""))
    whole = _documents(path, records=True)  # every line parsed as json.loads parses it
    lines, numbers, error = _json_lines(path)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(readers, "_BLOCK_BYTES", block)
        assert _documents(path) == whole  # ids and texts by orjson where it can
        assert _documents(path, records=True) == whole
        assert _json_lines(path) == (lines, numbers, error)
    blank = {n for n, record in enumerate(records, 1) if not record.strip()}
    read = [n for n in range(1, len(records) + 1) if n not in blank]
    assert numbers == read[: len(numbers)]  # up to the first line not UTF-8, if any


def _complete_lines(data: bytes) -> int:
    """Lines a gzip stream's readable data holds whole (zlib's own decompression, piece by piece)."""
    unzip, out = zlib.decompressobj(wbits=31), b""
    for k in range(0, len(data), 256):
        try:
            out += unzip.decompress(data[k : k + 256])
        except zlib.error:
            break
        if unzip.eof:
            rest = unzip.unused_data
            unzip = zlib.decompressobj(wbits=31)
            out += unzip.decompress(rest) if rest else b""
    return out.count(b"\n")


def _records(n: int, tag: str) -> bytes:
    """``n`` JSONL records, their texts tagged."""
    return "".join(
        json.dumps({"text": f"{tag} {i} about {i % 97}"}) + "\n" for i in range(n)
    ).encode()


@pytest.mark.parametrize("cut", [1, 100, 5000])
@pytest.mark.parametrize("members", [1, 2])
def test_a_truncated_gzip_file_is_named_at_the_line_where_its_data_ends(tmp_path, cut, members):
    data = b"".join(gzip.compress(_records(20_000, f"m{m}")) for m in range(members))
    path = tmp_path / "cut.jsonl.gz"
    path.write_bytes(data[:-cut])
    line = _complete_lines(data[:-cut]) + 1
    assert 20_000 * (members - 1) < line <= 20_000 * members + 1  # in the last member
    expected = rf"cut\.jsonl\.gz, line {line}: cannot read \(Compressed file ended"
    with pytest.raises(InputError, match=expected):
        list(read_batches(path))
    with pytest.raises(InputError, match=expected):
        list(read_json_lines(path))
    with pytest.raises(InputError, match=expected):
        list(read_line_batches(path))


def test_corrupt_gzip_data_is_named_near_where_it_breaks(tmp_path):
    data = bytearray(gzip.compress(_records(20_000, "c")))
    at = len(data) * 3 // 4
    data[at : at + 8] = bytes(b ^ 0xFF for b in data[at : at + 8])
    path = tmp_path / "bad.jsonl.gz"
    path.write_bytes(bytes(data))
    with pytest.raises(InputError, match=r"bad\.jsonl\.gz, line (\d+): cannot read") as error:
        list(read_batches(path))
    line = int(re.search(r"line (\d+)", str(error.value)).group(1))
    readable = _complete_lines(bytes(data))  # garbage may decode past the corrupt bytes
    assert 0.9 * readable < line <= readable + 1

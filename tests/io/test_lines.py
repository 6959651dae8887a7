"""read_line_batches: the lines of read_batches(format="text"), as UTF-8 bytes."""

from __future__ import annotations

import gzip

import numpy as np
import pytest

from gpusimhash import fingerprint
from gpusimhash.io import readers
from gpusimhash.io.lines import read_line_batches
from gpusimhash.io.readers import InputError, read_batches


def read_texts(path, **kwargs):
    return [t for batch in read_batches(path, **kwargs) for t in batch.texts]


CONTENT = "\ufeffhead\r\n\nÄÖ straße\r\r\n😀 x\n日本\n" * 7 + "last line"


@pytest.mark.parametrize("compressed", [False, True])
@pytest.mark.parametrize("block_bytes", [1, 5, 64, 1 << 20])
def test_lines_as_bytes_match_the_text_reader(tmp_path, compressed, block_bytes):
    path = tmp_path / ("lines.txt.gz" if compressed else "lines.txt")
    raw = CONTENT.encode()
    path.write_bytes(gzip.compress(raw) if compressed else raw)
    expected = [t for batch in read_batches(path, format="text") for t in batch.texts]
    batches = list(read_line_batches(path, batch_size=4, block_bytes=block_bytes))
    assert all(0 < len(batch) <= 4 for batch in batches)
    assert [t for batch in batches for t in batch.to_strings()] == expected
    codes = np.concatenate([fingerprint(b, device="cpu") for b in batches])
    np.testing.assert_array_equal(codes, fingerprint(expected, device="cpu"))


def test_empty_file(tmp_path):
    path = tmp_path / "empty.txt"
    path.write_bytes(b"")
    assert list(read_line_batches(path)) == []


def test_a_stream_without_newline_is_refused_in_bounded_memory(monkeypatch):
    monkeypatch.setattr(readers, "MAX_LINE_BYTES", 1 << 20)
    with pytest.raises(InputError, match="/dev/full, line 1: longer than 1,048,576 bytes"):
        next(read_line_batches("/dev/full", block_bytes=1 << 16))


@pytest.mark.parametrize("block_bytes", [7, 1 << 20])
def test_a_long_line_is_refused_as_the_text_reader_refuses_it(tmp_path, monkeypatch, block_bytes):
    monkeypatch.setattr(readers, "MAX_LINE_BYTES", 100)
    path = tmp_path / "long.txt"
    path.write_bytes(b"short\n" + b"x" * 99 + b"\n" + b"y" * 100 + b"\nz\n")
    expected = "long.txt, line 3: longer than 100 bytes"
    with pytest.raises(InputError, match=expected):
        read_texts(path, format="text")
    with pytest.raises(InputError, match=expected):
        list(read_line_batches(path, block_bytes=block_bytes))


def test_corrupt_deflate_data_names_file_and_line(tmp_path):
    path = tmp_path / "c.txt.gz"
    data = bytearray(
        gzip.compress(b"".join(b"line %d about %d\n" % (i, i % 97) for i in range(20_000)))
    )
    data[100:108] = bytes(b ^ 0xFF for b in data[100:108])
    path.write_bytes(bytes(data))
    with pytest.raises(InputError, match=r"c\.txt\.gz, line \d+: cannot read \(Error -3"):
        list(read_line_batches(path, block_bytes=1 << 12))


def test_empty_gz_file_is_not_gzip_data(tmp_path):
    path = tmp_path / "empty.txt.gz"
    path.write_bytes(b"")
    with pytest.raises(InputError, match="empty.txt.gz: an empty file, not gzip data"):
        list(read_line_batches(path))


@pytest.mark.parametrize("block_bytes", [3, 1 << 20])
def test_invalid_utf8_names_the_line_as_the_text_reader_does(tmp_path, block_bytes):
    path = tmp_path / "bad.txt"
    path.write_bytes(b"good\nalso good\xc3\xa4\nbad \xff here\n")
    with pytest.raises(InputError) as text_error:
        read_texts(path, format="text")
    with pytest.raises(InputError) as bytes_error:
        list(read_line_batches(path, block_bytes=block_bytes))
    assert str(bytes_error.value) == str(text_error.value)
    assert "bad.txt, line 3: not valid UTF-8" in str(bytes_error.value)


def test_missing_file_is_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        list(read_line_batches(tmp_path / "missing.txt"))

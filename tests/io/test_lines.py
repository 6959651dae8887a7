"""read_line_batches: the lines of read_batches(format="text"), as UTF-8 bytes."""

from __future__ import annotations

import gzip

import numpy as np
import pytest

from gpusimhash import fingerprint
from gpusimhash.io.lines import read_line_batches
from gpusimhash.io.readers import read_batches

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

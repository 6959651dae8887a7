"""dedup's fingerprint bar counts the input's bytes (compressed for .gz): a total, so an ETA."""

import gzip
import io
import json

import pyarrow as pa
import pyarrow.parquet as pq
from tqdm import tqdm

from gpusimhash.dedup.pipeline import dedup_file
from gpusimhash.io import consumed, readers
from gpusimhash.io.lines import read_line_batches
from gpusimhash.io.readers import read_batches

TEXTS = [f"document {n} about topic {n % 50} with words {n % 7} and {n % 11}" for n in range(3000)]


class Recorded(tqdm):
    """A bar that remembers its count after every update."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, file=io.StringIO(), **kwargs)
        self.seen = []

    def update(self, n=1):
        super().update(n)
        self.seen.append(self.n)


def test_the_fingerprint_bar_counts_bytes_up_to_the_inputs_size(tmp_path, monkeypatch):
    monkeypatch.setattr(readers, "_BLOCK_BYTES", 4096)  # the bar moves a block at a time
    shards = [tmp_path / "a.jsonl", tmp_path / "b.txt.gz", tmp_path / "c.parquet"]
    shards[0].write_text("".join(json.dumps({"text": t}) + "\n" for t in TEXTS[:2000]))
    shards[1].write_bytes(gzip.compress("".join(t + "\n" for t in TEXTS[2000:2500]).encode()))
    pq.write_table(pa.table({"text": TEXTS[2500:]}), shards[2], row_group_size=100)
    bars = {}

    def progress(desc, unit, **kwargs):
        bars[desc] = Recorded(desc=desc, unit=unit, **kwargs)
        return bars[desc]

    dedup_file(shards, tmp_path / "out", bits=64, max_distance=3, batch_size=250, progress=progress)
    bar = bars["fingerprint"]
    total = sum(path.stat().st_size for path in shards)
    assert (bar.unit, bar.unit_scale, bar.total, bar.n) == ("B", True, total, total)
    assert bar.seen == sorted(bar.seen)
    first_file = shards[0].stat().st_size
    assert len([n for n in bar.seen if 0 < n < first_file]) >= 6  # within a file, not per file


def test_readers_report_the_bytes_they_read(tmp_path, monkeypatch):
    monkeypatch.setattr(readers, "_BLOCK_BYTES", 4096)
    plain, packed = tmp_path / "a.txt", tmp_path / "b.txt.gz"
    plain.write_text("".join(t + "\n" for t in TEXTS))
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    with consumed.counting() as read:
        positions = [read.bytes for _ in read_batches(plain, batch_size=500)]
        assert positions == sorted(positions)
        assert 0 < positions[0] < positions[-1]
        assert read.bytes == plain.stat().st_size
        for _ in read_line_batches(packed):
            assert 0 < read.bytes - plain.stat().st_size <= packed.stat().st_size
        assert read.bytes == plain.stat().st_size + packed.stat().st_size
    assert consumed._CURRENT.get() is None
    consumed.opened(5, lambda: 5)  # no counter: nothing happens

"""The duplicates report's chunks: orjson's lines are json's bytes, or not used."""

import json
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpusimhash.dedup import duplicates_chunk
from gpusimhash.dedup.duplicates_chunk import DuplicatesChunk, write_chunk
from gpusimhash.dedup.pipeline import dedup_file
from gpusimhash.io.writers import RecordWriter

# what RecordWriter.write spells a record as
ENCODE = json.JSONEncoder(ensure_ascii=False, default=str).encode

IDS = st.one_of(
    st.integers(-(2**70), 2**70),
    # commas, colons, quotes, control characters and lone surrogates among them
    st.text(st.characters(exclude_categories=())),
    st.none(),
    st.booleans(),
    st.floats(),
)
SIMILARITIES = st.one_of(
    st.floats(-1, 1),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 1e-4, -1e-4, float(np.nextafter(1e-4, 0)), 1e-5, -3.5e-7, 1e16]),
)


@st.composite
def chunks(draw, ids=IDS, similarities=SIMILARITIES):
    sizes = draw(st.lists(st.integers(2, 5), max_size=6))
    bounds = np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)]).tolist()
    n = bounds[-1]
    return DuplicatesChunk(
        first=draw(st.integers(0, 10**6)),
        bounds=bounds,
        kept_ids=draw(st.lists(ids, min_size=len(sizes), max_size=len(sizes))),
        kept_rows=draw(st.lists(st.integers(0, 2**40), min_size=len(sizes), max_size=len(sizes))),
        ids=draw(st.lists(ids, min_size=n, max_size=n)),
        rows=draw(st.lists(st.integers(0, 2**40), min_size=n, max_size=n)),
        distances=draw(st.lists(st.integers(0, 4096), min_size=n, max_size=n)),
        similarities=draw(st.lists(similarities, min_size=n, max_size=n)),
    )


def _plain(chunk):
    """Whether every value is one orjson spells as json does (`PLAIN_FLOAT`'s rule)."""
    ids = chunk.ids + chunk.kept_ids
    for i in ids:
        if type(i) is int and not -(2**63) <= i < 2**64:
            return False
        if type(i) is str and any(0xD800 <= ord(c) < 0xE000 for c in i):
            return False
        if type(i) not in (int, str):
            return False
    return all(math.isfinite(s) and (s == 0 or abs(s) >= 1e-4) for s in chunk.similarities)


@given(chunks())
def test_the_lines_are_jsons_bytes_wherever_orjson_makes_them(chunk):
    lines = chunk.json_lines()
    assert (lines is not None) == _plain(chunk)
    if lines is not None:
        assert [line.decode() for line in lines] == [ENCODE(r) for r in chunk.records()]


@given(
    chunks(ids=st.one_of(st.integers(0, 2**63), st.text(max_size=8)), similarities=st.floats(-1, 1))
)
def test_plain_chunks_are_written_by_orjson_as_json_writes_them(tmp_path_factory, chunk):
    folder = tmp_path_factory.mktemp("chunk")
    with RecordWriter(folder / "fast.jsonl") as writer:
        write_chunk(writer, chunk)
    with RecordWriter(folder / "records.jsonl") as writer:
        writer.write(chunk.records())
    fast = (folder / "fast.jsonl").read_bytes()
    assert fast == (folder / "records.jsonl").read_bytes()


def test_a_chunk_orjson_cannot_spell_is_written_as_records(tmp_path):
    chunk = DuplicatesChunk(0, [0, 2], [1], [1], [1, 2], [1, 2], [0, 9], [1.0, float("nan")])
    assert chunk.json_lines() is None
    with RecordWriter(tmp_path / "d.jsonl") as writer:
        write_chunk(writer, chunk)
    assert (tmp_path / "d.jsonl").read_text().endswith('"similarities": [1.0, NaN]}\n')


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_one_machines_report_is_the_records_of_every_cluster(tmp_path, monkeypatch, fmt):
    # 3 clusters a chunk: the chunks' records, in order, are every cluster's, each once
    monkeypatch.setattr(duplicates_chunk, "DUPLICATES_CHUNK", 3)
    texts = [" ".join(f"w{k}x{j}" for j in range(8)) for k in range(12) for _ in range(k % 3 + 2)]
    (tmp_path / "in.txt").write_text("\n".join(texts) + "\n")
    dedup_file(tmp_path / "in.txt", tmp_path / "out", output_format=fmt, report=False)
    if fmt == "jsonl":
        records = [json.loads(line) for line in (tmp_path / "out" / "duplicates.jsonl").open()]
        assert [r["cluster"] for r in records] == list(range(12))
        assert sorted(row for r in records for row in r["rows"]) == list(range(len(texts)))
        assert all(r["kept_row"] == r["rows"][0] == int(r["kept_id"]) for r in records)
    else:
        lines = (tmp_path / "out" / "duplicates.csv").read_text().splitlines()
        assert lines[0].startswith("cluster,size,kept_id")
        assert len(lines) == 1 + 12

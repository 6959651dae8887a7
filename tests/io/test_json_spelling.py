"""orjson's spellings are json's bytes, or not given."""

import json
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpusimhash.dedup.outputs import write_pairs
from gpusimhash.io.json_spelling import spelled_floats, spelled_ids, spelled_ints
from gpusimhash.io.writers import RecordWriter

# what RecordWriter.write spells a value as
ENCODE = json.JSONEncoder(ensure_ascii=False, default=str).encode
# commas, colons, quotes, control characters and lone surrogates among them
TEXTS = st.text(st.characters(exclude_categories=()))
IDS = st.one_of(st.integers(-(2**70), 2**70), TEXTS, st.none(), st.booleans(), st.floats())
FLOATS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.none(),
    st.sampled_from([0.0, -0.0, 1e-4, -1e-4, float(np.nextafter(1e-4, 0)), 1e-5, 3.5e-7, 1e16]),
)


def _plain_id(value):
    """Whether json and orjson spell an id alike (the documented rule)."""
    if type(value) is int:
        return -(2**63) <= value < 2**64
    if type(value) is str:
        return not any(0xD800 <= ord(c) < 0xE000 for c in value)
    return False


def _plain_float(value):
    """Whether json and orjson spell a float (or None) alike (the documented rule)."""
    return value is None or (math.isfinite(value) and (value == 0 or abs(value) >= 1e-4))


@given(st.lists(IDS, max_size=8))
def test_ids_are_spelled_as_json_spells_them_or_not_at_all(values):
    spelled = spelled_ids(values)
    assert (spelled is not None) == all(_plain_id(v) for v in values)
    if spelled is not None:
        assert [s.decode() for s in spelled] == [ENCODE(v) for v in values]


@given(st.lists(FLOATS, max_size=8))
def test_floats_are_spelled_as_json_spells_them_or_not_at_all(values):
    spelled = spelled_floats(values)
    assert (spelled is not None) == all(_plain_float(v) for v in values)
    if spelled is not None:
        assert [s.decode() for s in spelled] == [ENCODE(v) for v in values]


@given(st.lists(st.integers(-(2**63), 2**63 - 1), max_size=8))
def test_ints_are_spelled_as_json_spells_them(values):
    assert [s.decode() for s in spelled_ints(values)] == [ENCODE(v) for v in values]


@given(
    data=st.data(),
    n_docs=st.integers(2, 30),
    verified=st.booleans(),
    named=st.sampled_from(["rows", "ids", "any"]),
)
def test_the_pairs_file_is_the_records_json_writes(tmp_path_factory, data, n_docs, verified, named):
    # by orjson where it can, record by record where not: json's bytes either way
    folder = tmp_path_factory.mktemp("pairs")
    pairs = np.array(
        data.draw(
            st.lists(st.tuples(st.integers(0, n_docs - 1), st.integers(0, n_docs - 1)), max_size=20)
        ),
        dtype=np.int64,
    ).reshape(-1, 2)
    similarities = (
        np.array(data.draw(st.lists(st.floats(-1, 1), min_size=len(pairs), max_size=len(pairs))))
        if verified
        else None
    )
    codes = np.array(
        data.draw(st.lists(st.integers(0, 255), min_size=n_docs, max_size=n_docs)), dtype=np.uint8
    ).reshape(-1, 1)
    values = {"rows": None, "ids": st.integers(0, 10**6) | TEXTS, "any": IDS}[named]
    ids = None if values is None else data.draw(st.lists(values, min_size=n_docs, max_size=n_docs))
    expected = [
        {
            "id_a": a if ids is None else ids[a],
            "id_b": b if ids is None else ids[b],
            "row_a": a,
            "row_b": b,
            "distance": int(np.unpackbits(codes[a] ^ codes[b]).sum()),
            "similarity": None if similarities is None else float(similarities[k]),
        }
        for k, (a, b) in enumerate(pairs.tolist())
    ]
    try:
        with RecordWriter(folder / "records.jsonl") as writer:
            writer.write(expected)
    except UnicodeEncodeError:  # a lone surrogate: refused as json's records refuse it
        with pytest.raises(UnicodeEncodeError):
            write_pairs(folder, "jsonl", pairs, similarities, codes, ids)
        return
    write_pairs(folder, "jsonl", pairs, similarities, codes, ids)
    assert (folder / "pairs.jsonl").read_bytes() == (folder / "records.jsonl").read_bytes()

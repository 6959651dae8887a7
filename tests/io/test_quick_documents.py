"""A JSONL document's id and text read by orjson alone: the whole record's, and the same errors."""

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusimhash.io.fields import TextField
from gpusimhash.io.readers import InputError, _parse_json_line, read_batches

PATH = Path("docs.jsonl")
# integers orjson keeps, and the ones past either end of its range (it makes those floats)
EDGES = [-(2**63) - 1, -(2**63), 2**63 - 1, 2**63, 2**64 - 1, 2**64, 10**30]
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.sampled_from(EDGES)
    | st.floats()
    | st.text(st.characters(codec="utf-8"), max_size=6)
    | st.text(st.characters(min_codepoint=0xD7F0, max_codepoint=0xE010), max_size=3)
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from("abt"), inner),
    max_leaves=8,
)
# records with the fields the text specs and the id read, each perhaps missing or of any type
RECORDS = st.dictionaries(
    st.sampled_from(["text", "id", "title", "body", "meta", "n"]), VALUES, max_size=6
)
STYLES = st.sampled_from([{}, {"ensure_ascii": False}, {"separators": (",", ":")}])
SPECS = st.sampled_from(["text", "meta.t", "title,body"])


def _read(content, spec, id_field, whole):
    """The id and text `_parse_json_line` reads, or its error's message."""
    try:
        doc_id, text, _ = _parse_json_line(
            content, PATH, 3, TextField.parse(spec), id_field, whole=whole
        )
    except InputError as error:
        return "error", str(error)
    return "document", repr(doc_id), text


@settings(max_examples=400, deadline=None)
@given(
    record=RECORDS | VALUES,
    style=STYLES,
    spec=SPECS,
    id_field=st.sampled_from([None, "id"]),
)
def test_id_and_text_are_the_whole_records_or_the_same_error(record, style, spec, id_field):
    content = json.dumps(record, **style)
    assert _read(content, spec, id_field, False) == _read(content, spec, id_field, True)


@settings(max_examples=300, deadline=None)
@given(content=st.text(st.sampled_from(list('{}[]:,"\\ u0123456789abdEe.+-ntrfalsNIy'))))
def test_a_text_near_json_gives_the_same_document_or_error(content):
    assert _read(content, "text", "id", False) == _read(content, "text", "id", True)


@pytest.mark.parametrize("number", EDGES)
def test_ids_past_64_bits_stay_integers_where_records_are_not_kept(tmp_path, number):
    path = tmp_path / "docs.jsonl"
    line = {"id": number, "text": "a cat", "n": number}
    path.write_text(json.dumps(line) + "\n" + json.dumps({"id": 1.5, "text": "a dog"}) + "\n")
    with pytest.raises(InputError, match=r"line 2: id field 'id' must be .*, got float"):
        list(read_batches(path, id_field="id"))
    path.write_text(json.dumps(line) + "\n")
    (batch,) = read_batches(path, id_field="id")
    assert batch.ids == [number]
    assert type(batch.ids[0]) is int
    assert batch.texts == ["a cat"]


def test_kept_records_hold_integers_past_64_bits(tmp_path):
    path = tmp_path / "docs.jsonl"
    path.write_text(json.dumps({"text": "a cat", "n": 2**64, "m": [-(2**63) - 1]}) + "\n")
    (batch,) = read_batches(path, records=True)
    assert batch.record(0) == {"text": "a cat", "n": 2**64, "m": [-(2**63) - 1]}
    assert type(batch.record(0)["n"]) is int

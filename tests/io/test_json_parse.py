"""One JSON record parsed: json.loads's value and error for every text, by orjson or not."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusimhash.io._json import loads

# integers orjson keeps, and the ones past either end of its range
EDGES = [-(2**63) - 1, -(2**63), 2**63 - 1, 2**63, 2**64 - 1, 2**64, 10**30, -(10**30)]
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.sampled_from(EDGES)
    | st.floats()  # NaN and the infinities too: json.dumps spells them NaN, Infinity
    | st.text(st.characters(codec="utf-8"), max_size=8)
    | st.text(st.characters(min_codepoint=0xD7F0, max_codepoint=0xE010), max_size=3)
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4)
    ),
    max_leaves=20,
)
STYLES = st.sampled_from(
    [{}, {"separators": (",", ":")}, {"ensure_ascii": False}, {"indent": 1}, {"sort_keys": True}]
)
# texts near JSON: numbers, escapes, literals and the bytes that break them
NEAR_JSON = st.text(st.sampled_from(list('{}[]:,"\\ u0123456789abcdefEe.+-ntrfalsNIy\t\n\x7f')))


def _outcome(text):
    """What json.loads does with a text: its value's repr, or its error's type and message."""
    try:
        return "value", repr(json.loads(text))
    except (ValueError, RecursionError) as error:
        return type(error).__name__, str(error)


def _ours(text):
    """What loads does with a text, in `_outcome`'s terms."""
    try:
        return "value", repr(loads(text))
    except (ValueError, RecursionError) as error:
        return type(error).__name__, str(error)


@settings(max_examples=300, deadline=None)
@given(value=VALUES, style=STYLES)
def test_every_json_text_gives_json_loads_value_with_its_types_and_order(value, style):
    text = json.dumps(value, **style)
    assert _ours(text) == _outcome(text)


@settings(max_examples=500, deadline=None)
@given(text=NEAR_JSON)
def test_any_text_gives_json_loads_value_or_its_error(text):
    assert _ours(text) == _outcome(text)


@pytest.mark.parametrize("number", EDGES)
def test_integers_past_64_bits_stay_integers(number):
    record = loads(f'{{"id": {number}}}')
    assert record == {"id": number}
    assert type(record["id"]) is int


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"x": NaN}', "{'x': nan}"),
        ('{"x": -Infinity}', "{'x': -inf}"),
        ('{"x": 1e400}', "{'x': inf}"),
        ('{"x": "\\ud800"}', "{'x': '\\ud800'}"),
    ],
)
def test_what_orjson_refuses_json_loads_reads(text, expected):
    assert repr(loads(text)) == expected


def test_nesting_past_orjson_limit_is_json_loads_recursion_error():
    with pytest.raises(RecursionError):
        loads("[" * 100_000 + "]" * 100_000)


def test_an_integer_past_python_digit_limit_is_json_loads_value_error():
    text = '{"id": 1' + "0" * 5000 + "}"
    assert _ours(text) == _outcome(text)
    assert _ours(text)[0] == "ValueError"

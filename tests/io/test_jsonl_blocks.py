"""A block of JSONL lines read at once: the line-by-line reading's ids and texts, or None.

Nested and joined text fields here; `test_line_blocks` reads whole files both ways, blank lines
and lines written back included.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gpusimhash.io import readers
from gpusimhash.io._jsonl_blocks import parsed_block
from gpusimhash.io.fields import TextField

LINES = [
    b'{"text": "a cat", "id": 7, "meta": {"text": "inner"}, "title": "t", "body": "b"}',
    b'{"text": "dog", "id": "x", "title": "only a title"}',
    b'{"meta.text": "a dotted key", "meta": {"text": "nested"}, "id": 2}',
    b'{"meta": {"text": 5}, "text": "t", "id": 3}',
    b'{"meta": ["text"], "text": "t", "id": 4}',
    b'{"title": "t", "body": "b", "id": 5}',
    b'{"title": "t", "body": null, "id": 6}',
    b'{"text": "t", "id": true}',
    b'{"text": "t", "id": 1.5}',
    b'{"text": "t", "id": 18446744073709551616}',
    b'{"text": "caf\xc3\xa9", "id": 8}\r',
    b'["text"]',
    b'"text"',
    b'{"text": "bad \xff", "id": 9}',
    b"\xef\xbb\xbf" + b'{"text": "bom", "id": 10}',
    b'{"text": "lone \\ud800", "id": 11}',
]
FIELDS = ["text", "meta.text", "title,body", "meta.text,title"]


@settings(max_examples=300, deadline=None)
@given(
    lines=st.lists(st.sampled_from(LINES), min_size=1, max_size=6),
    field=st.sampled_from(FIELDS),
    id_field=st.sampled_from([None, "id"]),
)
def test_a_block_is_read_as_each_of_its_lines_or_not_at_all(lines, field, id_field):
    text = TextField.parse(field)
    each = [readers._quick_document(line, text, id_field) for line in lines]
    block = parsed_block(lines, text, id_field)
    if any(read is None for read in each):
        assert block is None
    else:
        ids = [read[0] for read in each] if id_field is not None else []
        assert block == (ids, [read[1] for read in each])

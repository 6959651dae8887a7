"""A block of JSONL lines read at once, where every line is a plain record.

The JSONL readers (`gpusimhash.io.readers`) read a file in blocks of lines (1 MiB). Reading
each line through the functions that check it and name what is wrong with it costs more than
parsing it. These functions read a whole block in a few passes over its lines, or answer None
where some line of it needs the line-by-line reading (a byte order mark, bytes that are not
UTF-8, a line orjson refuses, a record without a text or with another id; a blank line, for
`decoded_block`): the reader then reads that block line by line, which gives the same values
for the other lines and names the line at fault.

On 200,000 PyPI summaries with integer ids, `read_batches` read every id and text in 0.168 to
0.172 s against 0.252 to 0.254 s line by line, and `dedup_file` at the defaults took 1.80 to
1.86 s against 1.98 to 2.00 s (``bench/results/jsonl_blocks_revisions.json``, 2 rounds each).
"""

from __future__ import annotations

from typing import Any

import orjson

from gpusimhash.io.fields import FieldError, TextField

__all__ = ["decoded_block", "parsed_block"]

_ID_TYPES = frozenset({int, str})


def parsed_block(
    lines: list[bytes], field: TextField, id_field: str | None
) -> tuple[list[Any], list[str]] | None:
    r"""Return the ids and texts of a block of lines, each as orjson alone reads it, or None.

    Each line is blank (ASCII white space only: no record) or what
    ``gpusimhash.io.readers._quick_document`` reads: a JSON object that orjson parses, with a
    string text and, with ``id_field``, an integer or string id.

    Parameters
    ----------
    lines : list of bytes
        The block's lines, without their ``\n``.
    field : TextField
        Where the text is.
    id_field : str or None
        The id field; None: the ids are the rows.

    Returns
    -------
    tuple of (list, list of str), or None
        The ids (none without an id field) and the texts; None where some line is not such a
        record.

    Examples
    --------
    >>> text = TextField.parse("text")
    >>> parsed_block([b'{"text": "a", "id": 7}', b'{"id": "x", "text": "b"}'], text, "id")
    ([7, 'x'], ['a', 'b'])
    >>> parsed_block([b'{"text": "a"}', b" \t", b'{"text": "b"}'], text, None)  # a blank line
    ([], ['a', 'b'])
    >>> parsed_block([b'{"text": "a"}', b'{"text": 5}'], text, None) is None  # not a text
    True
    """
    records = _records(lines)
    if records is None:  # blank lines are no records: skipped, as line by line
        filled = [line for line in lines if line.strip()]
        records = _records(filled) if len(filled) < len(lines) else None
    if records is None or not set(map(type, records)) <= {dict}:
        return None
    try:
        if field.is_plain:  # a top-level field: `TextField.text`, without its checks
            texts = [record[field.name] for record in records]
        else:
            texts = [field.text(record) for record in records]
    except (KeyError, FieldError):
        return None
    if not set(map(type, texts)) <= {str}:
        return None
    if id_field is None:
        return [], texts
    ids = [record.get(id_field) for record in records]
    return (ids, texts) if set(map(type, ids)) <= _ID_TYPES else None


def _records(lines: list[bytes]) -> list[Any] | None:
    """Return each line's JSON value as orjson parses it; None where it refuses one."""
    try:
        return list(map(orjson.loads, lines))
    except orjson.JSONDecodeError:
        return None


def decoded_block(lines: list[bytes], first: int) -> list[str] | None:
    r"""Return the text of a block of lines, each as ``readers._json_line`` gives it, or None.

    Each line is decoded as UTF-8, without a carriage return at its end.

    Parameters
    ----------
    lines : list of bytes
        The block's lines, without their ``\n``.
    first : int
        The first line's number in the file, from 1.

    Returns
    -------
    list of str or None
        The lines; None where some line is not UTF-8, is blank, or, as the file's first line,
        starts with a byte order mark.

    Examples
    --------
    >>> decoded_block([b'{"a": 1}\r', b'{"b": "\xc3\xa9"}'], 3)
    ['{"a": 1}', '{"b": "é"}']
    >>> decoded_block([b'{"a": 1}', b"  "], 3) is None  # a blank line
    True
    """
    try:
        text = b"\n".join(lines).decode("utf-8")
    except UnicodeDecodeError:
        return None
    decoded = text.split("\n")
    if "\r" in text:
        decoded = [line.rstrip("\r") for line in decoded]
    if "" in decoded or any(map(str.isspace, decoded)):
        return None
    if first == 1 and decoded[0].startswith("\ufeff"):
        return None
    return decoded

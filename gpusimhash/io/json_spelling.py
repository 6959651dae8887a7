"""JSON values spelled by orjson exactly as `json` spells them in `RecordWriter.write`'s lines.

`RecordWriter.write` encodes a record with `json` (``ensure_ascii=False``): the bytes a record
file holds. orjson spells the same value the same way for an int within 64 bits, a string of
valid Unicode, null, and a float that is 0 or at least `PLAIN_FLOAT` in size; `json` writes a
smaller float as its ``repr`` (an exponent, where orjson writes digits) and NaN and infinities
as ``NaN`` and ``Infinity``, where orjson writes null. The functions here return each value's
spelling where every value of a column is one of those, and None otherwise, so that a writer
spells whole lines by orjson and falls back to `json` for a column it cannot.

Examples
--------
>>> spelled_floats([0.5, 1e-05]) is None
True
>>> spelled_ids([7, "a,b"])
[b'7', b'"a,b"']
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import orjson

__all__ = ["PLAIN_FLOAT", "spelled_floats", "spelled_ids", "spelled_ints"]

# the least size of a float (but 0) that orjson spells as json does (`float.__repr__`)
PLAIN_FLOAT = 1e-4


def spelled_ints(values: Sequence[int]) -> list[bytes]:
    """Return each int (within 64 bits, as rows and distances are) as `json` spells it.

    Examples
    --------
    >>> spelled_ints([3, -12])
    [b'3', b'-12']
    """
    return _items(values)


def spelled_floats(values: Sequence[float | None]) -> list[bytes] | None:
    """Return each float (or None) as `json` spells it; None where orjson would spell one otherwise.

    Examples
    --------
    >>> spelled_floats([1.0, 0.0001, None])
    [b'1.0', b'0.0001', b'null']
    >>> spelled_floats([float("nan")]) is None
    True
    """
    numbers = np.array([v for v in values if v is not None], dtype=np.float64)
    size = np.abs(numbers)
    if not np.all(np.isfinite(numbers) & ((size == 0) | (size >= PLAIN_FLOAT))):
        return None
    return _items(values)


def spelled_ids(values: Sequence[Any]) -> list[bytes] | None:
    r"""Return each id (an int or a string) as `json` spells it; None where one cannot be.

    None where an id is of another type (a bool, a float, None, a NumPy scalar), an int
    beyond 64 bits, or a string that is not valid Unicode (a lone surrogate).

    Examples
    --------
    >>> spelled_ids(["caf\u00e9", 2**64]) is None
    True
    """
    if not {type(v) for v in values} <= {int, str}:
        return None
    try:
        return [orjson.dumps(v) for v in values]
    except orjson.JSONEncodeError:  # an int beyond 64 bits, a lone surrogate
        return None


def _items(values: Sequence[Any]) -> list[bytes]:
    """Return each number (or None) as orjson spells it: no string, so no comma inside one."""
    return orjson.dumps(values)[1:-1].split(b",") if values else []

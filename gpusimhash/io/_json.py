"""Parse one JSON text to the value `json.loads` gives, by orjson wherever the two agree.

orjson parses a short record faster than `json.loads` (`bench/bench_json.py`). Where it refuses
a text that `json.loads` reads (``NaN``, ``Infinity``, a number beyond the doubles, a lone
surrogate escape, nesting past 1024 levels), or cannot keep its value (an integer below
``-2**63`` or above ``2**64 - 1``, which it turns into a float of ``2**63`` or more in
magnitude), `json.loads` parses it instead, so every value and every error is `json.loads`'s
own.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

__all__ = ["loads"]

# the least magnitude of a float that orjson makes of an integer it cannot keep
_PAST_INTEGERS = float(2**63)


def loads(text: str) -> Any:
    """Return ``json.loads(text)``, computed by orjson where it gives the same value.

    Parameters
    ----------
    text : str
        One JSON text.

    Returns
    -------
    object
        The value `json.loads` returns.

    Raises
    ------
    json.JSONDecodeError, ValueError, RecursionError
        As `json.loads` raises them, with its messages.

    Examples
    --------
    >>> loads('{"id": 123456789012345678901234567890, "score": NaN}')
    {'id': 123456789012345678901234567890, 'score': nan}
    """
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)  # it reads the text, or raises its own error
    return value if _kept(value) else json.loads(text)


def _kept(value: Any) -> bool:
    """Whether no float in a parsed value may stand for an integer orjson could not keep."""
    pending = [value]
    while pending:
        held = pending.pop()
        kind = type(held)
        for item in held.values() if kind is dict else held if kind is list else (held,):
            kind = type(item)
            if kind is float and not -_PAST_INTEGERS < item < _PAST_INTEGERS:
                return False
            if kind is dict or kind is list:
                pending.append(item)
    return True

"""Short reprs for result dataclasses that hold arrays: dtypes and shapes, never the values.

A notebook that shows a result should show what it holds in one line, not thousands of numbers:
``__repr__ = short_repr`` in a dataclass's body replaces the generated repr.
"""

from __future__ import annotations

import dataclasses
from typing import Any

__all__ = ["short_repr"]

_WIDTH = 40  # characters shown of a value that is not an array


def _describe(value: Any) -> str:
    """Describe one field's value briefly."""
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return f"{value.dtype}{list(value.shape)}"
    if isinstance(value, dict | list | tuple) and len(value) > 3:
        return f"<{type(value).__name__} of {len(value)}>"
    text = repr(value)
    return text if len(text) <= _WIDTH else text[: _WIDTH - 3] + "..."


def short_repr(self: Any) -> str:
    """Describe a dataclass by its fields: arrays by dtype and shape, other values briefly.

    Parameters
    ----------
    self : dataclass instance

    Returns
    -------
    str

    Examples
    --------
    >>> import numpy as np
    >>> @dataclasses.dataclass
    ... class Found:
    ...     pairs: np.ndarray
    ...     radius: int
    ...     __repr__ = short_repr
    >>> Found(np.zeros((5, 2), np.int64), 3)
    Found(pairs=int64[5, 2], radius=3)
    """
    fields = ", ".join(
        f"{f.name}={_describe(getattr(self, f.name))}" for f in dataclasses.fields(self)
    )
    return f"{type(self).__name__}({fields})"

"""Missing texts (null, None, NaN) in an Arrow or pandas column: refused, or read as empty texts.

One policy for `gpusimhash.fingerprint` and `gpusimhash.dedup.tables.annotate_table`:
``on_missing="error"`` refuses the first missing text by its row; ``"featureless"`` reads each
missing text as an empty one, a document without features whose code is the code of ``""``.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

ON_MISSING = ("error", "featureless")


def check(on_missing: str) -> str:
    """Return ``on_missing`` if it names a policy.

    Raises
    ------
    ValueError
        Another value.
    """
    if on_missing not in ON_MISSING:
        raise ValueError(f"on_missing must be one of {', '.join(ON_MISSING)}, got {on_missing!r}")
    return on_missing


def resolve(
    column: Any,
    on_missing: str,
    *,
    row: str = "document",
    field: str = "the text",
    error: type[ValueError] = ValueError,
) -> Any:
    """Apply ``on_missing`` to a pyarrow (chunked) array or a pandas Series; other data as is.

    Parameters
    ----------
    column : Any
        A pyarrow ``Array``/``ChunkedArray`` or a pandas ``Series`` (null, None, NaN and NA are
        missing), or anything else, returned unchanged.
    on_missing : {"error", "featureless"}
        Refuse the first missing text, or read every missing text as ``""``.
    row, field : str
        How the message names a row (``"document"``) and the value (``"the text"``).
    error : type of ValueError
        The exception raised for a missing text.

    Returns
    -------
    Any
        ``column``, with its missing texts replaced by ``""`` under ``"featureless"``.

    Raises
    ------
    ValueError
        An unknown ``on_missing``; ``error`` for a missing text under ``"error"``, naming the
        first one by position.

    Examples
    --------
    >>> import pyarrow as pa
    >>> resolve(pa.array(["a b", None]), "featureless").to_pylist()
    ['a b', '']
    >>> resolve(pa.array(["a b", None]), "error")
    Traceback (most recent call last):
    ...
    ValueError: document 1: the text is missing (1 of 2 documents); on_missing='featureless' \
reads a missing text as an empty one
    """
    check(on_missing)
    pa = sys.modules.get("pyarrow")
    if pa is not None and isinstance(column, pa.Array | pa.ChunkedArray):
        missing = column.null_count
        if not missing:
            return column
        if on_missing == "featureless":
            import pyarrow.compute as pc

            return pc.fill_null(column, pa.scalar("", type=column.type))
        mask = np.asarray(column.is_null())
    elif type(column).__module__.split(".")[0] == "pandas" and type(column).__name__ == "Series":
        mask = column.isna().to_numpy(dtype=bool)
        missing = int(mask.sum())
        if not missing:
            return column
        if on_missing == "featureless":
            return column.astype(object).where(~mask, "")  # any dtype (categorical too)
    else:
        return column
    first = int(np.flatnonzero(mask)[0])
    raise error(
        f"{row} {first}: {field} is missing ({missing:,} of {len(column):,} {row}s); "
        "on_missing='featureless' reads a missing text as an empty one"
    )

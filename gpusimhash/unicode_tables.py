r"""Per-code-point tables that define tokenization on every engine.

The text featurizer (CPU) and the device tokenizer (GPU) read the same two tables, so they
agree bit for bit whatever Python or CUDA version runs them:

* ``word``: whether a code point belongs to a word token. A word character is one for which
  ``str.isalnum()`` is true, or ``"_"``: the characters Python's ``re`` matches with ``\\w``.
* ``lower``: the simple lower-case mapping of each code point: ``chr(cp).lower()`` where that is a
  single code point, else the code point itself (only U+0130 maps to two).

The tables are pinned to the Unicode version they were generated from (recorded in the data
file), not to the running interpreter's ``unicodedata``: ``python -m gpusimhash.unicode_tables``
regenerates them.
"""

from __future__ import annotations

import functools
import sys
import unicodedata
from pathlib import Path
from typing import NamedTuple

import numpy as np

MAX_CODE_POINT = 0x110000
DATA_PATH = Path(__file__).with_name("data") / "unicode_tables.npz"


class UnicodeTables(NamedTuple):
    """Dense lookup tables indexed by code point.

    Attributes
    ----------
    word : ndarray, shape (0x110000,), dtype bool
        True for word characters.
    lower : ndarray, shape (0x110000,), dtype uint32
        Lower-case code point of each code point.
    unicode_version : str
        Version of the Unicode database the tables come from.
    """

    word: np.ndarray
    lower: np.ndarray
    unicode_version: str


def _ranges(mask: np.ndarray) -> np.ndarray:
    """Return the ``[start, stop)`` runs of True in a boolean mask, shape (k, 2), int32."""
    edges = np.diff(np.concatenate(([0], mask.astype(np.int8), [0])))
    return np.stack([np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)], axis=1).astype(
        np.int32
    )


def build_tables() -> UnicodeTables:
    """Build the tables from the running interpreter's Unicode database.

    Returns
    -------
    UnicodeTables
        Tables for ``unicodedata.unidata_version``.
    """
    code_points = range(MAX_CODE_POINT)
    word = np.fromiter((chr(c).isalnum() for c in code_points), dtype=bool, count=MAX_CODE_POINT)
    word[ord("_")] = True
    lower = np.arange(MAX_CODE_POINT, dtype=np.uint32)
    for c in code_points:
        low = chr(c).lower()
        if len(low) == 1 and ord(low) != c:
            lower[c] = ord(low)
    return UnicodeTables(word, lower, unicodedata.unidata_version)


def save_tables(tables: UnicodeTables, path: Path = DATA_PATH) -> None:
    """Write tables in their compact form (word ranges and changed lower-case pairs).

    Parameters
    ----------
    tables : UnicodeTables
        Tables to store.
    path : Path
        Destination ``.npz`` file.
    """
    changed = np.flatnonzero(tables.lower != np.arange(MAX_CODE_POINT, dtype=np.uint32))
    np.savez_compressed(
        path,
        word_ranges=_ranges(tables.word),
        lower_from=changed.astype(np.uint32),
        lower_to=tables.lower[changed],
        unicode_version=np.array(tables.unicode_version),
    )


@functools.cache
def load_tables() -> UnicodeTables:
    """Load the shipped tables (cached for the process).

    Returns
    -------
    UnicodeTables
        The pinned tables every engine tokenizes with.

    Examples
    --------
    >>> tables = load_tables()
    >>> bool(tables.word[ord("a")]), bool(tables.word[ord(" ")]), chr(tables.lower[ord("Q")])
    (True, False, 'q')
    """
    with np.load(DATA_PATH, allow_pickle=False) as data:
        word = np.zeros(MAX_CODE_POINT, dtype=bool)
        for start, stop in data["word_ranges"]:
            word[start:stop] = True
        lower = np.arange(MAX_CODE_POINT, dtype=np.uint32)
        lower[data["lower_from"]] = data["lower_to"]
        version = str(data["unicode_version"])
    word.setflags(write=False)
    lower.setflags(write=False)
    return UnicodeTables(word, lower, version)


if __name__ == "__main__":
    save_tables(build_tables())
    print(f"wrote {DATA_PATH} (Unicode {unicodedata.unidata_version})", file=sys.stderr)

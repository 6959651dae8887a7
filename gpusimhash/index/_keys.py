"""Ids that are not int64: each key (a str or an int) gets an internal int64 id for FAISS.

A `KeyMap` numbers keys in the order they are added (0, 1, 2, ...) and never reuses a number,
so a removed key can be added again at once (its old number stays a tombstone in the FAISS
index until ``compact``). Saved as JSON (``{"next": n, "internal": [...], "keys": [...]}``):
loading checks every value's type and that the numbers are distinct and below ``next``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

Key = str | int


def _key(value: Any, where: str) -> Key:
    """Return a str or int key (NumPy scalars become Python ones), or raise TypeError."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    raise TypeError(f"{where}: ids must be str or int, got {type(value).__name__} {value!r}")


def check_keys(values: Any, n: int | None = None) -> list[Key]:
    """Return ids as a list of str or int keys, checked.

    Parameters
    ----------
    values : iterable of str or int
        Ids, one per entry.
    n : int, optional
        The number of ids expected.

    Returns
    -------
    list of str or int

    Raises
    ------
    TypeError
        An id that is neither str nor int (bools too).
    ValueError
        A wrong count, or an id given twice.

    Examples
    --------
    >>> check_keys(["a", 3])
    ['a', 3]
    """
    if isinstance(values, str | bytes):
        raise TypeError(f"ids must be a sequence of ids, got a single {type(values).__name__}")
    keys = [_key(value, f"id {k}") for k, value in enumerate(values)]
    if n is not None and len(keys) != n:
        raise ValueError(f"ids must have length {n}, got {len(keys)}")
    seen: set[Key] = set()
    for key in keys:
        if key in seen:
            raise ValueError(f"ids must be unique, id {key!r} repeats")
        seen.add(key)
    return keys


class KeyMap:
    """Keys (str or int) to internal int64 ids and back.

    Examples
    --------
    >>> keys = KeyMap()
    >>> keys.assign(["a", "b"]).tolist()
    [0, 1]
    >>> keys.external(np.array([1, -1, 0])).tolist()
    ['b', None, 'a']
    >>> keys.remove(["a", "zzz"]).tolist(), keys.assign(["a"]).tolist()
    ([0], [2])
    """

    def __init__(self) -> None:
        self._internal: dict[Key, int] = {}
        self._keys: list[Key | None] = []  # by internal id; None once removed

    def __len__(self) -> int:
        """Return the number of live keys."""
        return len(self._internal)

    @property
    def next_id(self) -> int:
        """The internal id the next key gets."""
        return len(self._keys)

    def assign(self, keys: list[Key]) -> np.ndarray:
        """Give new keys the next internal ids; refuse a key already present (ValueError)."""
        for key in keys:
            if key in self._internal:
                raise ValueError(f"id {key!r} is already in the index")
        start = len(self._keys)
        self._keys.extend(keys)
        self._internal.update(zip(keys, range(start, start + len(keys)), strict=True))
        return np.arange(start, start + len(keys), dtype=np.int64)

    def internal(self, keys: Iterable[Any]) -> np.ndarray:
        """Return the internal ids of the keys present, in order (absent keys are skipped)."""
        found = [self._internal.get(_key(k, "id")) for k in keys]
        return np.array([i for i in found if i is not None], dtype=np.int64)

    def missing(self, keys: Iterable[Any]) -> list[Key]:
        """Return the keys that are not in the map."""
        return [k for k in (_key(v, "id") for v in keys) if k not in self._internal]

    def remove(self, keys: Iterable[Any]) -> np.ndarray:
        """Forget the keys present; return their internal ids (ascending)."""
        present = {k for k in (_key(v, "id") for v in keys) if k in self._internal}
        gone = sorted(self._internal.pop(k) for k in present)
        for i in gone:
            self._keys[i] = None
        return np.array(gone, dtype=np.int64)

    def external(self, internal: np.ndarray) -> np.ndarray:
        """Keys of internal ids, as an object array of the same shape (None for -1)."""
        table = np.empty(len(self._keys) + 1, dtype=object)
        table[:-1] = self._keys
        table[-1] = None  # -1 indexes the last cell: no result
        return table[np.asarray(internal, dtype=np.int64)]

    def to_json(self) -> dict[str, Any]:
        """Return the map as JSON-ready lists (live keys only)."""
        return {
            "next": len(self._keys),
            "internal": list(self._internal.values()),
            "keys": list(self._internal),
        }

    @classmethod
    def from_json(cls, data: Any) -> KeyMap:
        """Rebuild a map from `to_json`'s output; ValueError naming what is malformed."""
        if not isinstance(data, dict) or set(data) != {"next", "internal", "keys"}:
            raise ValueError("expected an object with 'next', 'internal' and 'keys'")
        size, internal, keys = data["next"], data["internal"], data["keys"]
        if type(size) is not int or not isinstance(internal, list) or not isinstance(keys, list):
            raise ValueError("'next' must be an int, 'internal' and 'keys' lists")
        if len(internal) != len(keys):
            raise ValueError(f"{len(internal)} internal ids for {len(keys)} keys")
        if any(type(i) is not int or not 0 <= i < size for i in internal):
            raise ValueError(f"internal ids must be ints in [0, {size})")
        if len(set(internal)) != len(internal):
            raise ValueError("internal ids repeat")
        checked = check_keys(keys)
        out = cls()
        try:  # a slot per internal id ever handed out
            out._keys = [None] * size
        except MemoryError:
            raise ValueError(f"'next' is {size:,}: more slots than the memory holds") from None
        for i, key in zip(internal, checked, strict=True):
            out._keys[i] = key
        out._internal = dict(zip(checked, internal, strict=True))
        return out

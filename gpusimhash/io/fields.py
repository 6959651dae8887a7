"""Where a record's text is: one field, a nested field (``meta.text``) or several (``title,body``).

A text field names one field, a dotted path into nested objects (JSON objects, Parquet structs),
or several of those separated by commas, whose texts are joined with a newline (for example a
title and a body deduplicated as one document). A field whose name is exactly the text given
(dots or commas included) is always that field.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["SEPARATOR", "TextField"]

# between the texts of several fields
SEPARATOR = "\n"


class FieldError(ValueError):
    """A record without the text field, or with a value that is not text (no location yet)."""


@dataclass(frozen=True)
class TextField:
    r"""A parsed text-field option.

    Attributes
    ----------
    name : str
        As given (``"text"``, ``"meta.text"``, ``"title,body"``).
    paths : tuple of tuple of str
        Each field's keys, outermost first.

    Examples
    --------
    >>> field = TextField.parse("title,meta.body")
    >>> field.paths
    (('title',), ('meta', 'body'))
    >>> field.text({"title": "A cat", "meta": {"body": "sat on the mat"}})
    'A cat\nsat on the mat'
    """

    name: str
    paths: tuple[tuple[str, ...], ...]

    @classmethod
    def parse(cls, name: str) -> TextField:
        """Parse ``name``: comma-separated fields, each a dotted path.

        Parameters
        ----------
        name : str
            The option's value.

        Returns
        -------
        TextField

        Raises
        ------
        ValueError
            An empty name or an empty part (``"a,,b"``, ``"meta."``).
        """
        paths = tuple(tuple(part.split(".")) for part in name.split(","))
        if not name or any(not key for path in paths for key in path):
            raise ValueError(f"text field {name!r} has an empty field name")
        return cls(name, paths)

    @property
    def is_plain(self) -> bool:
        """Whether it names one top-level field."""
        return len(self.paths) == 1 and len(self.paths[0]) == 1

    @property
    def top_level(self) -> list[str]:
        """The top-level fields (columns) it reads, in order, each once."""
        return list(dict.fromkeys(path[0] for path in self.paths))

    def text(self, record: dict[str, Any]) -> str:
        """Return the record's text.

        Parameters
        ----------
        record : dict
            One record (nested objects as dicts).

        Returns
        -------
        str

        Raises
        ------
        FieldError
            A missing field (the message lists the fields there are) or a value that is not a
            string.
        """
        if self.name in record:
            return _string(record[self.name], self.name)
        texts = []
        for path in self.paths:
            value: Any = record
            for depth, key in enumerate(path):
                name = ".".join(path[: depth + 1])
                if not isinstance(value, dict):
                    raise FieldError(f"field {name!r} is inside a {_describe(value)}")
                if key not in value:
                    fields = ", ".join(sorted(value)) or "none"
                    raise FieldError(f"no field {name!r} (fields: {fields})")
                value = value[key]
            texts.append(_string(value, ".".join(path)))
        return SEPARATOR.join(texts)


def _string(value: Any, name: str) -> str:
    """Return a text value, or raise naming the field."""
    if not isinstance(value, str):
        raise FieldError(f"field {name!r} must be a string, got {_describe(value)}")
    return value


def _describe(value: Any) -> str:
    """Name a value's JSON-ish type for an error message."""
    return "null" if value is None else type(value).__name__

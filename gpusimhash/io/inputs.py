"""The inputs of a command as a user names them: files, folders, glob patterns and ``-`` (stdin).

`input_files` turns them into the ordered list of files read (a corpus in shards is read as
one, its documents numbered in that order); `spooled_stdin` copies standard input once into a
temporary file, since dedup reads its input twice.
"""

from __future__ import annotations

import contextlib
import glob
import shutil
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO

__all__ = ["STDIN", "STDIN_NAME", "input_files", "spooled_stdin"]

STDIN = "-"
STDIN_NAME = "<stdin>"  # how messages name standard input
_GLOB_CHARACTERS = set("*?[")


def input_files(inputs: str | Path | Sequence[str | Path]) -> list[Path]:
    """List the files the inputs name, in order.

    Parameters
    ----------
    inputs : str, Path or sequence of them
        Files, folders (their files, sorted by name, hidden ones left out) and glob patterns
        (their matching files, sorted), in the order given. ``-`` is kept as ``Path("-")``
        (standard input, see `spooled_stdin`), at most once.

    Returns
    -------
    list of Path
        Every file once, in the order named (a file named twice is read once, where first
        named).

    Raises
    ------
    FileNotFoundError
        A file or folder that does not exist, or a pattern that matches no file.
    ValueError
        No input at all, an empty folder, or ``-`` given twice.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> for name in ("b.jsonl", "a.jsonl", ".hidden"):
    ...     _ = (folder / name).write_text("")
    >>> [p.name for p in input_files(folder)]
    ['a.jsonl', 'b.jsonl']
    >>> [p.name for p in input_files([folder / "b.jsonl", str(folder / "*.jsonl")])]
    ['b.jsonl', 'a.jsonl']
    """
    items = [inputs] if isinstance(inputs, str | Path) else list(inputs)
    if not items:
        raise ValueError("no input: give files, folders or glob patterns")
    if [str(item) for item in items].count(STDIN) > 1:
        raise ValueError("standard input (-) can be read once only")
    paths: list[Path] = []
    for item in items:
        text = str(item)
        path = Path(text)
        if text == STDIN:
            paths.append(path)
        elif _GLOB_CHARACTERS & set(text) and not path.exists():
            matches = sorted(Path(m) for m in glob.glob(text) if Path(m).is_file())
            if not matches:
                raise FileNotFoundError(f"{text}: no file matches this pattern")
            paths.extend(matches)
        elif path.is_dir():
            files = sorted(p for p in path.iterdir() if p.is_file() and not p.name.startswith("."))
            if not files:
                raise ValueError(f"{text}: a folder with no files")
            paths.extend(files)
        elif path.exists():
            paths.append(path)
        else:
            raise FileNotFoundError(f"{text}: no such file or folder")
    return list(dict.fromkeys(paths))


@contextlib.contextmanager
def spooled_stdin(stream: IO[bytes] | None = None, *, suffix: str = "") -> Iterator[Path]:
    r"""Copy standard input into a temporary file; yield its path, delete it afterwards.

    Parameters
    ----------
    stream : binary file, optional
        What to copy (default: ``sys.stdin.buffer``).
    suffix : str
        The file name's ending (``.jsonl``, ``.csv.gz``...), which tells readers its format.

    Yields
    ------
    Path
        The copy, in the system's temporary folder. An exception raised inside the block names
        standard input, not the copy: ``<stdin>`` replaces the copy's path in its message.

    Examples
    --------
    >>> import io
    >>> with spooled_stdin(io.BytesIO(b"one\ntwo\n"), suffix=".txt") as path:
    ...     path.read_text().splitlines(), path.suffix
    (['one', 'two'], '.txt')
    >>> with spooled_stdin(io.BytesIO(b"one\n")) as path:
    ...     raise ValueError(f"{path}, line 1: not valid JSON")
    Traceback (most recent call last):
    ...
    ValueError: <stdin>, line 1: not valid JSON
    """
    source = sys.stdin.buffer if stream is None else stream
    with tempfile.TemporaryDirectory(prefix="gpusimhash-stdin-") as folder:
        path = Path(folder) / f"stdin{suffix}"
        with open(path, "wb") as copy:
            shutil.copyfileobj(source, copy, 1 << 20)
        try:
            yield path
        except Exception as error:  # the copy is deleted: name standard input instead
            _rename(error, str(path), STDIN_NAME)
            raise


def _rename(error: Exception, old: str, new: str) -> None:
    """Replace ``old`` by ``new`` in an exception's message (and an OSError's file names)."""
    error.args = tuple(a.replace(old, new) if isinstance(a, str) else a for a in error.args)
    if isinstance(error, OSError):
        for name in ("filename", "filename2"):
            value = getattr(error, name)
            if isinstance(value, str | Path):
                setattr(error, name, str(value).replace(old, new))

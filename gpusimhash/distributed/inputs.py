"""Turn globs, folders and lists of files into the ordered partitions of a distributed run."""

from __future__ import annotations

import glob
from collections.abc import Sequence
from pathlib import Path

__all__ = ["partition_paths"]

_GLOB_CHARACTERS = set("*?[")


def partition_paths(inputs: str | Path | Sequence[str | Path]) -> list[Path]:
    """List the files of the inputs, one partition each, in order.

    Parameters
    ----------
    inputs : str, Path or sequence of them
        Files, folders (their files, sorted by name, hidden ones left out) and glob patterns
        (their matches, sorted), in the order given.

    Returns
    -------
    list of Path
        The partitions: their documents are numbered (global rows) in this order.

    Raises
    ------
    FileNotFoundError
        A file or folder that does not exist, or a pattern that matches nothing.
    ValueError
        No input at all, or an empty folder.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> for name in ("b.jsonl", "a.jsonl", ".hidden"):
    ...     _ = (folder / name).write_text("")
    >>> [p.name for p in partition_paths(folder)]
    ['a.jsonl', 'b.jsonl']
    >>> [p.name for p in partition_paths([folder / "b.jsonl", str(folder / "a.*")])]
    ['b.jsonl', 'a.jsonl']
    """
    items = [inputs] if isinstance(inputs, str | Path) else list(inputs)
    if not items:
        raise ValueError("no input: give files, folders or glob patterns")
    paths: list[Path] = []
    for item in items:
        text = str(item)
        if _GLOB_CHARACTERS & set(text) and not Path(text).exists():
            matches = sorted(Path(m) for m in glob.glob(text) if Path(m).is_file())
            if not matches:
                raise FileNotFoundError(f"{text}: no file matches this pattern")
            paths.extend(matches)
        elif Path(text).is_dir():
            files = sorted(
                p for p in Path(text).iterdir() if p.is_file() and not p.name.startswith(".")
            )
            if not files:
                raise ValueError(f"{text}: a folder with no files")
            paths.extend(files)
        elif Path(text).exists():
            paths.append(Path(text))
        else:
            raise FileNotFoundError(f"{text}: no such file or folder")
    return paths

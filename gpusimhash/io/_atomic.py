"""Atomic file replacement: write beside the destination, flush to disk, rename into place.

Every file the package writes goes through here (records, JSON, reports, index bundles), so a
reader sees the old file or the complete new one, never a half-written one, and a failed write
leaves the destination as it was (`gpusimhash.io._output_folder` does the same for a run's
set of output files).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

__all__ = [
    "atomic_path",
    "commit",
    "file_mode",
    "folder_mode",
    "fsync_path",
    "temporary_beside",
]


def file_mode() -> int:
    """Return the mode a new file gets by default: ``0o666`` less the process's umask.

    Returns
    -------
    int
        For example ``0o644`` under the usual umask ``0o022``.
    """
    return 0o666 & ~_umask()


def folder_mode() -> int:
    """Return the mode a new folder gets by default: ``0o777`` less the process's umask.

    Returns
    -------
    int
        For example ``0o755`` under the usual umask ``0o022``.
    """
    return 0o777 & ~_umask()


def fsync_path(path: str | Path) -> None:
    """Flush a file (or, on POSIX, a folder's entries) to disk.

    Parameters
    ----------
    path : str or Path
        The file or folder.
    """
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def temporary_beside(path: str | Path) -> tuple[int, Path]:
    """Create an empty temporary file in the destination's folder, with the default file mode.

    Parameters
    ----------
    path : str or Path
        The destination the temporary file will replace.

    Returns
    -------
    descriptor : int
        Open for writing; the caller closes it.
    temporary : Path
        ``.<name>.<random>.tmp`` beside ``path``.
    """
    path = Path(path)
    descriptor, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.chmod(name, file_mode())
    except BaseException:
        os.close(descriptor)
        os.unlink(name)
        raise
    return descriptor, Path(name)


def commit(temporary: str | Path, path: str | Path) -> None:
    """Flush a finished temporary file to disk and rename it over ``path``.

    Parameters
    ----------
    temporary : str or Path
        A closed file from `temporary_beside`.
    path : str or Path
        The destination.
    """
    fsync_path(temporary)
    os.replace(temporary, path)


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[str]:
    """Yield a temporary file name beside ``path``; move the file into place on success.

    The caller writes the temporary file; when the ``with`` block ends without an error it is
    flushed to disk and renamed over ``path``. On an error it is removed and ``path`` stays as
    it was.

    Parameters
    ----------
    path : str or Path
        Destination.

    Yields
    ------
    str
        The temporary file's name, in the destination's folder.

    Examples
    --------
    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "a.txt")
    >>> with atomic_path(path) as name:
    ...     _ = open(name, "w").write("done")
    >>> open(path).read()
    'done'
    """
    descriptor, temporary = temporary_beside(path)
    os.close(descriptor)
    try:
        yield str(temporary)
        commit(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def _umask() -> int:
    """Return the process's umask."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask

"""Atomic file replacement: write beside the destination, flush to disk, rename into place.

Every file the package writes goes through here (records, JSON, reports, index bundles), so a
reader sees the old file or the complete new one, never a half-written one, and a failed write
leaves the destination as it was. `replacing_folder` does the same for a set of files: a run's
outputs are written into a staging folder beside the destination and swapped in together.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
import shutil
import signal
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

__all__ = [
    "atomic_path",
    "commit",
    "file_mode",
    "fsync_path",
    "replacing_folder",
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


@contextlib.contextmanager
def replacing_folder(path: str | Path, *, owned: Callable[[str], bool]) -> Iterator[Path]:
    """Yield an empty staging folder beside ``path``; on success it replaces ``path`` whole.

    A reader of ``path`` sees the previous set of files or the complete new set, never a mix:
    the new files are written into ``.<name>.<random>.staging`` in the same parent folder, and
    when the ``with`` block ends without an error the old folder is renamed away, the staging
    folder renamed to ``path`` (Ctrl-C is held back between the two renames) and the old one
    deleted. On an error or an interrupt the staging folder is deleted and ``path`` is left as
    it was; the error's message names ``path``, not the staging folder. Staging and old folders that a killed process left behind are deleted on the next
    use (a live run holds a lock on its staging folder).

    Parameters
    ----------
    path : str or Path
        The folder to replace (a symbolic link is followed); it may be missing.
    owned : callable
        ``owned(name)`` is true for the names of entries a previous run may have written. The
        folder is refused when it holds anything else (replacing it would delete that);
        entries created there during the run are moved into the new folder.

    Yields
    ------
    Path
        The staging folder, to write the new files into.

    Raises
    ------
    ValueError
        ``path`` holds entries that ``owned`` rejects.
    OSError
        The parent folder cannot be written.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> out = Path(tempfile.mkdtemp()) / "out"
    >>> with replacing_folder(out, owned=lambda name: name.endswith(".txt")) as stage:
    ...     _ = (stage / "a.txt").write_text("new")
    >>> sorted(p.name for p in out.iterdir())
    ['a.txt']
    """
    path = Path(os.path.realpath(path))
    foreign = sorted(e.name for e in path.iterdir() if not owned(e.name)) if path.is_dir() else []
    if foreign:
        raise ValueError(
            f"{path} holds files this run would not write ({', '.join(foreign[:3])}): its "
            "outputs replace the folder whole, so choose a new folder or an earlier run's"
        )
    _remove_abandoned(path)
    staging = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}.", suffix=".staging"))
    descriptor = os.open(staging, os.O_RDONLY)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)  # in use: not abandoned
        os.chmod(staging, 0o777 & ~_umask())
        yield staging
        _swap(staging, path, owned)
    except BaseException as error:
        shutil.rmtree(staging, ignore_errors=True)
        _name_destination(error, staging, path)
        raise
    finally:
        os.close(descriptor)


def _name_destination(error: BaseException, staging: Path, path: Path) -> None:
    """Make an error's message name the destination folder instead of the staging one."""
    if isinstance(error, OSError) and isinstance(error.filename, str):
        error.filename = error.filename.replace(str(staging), str(path))
    elif error.args and isinstance(error.args[0], str):
        error.args = (error.args[0].replace(str(staging), str(path)), *error.args[1:])


def _umask() -> int:
    """Return the process's umask."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _remove_abandoned(path: Path) -> None:
    """Delete staging folders of dead runs and old folders of interrupted swaps."""
    for entry in path.parent.glob(f".{path.name}.*.old"):
        shutil.rmtree(entry, ignore_errors=True)
    for entry in path.parent.glob(f".{path.name}.*.staging"):
        try:
            descriptor = os.open(entry, os.O_RDONLY)
        except OSError:
            continue
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            continue  # a live run's
        finally:
            os.close(descriptor)
        shutil.rmtree(entry, ignore_errors=True)


def _swap(staging: Path, path: Path, owned: Callable[[str], bool]) -> None:
    """Put the staging folder in place of ``path``, then delete the previous folder."""
    if not path.exists():
        os.rename(staging, path)
        fsync_path(path.parent)
        return
    for entry in path.iterdir():
        if not owned(entry.name) and not (staging / entry.name).exists():
            os.rename(entry, staging / entry.name)
    old = path.with_name(f".{path.name}.{secrets.token_hex(4)}.old")
    with _interrupts_held():
        os.rename(path, old)
        os.rename(staging, path)
    fsync_path(path.parent)
    shutil.rmtree(old)


@contextlib.contextmanager
def _interrupts_held() -> Iterator[None]:
    """Deliver a Ctrl-C that arrives in the block only after it (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda number, frame: received.append(number))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if received:
            signal.raise_signal(signal.SIGINT)

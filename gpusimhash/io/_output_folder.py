"""Replace a run's output folder: every output at once, and only what an earlier run wrote.

A run writes its outputs into a staging folder. When it ends without an error, the new outputs
take the place of the earlier run's; after an error or an interrupt the staging folder is
deleted and the output folder is left as it was, so a failed run leaves the earlier complete
outputs.

Each run writes a manifest, ``.gpusimhash-outputs.json``, into the folder: every file and
folder it wrote. Replacing removes only what the manifest lists. An output folder holding
anything else is refused before any work: a name a run writes (``report.md``, ``kept/``) that
the manifest does not list, an entry the manifest lists as a file that is now a folder (or a
link), an unlisted file inside a listed folder, any other file.

Where the staging folder goes:

* beside the output folder (``.<name>.<random>.staging`` in its parent), renamed in its place
  (the old folder renamed away first, Ctrl-C held back between the two renames): a reader sees
  the old set of files or the new one, never a mix;
* inside the output folder (``.gpusimhash-staging.<random>``) when the folder cannot be
  renamed: a mount point, or a parent folder this process cannot write. At the end the earlier
  outputs are moved into ``.gpusimhash-old.<random>`` there, the new ones moved into the
  folder, and the old ones deleted; a failed move puts back what had moved. The moves take
  one rename each, so a reader can see a mix of the two runs for that moment, and a process
  killed during them leaves one (the earlier outputs then stay in the ``.gpusimhash-old``
  folder until the next run).

Staging and old folders that a killed process left behind are deleted on the next use (a live
run holds a lock on its staging folder).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
import shutil
import signal
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from gpusimhash._output_names import MANIFEST
from gpusimhash.io._atomic import atomic_path, folder_mode

__all__ = ["MANIFEST", "output_entries", "replacing_folder"]

MANIFEST_FORMAT = 1
# entries of a run in progress inside the output folder (the staging folder when the folder
# cannot be replaced, the earlier outputs while they are swapped)
INSIDE_STAGING = ".gpusimhash-staging."
INSIDE_OLD = ".gpusimhash-old."
# a file system's own folder at the root of a mount point (ext2/3/4), never an output
LOST_AND_FOUND = "lost+found"


@dataclass(frozen=True)
class Manifest:
    """What a run wrote into its output folder: relative paths of its files and folders."""

    files: frozenset[str]
    folders: frozenset[str]

    @classmethod
    def of(cls, folder: Path) -> Manifest:
        """List every file and folder under ``folder`` (the manifest itself left out)."""
        files: set[str] = set()
        folders: set[str] = set()
        for root, names, leaves in os.walk(folder):
            base = Path(root).relative_to(folder)
            folders.update((base / name).as_posix() for name in names)
            files.update((base / name).as_posix() for name in leaves)
        files.discard(MANIFEST)
        return cls(frozenset(files), frozenset(folders))

    @classmethod
    def read(cls, folder: Path) -> Manifest | None:
        """Read ``folder``'s manifest (None when there is none); ValueError if it is not one."""
        path = folder / MANIFEST
        if not path.exists() and not path.is_symlink():
            return None
        try:
            if path.is_symlink() or not path.is_file():
                raise ValueError("not a regular file")
            body = json.loads(path.read_text(encoding="utf-8"))
            version = body["format"]
            if not isinstance(version, int) or version > MANIFEST_FORMAT:
                raise ValueError(
                    f"format {version!r}: written by a newer version, this one reads "
                    f"{MANIFEST_FORMAT}"
                )
            files, folders = body["files"], body["folders"]
            if not all(isinstance(p, str) for p in [*files, *folders]):
                raise ValueError("paths must be strings")
        except (OSError, UnicodeDecodeError, TypeError, KeyError, ValueError) as error:
            raise ValueError(
                f"{path}: not a manifest of this version's outputs ({_reason(error)}): move the "
                "folder's contents or choose another folder"
            ) from None
        return cls(frozenset(files), frozenset(folders))

    def write(self, folder: Path) -> None:
        """Write this manifest into ``folder`` (atomically)."""
        body = {"format": MANIFEST_FORMAT, "files": sorted(self.files)}
        body["folders"] = sorted(self.folders)
        with atomic_path(folder / MANIFEST) as name, open(name, "w", encoding="utf-8") as stream:
            json.dump(body, stream, indent=1)
            stream.write("\n")


def output_entries(path: str | Path) -> list[str]:
    """Return the names of the entries in an output folder, leaving out those that are no output.

    Left out: the staging and old folders of a run (``.gpusimhash-staging.*``,
    ``.gpusimhash-old.*``) and ``lost+found`` at a mount point.

    Parameters
    ----------
    path : str or Path
        An existing folder.

    Returns
    -------
    list of str
        Sorted names.
    """
    path = Path(path)
    mount = _is_mount_point(path)
    return sorted(
        name
        for name in os.listdir(path)
        if not name.startswith((INSIDE_STAGING, INSIDE_OLD))
        and not (mount and name == LOST_AND_FOUND)
    )


@contextlib.contextmanager
def replacing_folder(path: str | Path, *, owned: Callable[[str], bool]) -> Iterator[Path]:
    """Yield an empty staging folder; on success its contents replace the earlier outputs.

    See the module's description for where the staging folder goes and what is replaced. The
    manifest of the new outputs is written into the staging folder when the ``with`` block ends.
    An error's message names ``path``, not the staging folder.

    Parameters
    ----------
    path : str or Path
        The output folder (a symbolic link is followed); it may be missing.
    owned : callable
        ``owned(name)`` is true for the names of entries a run writes into the folder.

    Yields
    ------
    Path
        The staging folder, to write the new files into.

    Raises
    ------
    ValueError
        ``path`` holds an entry that no earlier run's manifest lists.
    OSError
        The folder (or, for a staging folder beside it, its parent) cannot be written.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> out = Path(tempfile.mkdtemp()) / "out"
    >>> for text in ("old", "new"):
    ...     with replacing_folder(out, owned=lambda name: name.endswith(".txt")) as stage:
    ...         _ = (stage / "a.txt").write_text(text)
    >>> sorted(p.name for p in out.iterdir()), (out / "a.txt").read_text()
    (['.gpusimhash-outputs.json', 'a.txt'], 'new')
    """
    path = Path(os.path.realpath(path))
    _earlier_outputs(path, owned, carry=False)  # refused before any work
    inside = path.is_dir() and not _replaceable(path)
    _remove_abandoned(path)
    if inside:
        staging = Path(tempfile.mkdtemp(dir=path, prefix=INSIDE_STAGING))
    else:
        staging = Path(
            tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}.", suffix=".staging")
        )
    descriptor = os.open(staging, os.O_RDONLY)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)  # in use: not abandoned
        os.chmod(staging, folder_mode())
        yield staging
        Manifest.of(staging).write(staging)
        if inside:
            _move_in(staging, path, owned)
        else:
            _swap(staging, path, owned)
    except BaseException as error:
        shutil.rmtree(staging, ignore_errors=True)
        _name_destination(error, staging, path)
        raise
    finally:
        os.close(descriptor)


def _earlier_outputs(path: Path, owned: Callable[[str], bool], *, carry: bool) -> list[str]:
    """Return the entries of ``path`` that its manifest lists (an earlier run's outputs).

    Raises ValueError for an entry no manifest lists, unless ``carry`` (at the end of a run)
    and it was put there during the run and is no name of ours: such entries are left out (the
    caller keeps them).
    """
    if not path.is_dir():
        return []
    manifest = Manifest.read(path)
    listed: list[str] = []
    foreign: list[str] = []
    for name in output_entries(path):
        entry = path / name
        if name == MANIFEST or manifest is not None and _listed(entry, name, manifest):
            listed.append(name)
        elif owned(name):
            _refuse(path, entry, manifest)
        elif not carry:
            foreign.append(name)
    if foreign:
        raise ValueError(
            f"{path} holds files this run would not write ({', '.join(foreign[:3])}): a run "
            "replaces only the outputs of an earlier run, so move them or choose another folder"
        )
    return listed


def _listed(entry: Path, name: str, manifest: Manifest) -> bool:
    """Whether ``entry`` is what the manifest lists: the file, or the folder and all it holds."""
    if entry.is_symlink():
        return False
    if name in manifest.files:
        return entry.is_file()
    if name not in manifest.folders or not entry.is_dir():
        return False
    for root, names, leaves in os.walk(entry):
        base = Path(root).relative_to(entry.parent)
        for child in names:
            if (base / child).as_posix() not in manifest.folders or (
                Path(root) / child
            ).is_symlink():
                return False
        for leaf in leaves:
            if (base / leaf).as_posix() not in manifest.files or (Path(root) / leaf).is_symlink():
                return False
    return True


def _refuse(path: Path, entry: Path, manifest: Manifest | None) -> None:
    """Raise ValueError: ``entry`` bears a name of ours but no earlier run wrote it."""
    kind = "a link" if entry.is_symlink() else "a folder" if entry.is_dir() else "a file"
    why = (
        f"the folder has no {MANIFEST} listing what an earlier run wrote"
        if manifest is None
        else f"{MANIFEST} does not list this {kind.split()[-1]} or what it holds"
    )
    raise ValueError(
        f"{entry} is {kind} that no earlier run wrote ({why}): a run would delete it, so move "
        "it or choose another folder"
    )


def _reason(error: BaseException) -> str:
    """Say what is wrong with a manifest, from the exception that found it."""
    if isinstance(error, KeyError):
        return f"no {error.args[0]!r}"
    return str(error) or type(error).__name__


def _replaceable(path: Path) -> bool:
    """Whether the folder can be renamed away: no mount point, its parent writable."""
    return not _is_mount_point(path) and os.access(path.parent, os.W_OK | os.X_OK)


def _is_mount_point(path: Path) -> bool:
    """Whether something is mounted on ``path`` (a bind mount within one file system too)."""
    if os.path.ismount(path):
        return True
    try:
        with open("/proc/self/mountinfo", encoding="utf-8") as table:
            points = {_unescaped(line.split()[4]) for line in table if len(line.split()) > 4}
    except OSError:
        return False
    return str(path) in points


def _unescaped(field: str) -> str:
    r"""Undo the octal escapes of a mount point in ``/proc/self/mountinfo`` (``\040``: a space)."""
    return field.encode().decode("unicode_escape") if "\\" in field else field


def _remove_abandoned(path: Path) -> None:
    """Delete the staging folders of dead runs and the old folders of interrupted swaps."""
    inside = (
        [*path.glob(f"{INSIDE_STAGING}*"), *path.glob(f"{INSIDE_OLD}*")] if path.is_dir() else []
    )
    for entry in [
        *path.parent.glob(f".{path.name}.*.old"),
        *path.parent.glob(f".{path.name}.*.staging"),
        *inside,
    ]:
        if entry.name.endswith(".old") or entry.name.startswith(INSIDE_OLD) or not _locked(entry):
            shutil.rmtree(entry, ignore_errors=True)


def _locked(folder: Path) -> bool:
    """Whether a live run holds the lock on a staging folder."""
    try:
        descriptor = os.open(folder, os.O_RDONLY)
    except OSError:
        return True  # cannot tell: leave it
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(descriptor)
    return False


def _swap(staging: Path, path: Path, owned: Callable[[str], bool]) -> None:
    """Rename the staging folder in place of ``path``, then delete the earlier outputs."""
    if not path.exists():
        os.rename(staging, path)
        _fsync_folder(path.parent)
        return
    listed = set(_earlier_outputs(path, owned, carry=True))
    for name in output_entries(path):  # put there during the run: kept
        if name not in listed and not (staging / name).exists():
            os.rename(path / name, staging / name)
    old = path.with_name(f".{path.name}.{secrets.token_hex(4)}.old")
    with _interrupts_held():
        os.rename(path, old)
        try:
            os.rename(staging, path)
        except BaseException:
            os.rename(old, path)
            raise
    _fsync_folder(path.parent)
    shutil.rmtree(old)


def _move_in(staging: Path, path: Path, owned: Callable[[str], bool]) -> None:
    """Move the earlier outputs out of ``path`` and the staged ones in, entry by entry."""
    # the manifest goes out first and comes in last
    earlier = sorted(_earlier_outputs(path, owned, carry=True), key=lambda n: n != MANIFEST)
    new = sorted(os.listdir(staging), key=lambda n: n == MANIFEST)
    old = Path(tempfile.mkdtemp(dir=path, prefix=INSIDE_OLD))
    moves = [(path / n, old / n) for n in earlier] + [(staging / n, path / n) for n in new]
    done: list[tuple[Path, Path]] = []
    with _interrupts_held():
        try:
            for source, target in moves:
                os.rename(source, target)
                done.append((source, target))
        except BaseException:
            for source, target in reversed(done):
                os.rename(target, source)
            os.rmdir(old)
            raise
    os.rmdir(staging)
    _fsync_folder(path)
    shutil.rmtree(old)


def _fsync_folder(folder: Path) -> None:
    """Flush a folder's entries to disk."""
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _name_destination(error: BaseException, staging: Path, path: Path) -> None:
    """Make an error's message name the destination folder instead of the staging one."""
    if isinstance(error, OSError) and isinstance(error.filename, str):
        error.filename = error.filename.replace(str(staging), str(path))
    elif error.args and isinstance(error.args[0], str):
        error.args = (error.args[0].replace(str(staging), str(path)), *error.args[1:])


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

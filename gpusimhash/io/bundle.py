"""Checksummed, atomically replaced bundles of files in one directory.

A bundle is a directory holding data files and ``manifest.json``, which lists every data file
with its size and SHA-256 and carries the caller's metadata, a format name and version, and a
checksum of itself. Saving writes the data files under fresh names (a per-save generation
suffix), flushes them to disk, and only then replaces the manifest with ``os.replace``: the one
atomic step. A crash at any point leaves either the old manifest, whose files are untouched, or
the new one, whose files are complete; files of older or failed saves are removed afterwards.
(Renaming a whole directory over a non-empty one is not possible on POSIX, hence a manifest.)
Loading checks everything before anyone parses a data file, and never unpickles.

Concurrency (POSIX ``flock``, released by the kernel when a process dies): `writing` holds the
folder's writer lock (``.writer.lock``), so saves, from threads or processes, run one at a
time, and a read-modify-save sequence can hold it throughout; `reading` holds the reader lock
(``.reader.lock``) shared, and a save deletes the previous files only when it can take that
lock exclusively at once, so a reader that found a manifest always finds its files (a busy save
leaves them to the next one). Readers never wait for a save and a save never waits for readers.

The manifest's checksum detects corruption, not tampering (anyone can recompute it), so loading
also refuses data file names other than the ``<name>.<16 hex digits>.<ext>`` that saving writes,
which keeps every read inside the folder.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import secrets
import stat
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from gpusimhash.io._atomic import atomic_path, file_mode, fsync_path

__all__ = [
    "BundleError",
    "read_bundle",
    "reading",
    "sha256_file",
    "write_bundle",
    "writer_of",
    "writing",
]

MANIFEST = "manifest.json"
WRITER_LOCK = ".writer.lock"
READER_LOCK = ".reader.lock"
_GENERATION = re.compile(r"^(?P<name>[a-z_]+)\.(?P<generation>[0-9a-f]{16})\.(?P<ext>[a-z]+)$")


class BundleError(ValueError):
    """A bundle that cannot be loaded: missing, truncated, corrupt or mismatched file."""


def sha256_file(path: str | Path) -> str:
    """SHA-256 of a file's bytes, as hex.

    Parameters
    ----------
    path : str or Path
        File to hash (read in 1 MiB chunks).

    Returns
    -------
    str
        64 hex digits.

    Examples
    --------
    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "x")
    >>> _ = open(path, "wb").write(b"abc")
    >>> sha256_file(path)[:16]
    'ba7816bf8f01cfea'
    """
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for chunk in iter(lambda: stream.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


# writer locks held by this process: folder -> (thread lock, depth, descriptor); the thread lock
# makes `writing` re-entrant for its thread and exclusive between threads (flock alone is not)
_WRITERS: dict[str, list[Any]] = {}
_WRITERS_GUARD = threading.Lock()


@contextlib.contextmanager
def writing(directory: str | Path) -> Iterator[Path]:
    """Hold a bundle folder's writer lock: one writer at a time, across threads and processes.

    Re-entrant within a thread, so a caller can hold it around a load, a change and a save
    (`write_bundle` takes it too). Waits while another writer holds it.

    Parameters
    ----------
    directory : str or Path
        Bundle directory; created if missing.

    Yields
    ------
    Path
        The directory.

    Raises
    ------
    OSError
        The directory cannot be created or written.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> folder = Path(tempfile.mkdtemp()) / "bundle"
    >>> with writing(folder):
    ...     write_bundle(folder, {"note": ("txt", lambda p: p.write_text("hi"))},
    ...                  format_name="demo", format_version=1, metadata={})
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    key = os.path.realpath(directory)
    with _WRITERS_GUARD:
        entry = _WRITERS.setdefault(key, [threading.RLock(), 0, -1])
    with entry[0]:
        if entry[1] == 0:
            descriptor = os.open(directory / WRITER_LOCK, os.O_RDWR | os.O_CREAT, file_mode())
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX)
            except BaseException:
                os.close(descriptor)
                raise
            entry[2] = descriptor
        entry[1] += 1
        try:
            yield directory
        finally:
            entry[1] -= 1
            if entry[1] == 0:
                os.close(entry[2])  # releases the flock


@contextlib.contextmanager
def reading(directory: str | Path) -> Iterator[Path]:
    """Hold a bundle folder's reader lock (shared): no save deletes files read meanwhile.

    Hold it from reading the manifest until the data files are parsed (or mapped). In a folder
    that cannot be written and has no lock file, nobody can save either, and no lock is taken.

    Parameters
    ----------
    directory : str or Path
        Bundle directory.

    Yields
    ------
    Path
        The directory.
    """
    directory = Path(directory)
    path = directory / READER_LOCK
    try:
        descriptor = os.open(path, os.O_RDWR | os.O_CREAT, file_mode())
    except OSError:
        try:
            descriptor = os.open(path, os.O_RDONLY)
        except OSError:
            yield directory
            return
    try:
        fcntl.flock(descriptor, fcntl.LOCK_SH)
        yield directory
    finally:
        os.close(descriptor)


def _self_checksum(body: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode("utf-8")).hexdigest()


def write_bundle(
    directory: str | Path,
    writers: dict[str, tuple[str, Callable[[Path], None]]],
    *,
    format_name: str,
    format_version: int,
    metadata: dict[str, Any],
) -> None:
    """Save data files and a manifest into `directory`, replacing any previous bundle atomically.

    Parameters
    ----------
    directory : str or Path
        Bundle directory; created if missing.
    writers : dict
        ``{name: (extension, write)}``: ``write(path)`` writes the file ``name`` at ``path``.
        Names are lower-case letters and ``_``; extensions lower-case letters.
    format_name, format_version : str, int
        Recorded in the manifest and checked by `read_bundle`.
    metadata : dict
        JSON-safe data stored in the manifest.

    Raises
    ------
    ValueError
        A bad file name or extension.
    OSError
        The directory cannot be written; the previous bundle is then left as it was.

    Notes
    -----
    Holds the writer lock (`writing`) throughout: concurrent saves into one folder run one
    after the other, the last one's files stay.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> folder = Path(tempfile.mkdtemp()) / "bundle"
    >>> write_bundle(folder, {"note": ("txt", lambda p: p.write_text("hi"))},
    ...              format_name="demo", format_version=1, metadata={"n": 1})
    >>> metadata, paths = read_bundle(folder, format_name="demo", format_version=1)
    >>> metadata["n"], paths["note"].read_text()
    (1, 'hi')
    """
    with writing(directory):
        _write(Path(directory), writers, format_name, format_version, metadata)


def _write(
    directory: Path,
    writers: dict[str, tuple[str, Callable[[Path], None]]],
    format_name: str,
    format_version: int,
    metadata: dict[str, Any],
) -> None:
    """Write the data files and the manifest of a new generation (under the writer lock)."""
    generation = secrets.token_hex(8)
    files: dict[str, dict[str, Any]] = {}
    written: list[Path] = []
    try:
        for name, (extension, write) in writers.items():
            filename = f"{name}.{generation}.{extension}"
            if not _GENERATION.match(filename):
                raise ValueError(f"bad bundle file name {name!r} or extension {extension!r}")
            path = directory / filename
            written.append(path)
            write(path)
            fsync_path(path)
            files[name] = {
                "file": filename,
                "bytes": path.stat().st_size,
                "sha256": sha256_file(path),
            }
        body = {
            "format": format_name,
            "format_version": format_version,
            "files": files,
            "metadata": metadata,
        }
        # the release that wrote it, for messages only: outside the checksummed body, which
        # older releases check over its four keys
        manifest = {**body, "manifest_sha256": _self_checksum(body), "written_by": _release()}
        with (
            atomic_path(directory / MANIFEST) as temporary,
            open(temporary, "w", encoding="utf-8") as stream,
        ):
            json.dump(manifest, stream, indent=1, sort_keys=True)
            stream.write("\n")
    except BaseException:
        for path in written:
            path.unlink(missing_ok=True)
        raise
    fsync_path(directory)
    _remove_stale(directory, generation)


def _remove_stale(directory: Path, generation: str) -> None:
    """Delete data files and temporary manifests of other saves, unless a reader is busy."""
    try:
        descriptor = os.open(directory / READER_LOCK, os.O_RDWR | os.O_CREAT, file_mode())
    except OSError:
        return
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(descriptor)
        return
    try:
        _unlink_stale(directory, generation)
    finally:
        os.close(descriptor)


def _unlink_stale(directory: Path, generation: str) -> None:
    """Delete every data file of another generation and every temporary manifest."""
    for path in directory.iterdir():
        match = _GENERATION.match(path.name)
        stale_data = match is not None and match["generation"] != generation
        stale_manifest = path.name.startswith(f".{MANIFEST}.") and path.name.endswith(".tmp")
        if stale_data or stale_manifest:
            path.unlink(missing_ok=True)


def read_bundle(
    directory: str | Path,
    *,
    format_name: str,
    format_version: int | tuple[int, ...],
    verify: bool = True,
) -> tuple[dict[str, Any], dict[str, Path]]:
    """Check a bundle and return its metadata and the paths of its data files.

    Parameters
    ----------
    directory : str or Path
        Bundle directory written by `write_bundle`.
    format_name, format_version : str, int or tuple of int
        What the caller can read (a tuple: any of those versions).
    verify : bool
        Check every data file's SHA-256 (reads them all). Sizes are always checked.

    Returns
    -------
    metadata : dict
        The metadata given to `write_bundle`.
    paths : dict of str to Path
        Data file of each name.

    Raises
    ------
    BundleError
        A missing directory, manifest or data file; an unreadable, malformed or altered
        manifest; a data file name `write_bundle` never writes (``../x``, ``/etc/passwd``: only
        plain names inside the folder are opened) or a file that is a link; another format or
        version; a data file of the wrong size (truncated) or checksum (corrupt). The message
        names the file.

    Notes
    -----
    Holds the reader lock (`reading`) while checking; a caller that parses the files afterwards
    holds it too, around both, so that no concurrent save deletes them in between.
    """
    directory = Path(directory)
    with reading(directory):
        return _read(directory, format_name, format_version, verify)


def _read(
    directory: Path, format_name: str, format_version: int | tuple[int, ...], verify: bool
) -> tuple[dict[str, Any], dict[str, Path]]:
    """Check the manifest and every data file it lists (under the reader lock)."""
    manifest_path = directory / MANIFEST
    if not manifest_path.is_file():
        raise BundleError(f"{manifest_path}: missing (not a saved bundle)")
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        body = {key: manifest[key] for key in ("format", "format_version", "files", "metadata")}
        stored_checksum = manifest["manifest_sha256"]
    except (ValueError, KeyError, TypeError, RecursionError) as error:
        raise BundleError(f"{manifest_path}: unreadable manifest ({error!r})") from None
    except OSError as error:
        raise BundleError(f"{manifest_path}: unreadable ({error.strerror})") from None
    if stored_checksum != _self_checksum(body):
        raise BundleError(f"{manifest_path}: checksum mismatch (the manifest was altered)")
    versions = (format_version,) if isinstance(format_version, int) else format_version
    found = body["format_version"]
    if body["format"] == format_name and type(found) is int and found > max(versions):
        raise BundleError(
            f"{manifest_path}: format {format_name!r} version {found}, written by "
            f"{_writer(manifest)}, is newer than this release reads (version "
            f"{' or '.join(map(str, versions))}): load it with the release that wrote it"
        )
    if body["format"] != format_name or found not in versions:
        raise BundleError(
            f"{manifest_path}: format {body['format']!r} version {body['format_version']!r}, "
            f"expected {format_name!r} version {' or '.join(map(str, versions))}"
        )
    if not isinstance(body["metadata"], dict) or not isinstance(body["files"], dict):
        raise BundleError(f"{manifest_path}: 'metadata' and 'files' must be JSON objects")
    paths = {}
    for name, entry in body["files"].items():
        path = directory / _checked_entry(manifest_path, name, entry)
        try:
            status = path.lstat()
        except FileNotFoundError:
            raise BundleError(f"{path}: missing (listed in {manifest_path} as {name!r})") from None
        if not stat.S_ISREG(status.st_mode):
            raise BundleError(f"{path}: not a regular file (a link or a folder)")
        if status.st_size != entry["bytes"]:
            raise BundleError(
                f"{path}: {status.st_size} bytes, expected {entry['bytes']} (truncated?)"
            )
        if verify and sha256_file(path) != entry["sha256"]:
            raise BundleError(f"{path}: SHA-256 mismatch (the file is corrupt)")
        paths[name] = path
    return body["metadata"], paths


def writer_of(directory: str | Path) -> str:
    """Say which release wrote a bundle, for messages: ``gpusimhash 0.1.0``.

    Parameters
    ----------
    directory : str or Path
        The bundle's folder.

    Returns
    -------
    str
        The manifest's ``written_by``, or words saying that it does not say (a release that
        did not record it, or a manifest that cannot be read).
    """
    try:
        manifest = json.loads((Path(directory) / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        manifest = None
    return _writer(manifest)


def _writer(manifest: Any) -> str:
    """Return a manifest's ``written_by``, or words saying it has none."""
    written_by = manifest.get("written_by") if isinstance(manifest, dict) else None
    if isinstance(written_by, str) and written_by:
        return written_by
    return "a release that does not record its version"


def _release() -> str:
    """Return this release's name and version."""
    from gpusimhash import __version__

    return f"gpusimhash {__version__}"


def _checked_entry(manifest_path: Path, name: str, entry: Any) -> str:
    """Return a manifest entry's file name, refusing any shape or name `write_bundle` never wrote."""
    if (
        not isinstance(entry, dict)
        or not isinstance(entry.get("file"), str)
        or type(entry.get("bytes")) is not int
        or not isinstance(entry.get("sha256"), str)
    ):
        raise BundleError(
            f"{manifest_path}: entry {name!r} must be an object with 'file', 'bytes' and 'sha256'"
        )
    match = _GENERATION.fullmatch(entry["file"])
    if match is None or match["name"] != name:
        raise BundleError(
            f"{manifest_path}: entry {name!r} names file {entry['file']!r}, expected "
            f"'{name}.<16 hex digits>.<extension>' inside the folder"
        )
    return entry["file"]

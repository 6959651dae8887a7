"""Checksummed, atomically replaced bundles of files in one directory.

A bundle is a directory holding data files and ``manifest.json``, which lists every data file
with its size and SHA-256 and carries the caller's metadata, a format name and version, and a
checksum of itself. Saving writes the data files under fresh names (a per-save generation
suffix), flushes them to disk, and only then replaces the manifest with ``os.replace``: the one
atomic step. A crash at any point leaves either the old manifest, whose files are untouched, or
the new one, whose files are complete; files of older or failed saves are removed afterwards.
(Renaming a whole directory over a non-empty one is not possible on POSIX, hence a manifest.)
Loading checks everything before anyone parses a data file, and never unpickles.
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gpusimhash.io._atomic import atomic_path, fsync_path

__all__ = ["BundleError", "read_bundle", "sha256_file", "write_bundle"]

MANIFEST = "manifest.json"
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
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
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
        manifest = {**body, "manifest_sha256": _self_checksum(body)}
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
    """Delete data files and temporary manifests of other saves."""
    for path in directory.iterdir():
        match = _GENERATION.match(path.name)
        stale_data = match is not None and match["generation"] != generation
        stale_manifest = path.name.startswith(f".{MANIFEST}.") and path.name.endswith(".tmp")
        if stale_data or stale_manifest:
            path.unlink(missing_ok=True)


def read_bundle(
    directory: str | Path, *, format_name: str, format_version: int, verify: bool = True
) -> tuple[dict[str, Any], dict[str, Path]]:
    """Check a bundle and return its metadata and the paths of its data files.

    Parameters
    ----------
    directory : str or Path
        Bundle directory written by `write_bundle`.
    format_name, format_version : str, int
        What the caller can read.
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
        A missing directory, manifest or data file; an unreadable or altered manifest; another
        format or version; a data file of the wrong size (truncated) or checksum (corrupt). The
        message names the file.
    """
    directory = Path(directory)
    manifest_path = directory / MANIFEST
    if not manifest_path.is_file():
        raise BundleError(f"{manifest_path}: missing (not a saved bundle)")
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        body = {key: manifest[key] for key in ("format", "format_version", "files", "metadata")}
        stored_checksum = manifest["manifest_sha256"]
    except (ValueError, KeyError, TypeError) as error:
        raise BundleError(f"{manifest_path}: unreadable manifest ({error})") from None
    if stored_checksum != _self_checksum(body):
        raise BundleError(f"{manifest_path}: checksum mismatch (the manifest was altered)")
    if body["format"] != format_name or body["format_version"] != format_version:
        raise BundleError(
            f"{manifest_path}: format {body['format']!r} version {body['format_version']!r}, "
            f"expected {format_name!r} version {format_version}"
        )
    paths = {}
    for name, entry in body["files"].items():
        path = directory / entry["file"]
        if not path.is_file():
            raise BundleError(f"{path}: missing (listed in {manifest_path} as {name!r})")
        size = path.stat().st_size
        if size != entry["bytes"]:
            raise BundleError(f"{path}: {size} bytes, expected {entry['bytes']} (truncated?)")
        if verify and sha256_file(path) != entry["sha256"]:
            raise BundleError(f"{path}: SHA-256 mismatch (the file is corrupt)")
        paths[name] = path
    return body["metadata"], paths

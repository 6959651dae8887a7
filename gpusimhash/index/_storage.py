"""Saving and loading a `SimHashIndex`: one checksummed bundle folder, never pickle.

A saved index is a ``gpusimhash.io.bundle`` folder: FAISS's own binary index file (``index``),
the tombstones as ``.npy`` (``tombstones``), string ids as JSON (``keys``, only for an index
with string ids) and ``manifest.json`` (format version, settings, featurizer configuration,
counts, SHA-256 of every file). Format version 2 is an index with string ids; one with int64
ids is saved as version 1, which older releases read too. Saves into one folder run one at a
time and replace it atomically; a load sees the old or the new index, never a mix.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import faiss
import numpy as np

from gpusimhash.index._keys import KeyMap
from gpusimhash.io.bundle import BundleError, read_bundle, write_bundle, writer_of

FORMAT_NAME = "gpusimhash-index"
FORMAT_VERSION = 2  # 2: string ids (a keys file); 1 (still written for int64 ids): without
# the metadata keys this release reads, at the top and inside the featurizer's configuration;
# a key it does not know may change what the index means (how queries are fingerprinted), so
# it is refused, unless the metadata lists it under INFORMATIVE (keys any reader may ignore)
SETTINGS_KEYS = frozenset(
    {"kind", "bits", "seed", "params", "featurizer", "ntotal", "n_tombstones"}
)
FEATURIZER_KEYS = frozenset(
    {"version", "analyzer", "ngram", "weighting", "lowercase", "document_frequencies"}
)
FREQUENCY_KEYS = frozenset({"n_docs", "states", "df"})
INFORMATIVE = "informative"


@dataclass(frozen=True)
class Saved:
    """What a saved index folder holds, each part checked on its own.

    Attributes
    ----------
    metadata : dict
        The manifest's settings and counts (``kind``, ``bits``, ``seed``, ``params``,
        ``featurizer``, ``ntotal``, ``n_tombstones``), as saved.
    manifest, index_file, tombstones_file : Path
        The manifest, the FAISS file and the tombstones' file, for messages.
    index : faiss.IndexBinaryIDMap
        The FAISS index.
    tombstones : ndarray, dtype int64
        Internal ids removed but still stored.
    keys : KeyMap or None
        The string ids of an index that has them.
    """

    metadata: dict[str, Any]
    manifest: Path
    index_file: Path
    tombstones_file: Path
    index: Any
    tombstones: np.ndarray
    keys: KeyMap | None


def save(
    path: str | Path,
    *,
    metadata: dict[str, Any],
    index: Any,
    tombstones: np.ndarray,
    keys: KeyMap | None,
) -> None:
    """Write an index's parts as a bundle folder, atomically replacing what was there.

    Parameters
    ----------
    path : str or Path
        Folder (created if missing).
    metadata : dict
        Settings and counts, JSON-safe.
    index : faiss.IndexBinaryIDMap
        The FAISS index.
    tombstones : ndarray, dtype int64
        Removed internal ids.
    keys : KeyMap or None
        String ids, if any.

    Raises
    ------
    OSError
        The folder cannot be written.
    """
    text = None if keys is None else json.dumps(keys.to_json(), ensure_ascii=False)

    def write_index(path: Path) -> None:
        # through a Python file, so that a full disk is the OSError it is
        with open(path, "wb") as stream:
            writer = faiss.PyCallbackIOWriter(stream.write)  # type: ignore[attr-defined]
            faiss.write_index_binary(index, writer)

    def write_keys(path: Path) -> None:
        path.write_text(str(text), encoding="utf-8")

    files: dict[str, tuple[str, Callable[[Path], None]]] = {
        "index": ("faissbin", write_index),
        "tombstones": ("npy", lambda p: np.save(p, tombstones, allow_pickle=False)),
    }
    if text is not None:
        files["keys"] = ("json", write_keys)
    write_bundle(
        path,
        files,
        format_name=FORMAT_NAME,
        # integer ids: version 1, which older releases read too
        format_version=FORMAT_VERSION if keys is not None else 1,
        metadata=metadata,
    )


def load(path: str | Path, *, mmap: bool, verify: bool) -> Saved:
    """Read a saved index folder, refusing anything truncated, corrupt or malformed.

    Parameters
    ----------
    path : str or Path
        Folder written by `save`.
    mmap : bool
        Memory-map the FAISS file instead of reading it.
    verify : bool
        Check the SHA-256 of every file (sizes are always checked).

    Returns
    -------
    Saved
        The parts; the caller checks them against the settings they describe.

    Raises
    ------
    gpusimhash.io.bundle.BundleError
        Naming the missing, truncated, corrupt or malformed file.
    """
    metadata, paths = read_bundle(
        path, format_name=FORMAT_NAME, format_version=(1, FORMAT_VERSION), verify=verify
    )
    manifest = Path(path) / "manifest.json"
    check_keys(metadata, path)
    if set(paths) - {"keys"} != {"index", "tombstones"}:
        raise BundleError(
            f"{manifest}: lists {sorted(paths)}, expected index, tombstones (and keys)"
        )
    try:
        n_tombstones = count(metadata, "n_tombstones")
    except (KeyError, TypeError, ValueError) as error:
        raise BundleError(f"{manifest}: bad index metadata ({error})") from None
    index = _read_faiss(paths["index"], mmap)
    tombstones = _read_tombstones(paths["tombstones"], n_tombstones)
    keys = _read_keys(paths["keys"], index, tombstones) if "keys" in paths else None
    return Saved(metadata, manifest, paths["index"], paths["tombstones"], index, tombstones, keys)


def count(metadata: dict[str, Any], name: str) -> int:
    """Return a count the metadata holds: an int of at least 0, not a string, float or bool.

    Raises
    ------
    KeyError
        No such key.
    ValueError
        A value that is not such an int.
    """
    value = metadata[name]
    if type(value) is not int or value < 0:
        raise ValueError(f"{name} must be an integer of at least 0, got {value!r}")
    return value


def load_metadata(path: str | Path) -> tuple[dict[str, Any], Path]:
    """Read a saved index's settings and counts from its manifest, checking sizes only.

    Parameters
    ----------
    path : str or Path
        Folder written by `save`.

    Returns
    -------
    metadata : dict
        As saved.
    manifest : Path
        The manifest file, for messages.

    Raises
    ------
    gpusimhash.io.bundle.BundleError
        Not a readable index folder.
    """
    metadata, _ = read_bundle(
        path, format_name=FORMAT_NAME, format_version=(1, FORMAT_VERSION), verify=False
    )
    check_keys(metadata, path)
    return metadata, Path(path) / "manifest.json"


def check_keys(metadata: dict[str, Any], path: str | Path) -> None:
    """Refuse metadata keys this release does not know, unless listed as informative.

    Parameters
    ----------
    metadata : dict
        A saved index's metadata.
    path : str or Path
        Its folder, for messages.

    Raises
    ------
    gpusimhash.io.bundle.BundleError
        An unknown key (dotted inside the featurizer's configuration: ``featurizer.stem``),
        named with the release that wrote the index.
    """
    informative = metadata.get(INFORMATIVE, [])
    manifest = Path(path) / "manifest.json"
    if not isinstance(informative, list) or not all(isinstance(k, str) for k in informative):
        raise BundleError(f"{manifest}: metadata {INFORMATIVE!r} must be a list of key names")
    unknown = [k for k in metadata if k not in SETTINGS_KEYS | {INFORMATIVE}]
    featurizer = metadata.get("featurizer")
    if isinstance(featurizer, dict):
        unknown += [f"featurizer.{k}" for k in featurizer if k not in FEATURIZER_KEYS]
        frequencies = featurizer.get("document_frequencies")
        if isinstance(frequencies, dict):
            unknown += [
                f"featurizer.document_frequencies.{k}"
                for k in frequencies
                if k not in FREQUENCY_KEYS
            ]
    unknown = sorted(set(unknown) - set(informative))
    if unknown:
        from gpusimhash import __version__

        raise BundleError(
            f"{manifest}: metadata key {unknown[0]!r} is unknown to this release (gpusimhash "
            f"{__version__}); the index was written by {writer_of(path)}, and queries "
            "fingerprinted without that setting could be answered wrongly: load it with the "
            "release that wrote it"
        )


def _read_faiss(path: Path, mmap: bool) -> Any:
    """Read the FAISS file: an ``IndexBinaryIDMap``, else a BundleError naming the file."""
    try:
        loaded = faiss.read_index_binary(str(path), faiss.IO_FLAG_MMAP if mmap else 0)
    except (RuntimeError, MemoryError) as error:  # MemoryError: sizes no real index has
        message = (str(error).splitlines() or [type(error).__name__])[-1]
        raise BundleError(f"{path}: not a readable FAISS binary index ({message})") from None
    if not isinstance(loaded, faiss.IndexBinaryIDMap):
        raise BundleError(f"{path}: expected an IndexBinaryIDMap, got {type(loaded).__name__}")
    return loaded


def _read_tombstones(path: Path, n_tombstones: int) -> np.ndarray:
    """Read the tombstones: int64 of the manifest's count, else a BundleError."""
    try:
        # mapped first: a header that claims more entries than the file holds is refused
        # before anything is allocated
        mapped = np.load(path, mmap_mode="r", allow_pickle=False)
    except (ValueError, OSError) as error:
        raise BundleError(f"{path}: unreadable ({error})") from None
    if mapped.dtype != np.int64 or mapped.shape != (n_tombstones,):
        raise BundleError(
            f"{path}: expected int64 of shape ({n_tombstones},), got {mapped.dtype} {mapped.shape}"
        )
    return np.array(mapped)


def _read_keys(path: Path, loaded: Any, tombstones: np.ndarray) -> KeyMap:
    """Read a saved key map and check it against the FAISS ids it names."""
    try:
        keys = KeyMap.from_json(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, UnicodeDecodeError, RecursionError, ValueError, TypeError) as error:
        raise BundleError(f"{path}: not a key map ({error})") from None
    stored = faiss.vector_to_array(loaded.id_map).astype(np.int64, copy=False)
    live = np.sort(stored[~np.isin(stored, tombstones)])
    named = np.sort(keys.internal(keys.to_json()["keys"]))
    if not np.array_equal(live, named):
        raise BundleError(f"{path}: names {named.size} entries, the index holds {live.size}")
    return keys

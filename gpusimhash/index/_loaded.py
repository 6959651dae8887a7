"""A loaded index's FAISS contents checked against each other and against the manifest.

FAISS refuses a file whose sizes disagree, but reads without checking ids that repeat, fall
outside the index or name no entry, and settings that disagree with the manifest. Such a file,
with its checksums recomputed after the edit, would load and answer wrongly: searches that
find nothing or one id for every query, counts that disagree with `ids`. `check_loaded` and
`check_params` refuse it, naming the file. Ids that ascend, as `add` gives them, are read once;
others are sorted (0.06 s more per million entries on load, measured by hand).

A multi-hash index's hash tables are derived from its codes, and FAISS writes some wrongly: it
writes each key's count of ids in as many bits as an id, so a table of one code, or a key that
holds every code where their number is a power of two (two identical codes, say), loads with
codes filed under no key, and radius searches miss them. `hash_tables_fault` reads the tables
as saved and names what is wrong with them, and the index then rebuilds them from its codes.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import faiss
import numpy as np

from gpusimhash._cpu._hash_maps import FAULTS, map_fault
from gpusimhash.io.bundle import BundleError

__all__ = ["check_loaded", "check_params", "hash_tables_fault"]

# the FAISS file of a multi-hash index, as `faiss.write_index_binary` writes it: each part's
# four-character code, then a binary index's header (d, code_size, ntotal, is_trained,
# metric_type)
_HEADER = struct.Struct("<iiq?i")
_MULTI_HASH = (b"IBMp", b"IBHm", b"IBxF")  # the id map, the multi-hash index, its storage


def check_loaded(
    loaded: Any, inner: Any, kind: str, tombstones: np.ndarray, files: tuple[Path, Path]
) -> None:
    """Refuse ids that repeat or name nothing, and an inner index whose ids do.

    Parameters
    ----------
    loaded : faiss.IndexBinaryIDMap
        The index as read.
    inner : faiss.IndexBinary
        Its inner index, downcast, of the manifest's kind.
    kind : str
        The manifest's kind.
    tombstones : ndarray, dtype int64
        The tombstones as read.
    files : (Path, Path)
        The FAISS file and the tombstones' file, for messages.

    Raises
    ------
    gpusimhash.io.bundle.BundleError
        User ids (or internal ids of string keys) that are negative or repeat; tombstones that
        repeat, are unsorted or name no stored id, or any for a flat index (which removes in
        place); an IVF index whose lists do not hold each entry once (FAISS checks an HNSW
        graph's neighbours itself).
    """
    faiss_file, tombstones_file = files
    stored = faiss.vector_to_array(loaded.id_map).astype(np.int64, copy=False)
    ascending = stored.size < 2 or bool((stored[1:] > stored[:-1]).all())
    ordered = stored if ascending else np.sort(stored)  # ids added without ids ascend
    if ordered.size and ordered[0] < 0:
        raise BundleError(f"{faiss_file}: holds the negative id {int(ordered[0])}")
    if not ascending:  # ids that ascend are each once
        repeated = ordered[1:][ordered[1:] == ordered[:-1]]
        if repeated.size:
            raise BundleError(f"{faiss_file}: holds the id {int(repeated[0])} more than once")
    if tombstones.size:
        if kind == "flat":
            raise BundleError(f"{tombstones_file}: a flat index removes in place, none are kept")
        if (np.diff(tombstones) <= 0).any():
            raise BundleError(f"{tombstones_file}: tombstones must ascend, each once")
        missing = tombstones[~np.isin(tombstones, ordered, assume_unique=True)]
        if missing.size:
            raise BundleError(
                f"{tombstones_file}: tombstone {int(missing[0])} is not an id of the index"
            )
    if kind == "ivf":
        _check_lists(inner, faiss_file)


def check_params(inner: Any, kind: str, bits: int, params: dict[str, int], path: Path) -> None:
    """Refuse manifest settings that the FAISS file was not built with.

    Parameters
    ----------
    inner : faiss.IndexBinary
        The inner index as read, downcast, of the manifest's kind.
    kind : str
        The manifest's kind.
    bits : int
        Bits per code.
    params : dict
        The manifest's kind-specific settings (with their defaults).
    path : Path
        The FAISS file, for messages.

    Raises
    ------
    gpusimhash.io.bundle.BundleError
        ``nlist`` (IVF), ``m`` or ``ef_construction`` (HNSW), or ``hash_bits`` (multi-hash)
        other than the file's. Search-time settings (``nprobe``, ``ef_search``) are the
        manifest's, applied on load.
    """
    if kind == "multihash":
        hash_bits = min(params["hash_bits"], bits, 64)
        if (int(inner.b), int(inner.nhash)) != (hash_bits, bits // hash_bits):
            raise BundleError(
                f"{path}: built with {int(inner.nhash)} hash tables of {int(inner.b)} bits, "
                f"the manifest's hash_bits={params['hash_bits']} makes {bits // hash_bits} "
                f"of {hash_bits}"
            )
        return
    held = {}
    if kind == "ivf":
        held = {"nlist": int(inner.nlist)}
    elif kind == "hnsw":
        held = {"m": inner.hnsw.nb_neighbors(1), "ef_construction": inner.hnsw.efConstruction}
    for name, value in held.items():
        if int(value) != params[name]:
            raise BundleError(
                f"{path}: built with {name}={int(value)}, the manifest says {params[name]}"
            )


def _check_lists(inner: Any, path: Path) -> None:
    """Refuse IVF lists that do not hold every entry ``0 .. ntotal - 1`` once."""
    lists = inner.invlists
    n = int(inner.ntotal)
    held = [
        faiss.rev_swig_ptr(lists.get_ids(k), size).copy()
        for k in range(int(lists.nlist))
        if (size := int(lists.list_size(k)))
    ]
    ids = np.concatenate([np.zeros(0, np.int64), *held])
    if ids.size != n or (ids.size and (ids.min() < 0 or ids.max() >= n)):
        raise BundleError(f"{path}: its inverted lists do not name its {n} entries")
    if (np.bincount(ids, minlength=n) != 1).any():
        raise BundleError(f"{path}: its inverted lists do not name each of its entries once")


def hash_tables_fault(path: Path, inner: Any) -> str | None:
    """Return what is wrong with a multi-hash index's saved hash tables, or None if nothing.

    Each table must file every stored code once, under the key its bits make (as
    ``IndexBinaryMultiHash.add`` files them).

    Parameters
    ----------
    path : Path
        The FAISS file FAISS read ``inner`` from.
    inner : faiss.IndexBinaryMultiHash
        The index as read (its ``b`` and ``nhash``).

    Returns
    -------
    str or None
        The first fault, naming the table (and the id), or None.
    """
    raw = path.read_bytes()
    data = np.frombuffer(raw, dtype=np.uint8)
    at = 0
    try:
        for fourcc in _MULTI_HASH:
            if data[at : at + 4].tobytes() != fourcc:
                return f"not laid out as a multi-hash index's file (no {fourcc.decode()})"
            _, code_bytes, n, _, _ = _HEADER.unpack_from(raw, at + 4)
            at += 4 + _HEADER.size
        (size,) = struct.unpack_from("<Q", raw, at)
        codes = data[at + 8 : at + 8 + size].reshape(n, code_bytes)
        at += 8 + size
        b, nhash, _ = struct.unpack_from("<iii", raw, at)
        at += 12
        if (b, nhash) != (int(inner.b), int(inner.nhash)):
            return f"its tables are of {nhash} x {b} bits, FAISS read {inner.nhash} x {inner.b}"
        for table in range(nhash):
            id_bits, n_keys, length = struct.unpack_from("<iQQ", raw, at)
            at += 20
            fault, ident = map_fault(data[at : at + length], b, id_bits, n_keys, codes, table * b)
            at += length
            if FAULTS[fault] is not None:
                return f"hash table {table}: {FAULTS[fault]}" + (
                    f" (id {ident})" if ident >= 0 else ""
                )
    # a part shorter than its sizes say, or keys and ids of sizes no table has
    except (struct.error, ValueError) as error:
        return f"not laid out as a multi-hash index's file ({error})"
    return None

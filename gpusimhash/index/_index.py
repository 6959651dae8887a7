"""SimHashIndex: a FAISS binary index plus everything needed to use it again.

The index owns one FAISS binary index wrapped in ``IndexBinaryIDMap`` (user ids are int64) and
remembers the fingerprint settings (bits, seed, featurizer), so text added today and queries
asked tomorrow are fingerprinted the same way. Kinds:

``"flat"``
    ``IndexBinaryFlat``: exact kNN and radius search, brute force. Removal is FAISS's own
    ``remove_ids``, a full pass that shifts every later code (O(n) per call).
``"multihash"``
    ``IndexBinaryMultiHash`` (multi-index hashing): exact radius search well below a full scan;
    the number of flipped bits probed is set per query so that no pair within the radius is
    missed. kNN runs exactly on its flat storage. Removal: tombstones.
``"hnsw"``
    ``IndexBinaryHNSW``: approximate kNN for very large collections; radius search runs exactly
    on its flat storage. Removal: tombstones.
``"ivf"``
    ``IndexBinaryIVF``: approximate kNN and radius search probing ``nprobe`` of ``nlist``
    lists; trained on the first batch added. Removal: tombstones.

Tombstoned codes stay in the FAISS index and are filtered out of results (searches ask FAISS for
``k`` plus the number of tombstones); `SimHashIndex.compact` rebuilds without them.

With ``device="gpu"``, kNN searches of the exact kinds (flat, multihash) run as a tiled brute
force on the GPU (``gpusimhash._gpu.knn``) over a device copy of the stored codes, made at the
first search after a change, with FAISS flat's results: the same distances and ids, ties broken
by insertion order. Everything else, and what is saved, stays on the host.

Threads: one index may be shared. Searches (`SimHashIndex.search`, `range_search`, `ids`,
`save`) run concurrently; changes (`add`, `remove`, `compact`) take a readers-writer lock
exclusively, so a search sees the index before or after a change, never during one. Text is
fingerprinted before the lock is taken. Processes: `save` and `load` go through
``gpusimhash.io.bundle``: saves into one folder run one at a time, and a load sees the old or the
new index, never a mix.
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import Any

import faiss
import numpy as np

from gpusimhash import _backend, _segments, _validate
from gpusimhash._choices import KINDS
from gpusimhash._memory import check_result_size
from gpusimhash.fingerprinting import FingerprintSettings, fingerprint
from gpusimhash.index import _storage as storage
from gpusimhash.index._keys import KeyMap, check_keys
from gpusimhash.index._loaded import check_loaded, check_params, hash_tables_fault
from gpusimhash.index._lock import ReadWriteLock, reads, writes
from gpusimhash.index._results import RangeResult, SearchResult
from gpusimhash.io.bundle import BundleError, reading
from gpusimhash.join._radius import resolve_radius
from gpusimhash.text import TextFeaturizer

_LOGGER = logging.getLogger(__name__)
_DEFAULT_PARAMS: dict[str, dict[str, int]] = {
    "flat": {},
    "multihash": {"hash_bits": 16},
    "hnsw": {"m": 32, "ef_construction": 40, "ef_search": 64},
    "ivf": {"nlist": 256, "nprobe": 16},
}
# largest value of each parameter: FAISS takes C ints, and allocates per list or per link
_MAX_PARAMS = {
    "hash_bits": 2**31 - 1,  # used as min(hash_bits, bits, 64)
    "m": 1024,
    "ef_construction": 2**31 - 1,
    # FAISS's search holds a heap of ef_search entries per query thread (8 bytes each): 2**31
    # aborted the process; 2**20 takes 0.11 s for 50 queries of 500 codes, 2**24 2.06 s
    "ef_search": 2**20,
    "nlist": 2**20,
    "nprobe": 2**31 - 1,  # used as min(nprobe, nlist)
}
_MAX_EXACT_FLIPS = 2  # multihash radius queries needing more flips per table scan the storage
_GPU_KINDS = ("flat", "multihash")  # exact kNN: the GPU gives the same results


class SimHashIndex:
    """Search SimHash fingerprints by Hamming distance, keyed by user ids.

    Ids are int64 (FAISS's own ids), or, when the first ids added include a string, keys of any
    mix of str and int, kept in a map saved with the index (results then hold an object array
    of keys, ``None`` for no result).

    Parameters
    ----------
    bits : int
        Fingerprint length: a multiple of 8 in ``[8, 4096]`` (default 128, as the command line).
    kind : {"flat", "multihash", "hnsw", "ivf"}
        FAISS index to build (see the module documentation).
    seed : int
        Fingerprint seed, used when documents or text are added or searched.
    featurizer : TextFeaturizer, optional
        How text becomes features (default ``TextFeaturizer()``); stored with the index.
    device : {"cpu", "gpu", "auto"}
        Where kNN searches run: ``"gpu"`` (kinds ``"flat"`` and ``"multihash"``) searches a
        device copy of the codes, with the CPU's results; ``"auto"`` uses a GPU when one is
        usable and the kind is exact. Not saved: `load` takes it again.
    **params : int
        Kind-specific settings: ``hash_bits`` (multihash, bits per hash table, default 16);
        ``m``, ``ef_construction``, ``ef_search`` (hnsw: 32, 40, 64); ``nlist``, ``nprobe``
        (ivf: 256, 16).

    Raises
    ------
    ValueError
        Unknown kind, parameter or device, a bad value, or ``device="gpu"`` for an
        approximate kind.
    RuntimeError
        ``device="gpu"`` where no GPU is usable.

    Examples
    --------
    >>> index = SimHashIndex(bits=64)
    >>> index.add(["the cat sat on the mat", "a dog ran in the park"], ids=[10, 20]).tolist()
    [10, 20]
    >>> result = index.search(["The cat sat on the mat!"], k=1)
    >>> result.ids.tolist(), result.distances.tolist()
    ([[10]], [[0]])
    >>> len(index), index.remove([20]), len(index)
    (2, 1, 1)
    >>> named = SimHashIndex(bits=64)
    >>> named.add(["the cat sat on the mat"], ids=["doc-1"]).tolist()
    ['doc-1']
    >>> named.search(["the cat sat on the mat"], k=1).query(0)
    Hits(n=1, ids=['doc-1'], distances=[0])
    """

    def __init__(
        self,
        bits: int = 128,
        *,
        kind: str = "flat",
        seed: int = 0,
        featurizer: TextFeaturizer | None = None,
        device: str = "cpu",
        **params: int,
    ) -> None:
        self._bits = _validate.bits(bits)
        self._seed = _validate.seed(seed)
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
        self._kind = kind
        unknown = set(params) - set(_DEFAULT_PARAMS[kind])
        if unknown:
            raise ValueError(
                f"unknown parameter(s) {sorted(unknown)} for kind {kind!r}; "
                f"expected some of {sorted(_DEFAULT_PARAMS[kind])}"
            )
        self._params = {**_DEFAULT_PARAMS[kind], **params}
        for name, value in self._params.items():
            if _validate.positive_integer(value, name) > _MAX_PARAMS[name]:
                raise ValueError(f"{name} must be in [1, {_MAX_PARAMS[name]}], got {value}")
        self._featurizer = TextFeaturizer() if featurizer is None else featurizer
        if not isinstance(self._featurizer, TextFeaturizer):
            raise TypeError(f"featurizer must be a TextFeaturizer, got {type(featurizer).__name__}")
        self._index = faiss.IndexBinaryIDMap(self._new_inner())
        self._tombstones = np.empty(0, dtype=np.int64)
        self._keys: KeyMap | None = None  # string ids: keys to the internal int64 ids
        self._read_only = False
        self._apply_search_params()
        self._device = self._resolve_device(device)
        self._device_codes: Any = None  # the stored codes on the GPU, None after a change
        self._lock = ReadWriteLock()
        self._nflip = threading.Lock()  # multihash range search sets the shared nflip per call

    # ------------------------------------------------------------------ properties
    @property
    def faiss_index(self) -> Any:
        """The wrapped ``faiss.IndexBinaryIDMap`` (read-only attribute)."""
        return self._index

    @property
    def bits(self) -> int:
        """Fingerprint length in bits."""
        return self._bits

    @property
    def seed(self) -> int:
        """Fingerprint seed."""
        return self._seed

    @property
    def kind(self) -> str:
        """Index kind: ``"flat"``, ``"multihash"``, ``"hnsw"`` or ``"ivf"``."""
        return self._kind

    @property
    def params(self) -> dict[str, int]:
        """Kind-specific settings (a copy)."""
        return dict(self._params)

    @property
    def featurizer(self) -> TextFeaturizer:
        """The featurizer applied to text."""
        return self._featurizer

    @property
    def settings(self) -> FingerprintSettings:
        """How the index fingerprints: its bits, seed and featurizer.

        Examples
        --------
        >>> SimHashIndex(bits=64, seed=3).settings.bits
        64
        """
        return FingerprintSettings(bits=self._bits, seed=self._seed, featurizer=self._featurizer)

    @staticmethod
    def load_settings(path: str | Path) -> FingerprintSettings:
        """Read how a saved index fingerprints, from its manifest only (no file is parsed).

        Parameters
        ----------
        path : str or Path
            Folder written by `save`.

        Returns
        -------
        FingerprintSettings

        Raises
        ------
        gpusimhash.io.bundle.BundleError
            Not a readable index folder, or settings this release cannot read.

        Examples
        --------
        >>> import tempfile
        >>> folder = tempfile.mkdtemp()
        >>> SimHashIndex(bits=64, seed=3).save(folder)
        >>> SimHashIndex.load_settings(folder).seed
        3
        """
        metadata, manifest = storage.load_metadata(path)
        try:
            return FingerprintSettings(
                bits=metadata["bits"],
                seed=metadata["seed"],
                featurizer=TextFeaturizer.from_config(metadata["featurizer"]),
            )
        except (KeyError, TypeError, ValueError, OverflowError) as error:
            raise BundleError(f"{manifest}: bad index metadata ({error})") from None

    @property
    def device(self) -> str:
        """Where kNN searches run: ``"cpu"`` or ``"gpu"``."""
        return self._device

    def _resolve_device(self, device: str) -> str:
        device = _validate.device(device)
        if device == "auto":
            if self._kind not in _GPU_KINDS or not _backend.gpu_available():
                return "cpu"
            from gpusimhash._gpu import probe

            return "gpu" if probe.trusted(("knn",)) else "cpu"
        if device == "gpu":
            if self._kind not in _GPU_KINDS:
                raise ValueError(
                    f"device='gpu' searches exactly, as kinds {_GPU_KINDS} do; "
                    f"kind {self._kind!r} is approximate"
                )
            from gpusimhash._gpu import probe

            probe.require(("knn",))
        return device

    @property
    def n_tombstones(self) -> int:
        """Removed ids whose codes still sit in the FAISS index (see `compact`)."""
        return int(self._tombstones.size)

    @reads
    def __len__(self) -> int:
        """Return the number of live (not removed) entries."""
        return int(self._index.ntotal) - self.n_tombstones

    @property
    def id_type(self) -> str:
        """``"int64"``, or ``"key"`` for an index whose ids are strings (or a mix with ints)."""
        return "int64" if self._keys is None else "key"

    def __repr__(self) -> str:
        """Show kind, size and fingerprint settings."""
        return (
            f"SimHashIndex(bits={self._bits}, kind={self._kind!r}, seed={self._seed}, "
            f"n={len(self)}, tombstones={self.n_tombstones}, id_type={self.id_type!r})"
        )

    @reads
    def ids(self) -> np.ndarray:
        """Live ids in insertion order.

        Returns
        -------
        ndarray, shape (len(self),)
            int64, or objects (str or int keys) for an index with string ids.
        """
        stored = self._stored_ids()
        return self._external(stored[~np.isin(stored, self._tombstones)])

    def _external(self, internal: np.ndarray) -> np.ndarray:
        """User ids of FAISS ids (-1 stays -1, or becomes None for keys)."""
        return internal if self._keys is None else self._keys.external(internal)

    @writes
    def codes_of(self, ids: Any) -> np.ndarray:
        """Return the stored codes of entries, by id: search with them to query by id.

        Parameters
        ----------
        ids : sequence of int or str
            Live ids of this index.

        Returns
        -------
        ndarray, shape (len(ids), bits // 8), dtype uint8
            In the order given.

        Raises
        ------
        KeyError
            An id that is not in the index (or was removed).
        TypeError
            An id of the wrong type.

        Examples
        --------
        >>> index = SimHashIndex(bits=64)
        >>> _ = index.add(["a b c", "a b c d", "x y z"], ids=["p", "q", "r"])
        >>> index.search(index.codes_of(["p"]), k=2).query(0).ids.tolist()
        ['p', 'q']
        """
        if self._keys is None:
            wanted = np.atleast_1d(np.asarray(ids))
            if wanted.dtype.kind not in "iu":
                raise TypeError(f"ids must be integers, got dtype {wanted.dtype}")
            wanted = wanted.astype(np.int64)
        else:
            keys = check_keys(ids)
            absent = self._keys.missing(keys)
            if absent:
                raise KeyError(f"id {absent[0]!r} is not in the index")
            wanted = self._keys.internal(keys)
        stored = self._stored_ids()
        order = np.argsort(stored, kind="stable")
        at = np.searchsorted(stored[order], wanted).clip(0, max(stored.size - 1, 0))
        positions = order[at] if stored.size else at
        live = (stored[positions] == wanted) if stored.size else np.zeros(wanted.size, bool)
        live &= ~np.isin(wanted, self._tombstones)
        if not live.all():
            raise KeyError(f"id {self._external(wanted[~live])[0]!r} is not in the index")
        return self._stored_codes()[positions]

    # ------------------------------------------------------------------ building
    def _new_inner(self) -> Any:
        p, bits = self._params, self._bits
        if self._kind == "flat":
            return faiss.IndexBinaryFlat(bits)
        if self._kind == "multihash":
            hash_bits = min(p["hash_bits"], bits, 64)
            return faiss.IndexBinaryMultiHash(bits, bits // hash_bits, hash_bits)
        if self._kind == "hnsw":
            inner = faiss.IndexBinaryHNSW(bits, p["m"])
            inner.hnsw.efConstruction = p["ef_construction"]
            return inner
        self._quantizer = faiss.IndexBinaryFlat(bits)
        return faiss.IndexBinaryIVF(self._quantizer, bits, p["nlist"])

    def _inner(self) -> Any:
        return faiss.downcast_IndexBinary(self._index.index)

    def _apply_search_params(self) -> None:
        inner = self._inner()
        if self._kind == "hnsw":
            inner.hnsw.efSearch = self._params["ef_search"]
        elif self._kind == "ivf":
            inner.nprobe = min(self._params["nprobe"], self._params["nlist"])

    def _check_writable(self) -> None:
        if self._read_only:
            raise RuntimeError("this index was loaded with mmap=True and is read-only")

    def _stored_ids(self) -> np.ndarray:
        return faiss.vector_to_array(self._index.id_map).astype(np.int64, copy=False)

    def to_codes(self, data: Any, *, vocabulary: Any = None, name: str = "data") -> np.ndarray:
        """Fingerprint documents or text with the stored settings, or check packed codes.

        Parameters
        ----------
        data : ndarray of uint8, shape (n, bits // 8), or documents
            Packed codes are checked and returned; anything else goes through
            `gpusimhash.fingerprinting` with this index's bits, seed and featurizer.
        vocabulary : sequence of str, optional
            Column features, for a scipy sparse matrix.
        name : str
            Argument name, for error messages.

        Returns
        -------
        ndarray, shape (n, bits // 8), dtype uint8

        Raises
        ------
        TypeError
            Codes that are not uint8, or documents of the wrong kind.
        ValueError
            Codes of the wrong width.
        """
        if isinstance(data, np.ndarray) and data.dtype.kind not in "OU":
            codes = _validate.codes(data, name)
            if codes.shape[1] * 8 != self._bits:
                raise ValueError(
                    f"{name} must have {self._bits // 8} bytes per code ({self._bits} bits), "
                    f"got {codes.shape[1]} (codes of {codes.shape[1] * 8} bits need an index "
                    f"made with bits={codes.shape[1] * 8})"
                )
            return codes
        return fingerprint(
            data,
            bits=self._bits,
            seed=self._seed,
            vocabulary=vocabulary,
            featurizer=self._featurizer,
        )

    def add(self, data: Any, ids: Any = None, *, vocabulary: Any = None) -> np.ndarray:
        """Add documents, text or packed codes.

        Parameters
        ----------
        data : ndarray of uint8, shape (n, bits // 8), or documents
            See `to_codes`.
        ids : sequence of int or str, shape (n,), optional
            Unique ids not already in the index: int64, or, for an index whose first ids
            included a string, any str or int keys; default (int64 ids only): consecutive ids
            after the largest ever stored (starting at 0).
        vocabulary : sequence of str, optional
            Column features, for a scipy sparse matrix.

        Returns
        -------
        ids : ndarray, shape (n,)
            The ids given to the new entries (int64, or objects: keys).

        Raises
        ------
        TypeError
            Bad codes or documents; an id neither str nor int; a string id for an index that
            holds integer ids.
        ValueError
            Codes of the wrong width; ids of the wrong length, repeated, negative, already
            present or still tombstoned; too few codes to train an IVF index.
        RuntimeError
            The index was loaded read-only (``mmap=True``).
        """
        self._check_writable()
        try:
            codes = self.to_codes(data, vocabulary=vocabulary)
        except ValueError as error:  # codes of the wrong width: say too if they cannot train
            raise ValueError(f"{error}{self._too_few_to_train(data)}") from None
        return self._add_codes(codes, ids)

    @writes
    def _add_codes(self, codes: np.ndarray, ids: Any) -> np.ndarray:
        n = codes.shape[0]
        stored = self._stored_ids()
        if self._keys is None and ids is not None and self._wants_keys(ids, stored):
            self._keys = KeyMap()
        if self._keys is not None:
            if ids is None:
                raise ValueError("this index has string ids: give ids")
            keys = check_keys(ids, n)
            if n == 0:
                return np.empty(0, dtype=object)
            self._train_if_needed(codes)
            internal = self._keys.assign(keys)
            self._index.add_with_ids(codes, internal)
            self._device_codes = None
            return self._keys.external(internal)
        if ids is None:
            start = int(stored.max()) + 1 if stored.size else 0
            ids = np.arange(start, start + n, dtype=np.int64)
        else:
            ids = self._check_new_ids(ids, n, stored)
        if n == 0:
            return ids
        self._train_if_needed(codes)
        self._index.add_with_ids(codes, ids)
        self._device_codes = None
        return ids

    def _wants_keys(self, ids: Any, stored: np.ndarray) -> bool:
        """Whether new ids hold a string: keys from now on (only for an empty index)."""
        if isinstance(ids, np.ndarray) and ids.dtype.kind in "iu":
            return False
        strings = any(isinstance(i, str | np.str_) for i in np.asarray(ids, dtype=object).ravel())
        if strings and (stored.size or self.n_tombstones):
            raise TypeError(
                "this index holds integer ids; string ids need an index that starts with them"
            )
        return strings

    def _train_if_needed(self, codes: np.ndarray) -> None:
        if not self._inner().is_trained:
            if codes.shape[0] < self._params["nlist"]:
                raise ValueError(self._training_needs(codes.shape[0]))
            self._inner().train(codes)

    def _training_needs(self, n: int) -> str:
        """Say that an IVF index's first batch of ``n`` codes is too small to train it."""
        nlist = self._params["nlist"]
        return (
            f"an IVF index with nlist={nlist} is trained on its first batch, which needs at "
            f"least {nlist} codes, got {n} (a smaller nlist trains on fewer)"
        )

    def _too_few_to_train(self, data: Any) -> str:
        """Return '; and <why>' when ``data`` is an untrained IVF index's too small first batch."""
        if self._kind != "ivf" or self._inner().is_trained or not isinstance(data, np.ndarray):
            return ""
        n = data.shape[0] if data.ndim == 2 else 1
        return f"; and {self._training_needs(n)}" if n < self._params["nlist"] else ""

    def _check_new_ids(self, ids: Any, n: int, stored: np.ndarray) -> np.ndarray:
        array = np.asarray(ids)
        if array.dtype.kind not in "iu":
            raise TypeError(f"ids must be integers, got dtype {array.dtype}")
        if array.shape != (n,):
            raise ValueError(f"ids must have shape ({n},), got {array.shape}")
        if array.size and (array.min() < 0 or array.max() > np.iinfo(np.int64).max):
            raise ValueError("ids must be in [0, 2**63)")
        array = array.astype(np.int64)
        unique, counts = np.unique(array, return_counts=True)
        if (counts > 1).any():
            raise ValueError(f"ids must be unique, id {int(unique[counts > 1][0])} repeats")
        clash = stored[np.isin(stored, array)]
        if clash.size:
            first = int(clash.min())
            if np.isin(first, self._tombstones):
                raise ValueError(f"id {first} was removed but is still tombstoned; compact() first")
            raise ValueError(f"id {first} is already in the index")
        return array

    @writes
    def remove(self, ids: Any) -> int:
        """Remove entries by id; unknown ids are ignored.

        Flat indexes remove in place (one pass over all codes per call); the other kinds mark
        the ids as tombstones, filtered out of every result until `compact`.

        Parameters
        ----------
        ids : sequence of int (or str, for an index with string ids)
            Ids to remove.

        Returns
        -------
        int
            Number of entries removed.

        Raises
        ------
        TypeError
            Ids of the wrong type.
        RuntimeError
            The index was loaded read-only (``mmap=True``).
        """
        self._check_writable()
        if self._keys is not None:
            internal = self._keys.remove(check_keys(np.atleast_1d(np.asarray(ids, dtype=object))))
        else:
            array = np.atleast_1d(np.asarray(ids))
            if array.dtype.kind not in "iu":
                raise TypeError(f"ids must be integers, got dtype {array.dtype}")
            internal = array.astype(np.int64)
        stored = self._stored_ids()
        live = np.unique(stored[np.isin(stored, internal)])
        live = live[~np.isin(live, self._tombstones)]
        if self._kind == "flat":
            self._device_codes = None
            return int(
                self._index.remove_ids(faiss.IDSelectorBatch(live.size, faiss.swig_ptr(live)))
            )
        self._tombstones = np.union1d(self._tombstones, live)
        return int(live.size)

    @writes
    def compact(self) -> None:
        """Rebuild the FAISS index without tombstoned entries (ids and order are kept).

        Raises
        ------
        RuntimeError
            The index was loaded read-only (``mmap=True``).
        """
        self._check_writable()
        if not self.n_tombstones:
            return
        stored = self._stored_ids()
        keep = ~np.isin(stored, self._tombstones)
        codes = self._stored_codes()[keep]
        inner = self._inner()
        fresh = self._new_inner()
        if self._kind == "ivf":
            # Keep the trained centroids: copy the coarse quantizer's codes.
            centroids = faiss.downcast_IndexBinary(inner.quantizer)
            self._quantizer.add(centroids.reconstruct_n(0, centroids.ntotal))
            fresh.is_trained = True
        self._index = faiss.IndexBinaryIDMap(fresh)
        self._tombstones = np.empty(0, dtype=np.int64)
        self._device_codes = None
        self._apply_search_params()
        if codes.shape[0]:
            self._index.add_with_ids(codes, stored[keep])

    def _stored_codes(self) -> np.ndarray:
        """Every code in the FAISS index, in insertion order (tombstoned ones included)."""
        inner = self._inner()
        n = int(inner.ntotal)
        if self._kind == "ivf":
            inner.make_direct_map()
            codes = inner.reconstruct_n(0, n)
        else:
            storage = inner if self._kind == "flat" else faiss.downcast_IndexBinary(inner.storage)
            codes = storage.reconstruct_n(0, n)
        return np.ascontiguousarray(codes, dtype=np.uint8).reshape(n, self._bits // 8)

    # ------------------------------------------------------------------ searching
    def search(self, queries: Any, k: int = 10, *, vocabulary: Any = None) -> SearchResult:
        """Find the `k` nearest stored codes of each query.

        Exact for ``"flat"`` and ``"multihash"``; approximate for ``"hnsw"`` and ``"ivf"``. On
        the GPU (``device``), the same results as on the CPU.

        Parameters
        ----------
        queries : ndarray of uint8, shape (n_queries, bits // 8), or documents
            See `to_codes`.
        k : int
            Neighbours per query, at least 1.
        vocabulary : sequence of str, optional
            Column features, for a scipy sparse matrix.

        Returns
        -------
        SearchResult
            ``(distances, ids, estimated_cosines)``, each of shape ``(n_queries, k)``; ``-1`` (or
            ``None``, string ids) where fewer than `k` entries exist.

        Raises
        ------
        TypeError, ValueError
            Bad queries (see `to_codes`) or a bad `k`: below 1, or so large that the padded
            result cannot fit in memory.
        """
        k = _validate.positive_integer(k, "k")
        codes = self.to_codes(queries, vocabulary=vocabulary, name="queries")
        check_result_size(codes.shape[0], k)
        return self._search_codes(codes, k)

    @reads
    def _search_codes(self, codes: np.ndarray, k: int) -> SearchResult:
        n_queries = codes.shape[0]
        ask = min(k + self.n_tombstones, int(self._index.ntotal))
        if ask == 0 or n_queries == 0:
            distances = np.full((n_queries, k), -1, dtype=np.int32)
            return self._result(distances, self._external(np.full((n_queries, k), -1, np.int64)))
        if self._device == "gpu":
            distances, positions = self._gpu_search(codes, ask)
            ids = np.where(positions >= 0, self._stored_ids()[positions], -1)
        elif self._kind == "multihash":
            storage = faiss.downcast_IndexBinary(self._inner().storage)
            distances, positions = storage.search(codes, ask)
            ids = np.where(positions >= 0, self._stored_ids()[positions], -1)
        else:
            distances, ids = self._index.search(codes, ask)
        found = ids >= 0
        if self.n_tombstones:
            found &= ~np.isin(ids, self._tombstones)
        order = np.argsort(~found, axis=1, kind="stable")[:, :k]
        distances = np.take_along_axis(distances, order, axis=1)
        ids = np.take_along_axis(ids, order, axis=1)
        found = np.take_along_axis(found, order, axis=1)
        if ask < k:
            pad = ((0, 0), (0, k - ask))
            distances, ids = np.pad(distances, pad), np.pad(ids, pad)
            found = np.pad(found, pad)
        distances = np.where(found, distances, -1).astype(np.int32, copy=False)
        ids = np.where(found, ids, -1).astype(np.int64, copy=False)
        return self._result(distances, self._external(ids))

    def _gpu_search(self, codes: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Distances and positions of the k nearest stored codes, on the GPU."""
        from gpusimhash._gpu import join as gpu_join
        from gpusimhash._gpu import knn as gpu_knn

        if self._device_codes is None:
            self._device_codes = gpu_join.device_codes(self._stored_codes(), "stored codes")
        return gpu_knn.knn(self._device_codes, codes, k)

    def _result(self, distances: np.ndarray, ids: np.ndarray) -> SearchResult:
        cosines = np.where(distances >= 0, np.cos(np.pi * distances / self._bits), np.nan)
        return SearchResult(distances, ids, cosines)

    def range_search(
        self,
        queries: Any,
        *,
        max_distance: int | None = None,
        min_cosine: float | None = None,
        vocabulary: Any = None,
    ) -> RangeResult:
        """Find every stored code within a Hamming radius of each query.

        Exact for ``"flat"``, ``"multihash"`` and ``"hnsw"`` (which scans its flat storage);
        approximate for ``"ivf"``.

        Parameters
        ----------
        queries : ndarray of uint8, shape (n_queries, bits // 8), or documents
            See `to_codes`.
        max_distance : int, optional
            Largest Hamming distance returned.
        min_cosine : float, optional
            Alternatively, smallest estimated cosine returned (see
            `gpusimhash.cosine_radius`). Give exactly one.
        vocabulary : sequence of str, optional
            Column features, for a scipy sparse matrix.

        Returns
        -------
        RangeResult
            ``(lims, distances, ids, estimated_cosines)``; each query's results sorted by
            distance, then id (int64 ids) or insertion order (string ids).

        Raises
        ------
        TypeError, ValueError
            Bad queries or thresholds.
        """
        radius = resolve_radius(self._bits, max_distance=max_distance, min_cosine=min_cosine)
        codes = self.to_codes(queries, vocabulary=vocabulary, name="queries")
        return self._range_codes(codes, radius)

    @reads
    def _range_codes(self, codes: np.ndarray, radius: int) -> RangeResult:
        lims, distances, ids = self._faiss_range(codes, radius)
        lims = lims.astype(np.int64)
        query = _segments.segment_of(np.diff(lims))
        keep = distances <= radius
        if self.n_tombstones:
            keep &= ~np.isin(ids, self._tombstones)
        query, distances, ids = query[keep], distances[keep].astype(np.int32), ids[keep]
        order = np.lexsort((ids, distances, query))
        query, distances, ids = query[order], distances[order], ids[order]
        lims = np.searchsorted(query, np.arange(codes.shape[0] + 1)).astype(np.int64)
        cosines = np.cos(np.pi * distances / self._bits)
        return RangeResult(lims, distances, self._external(ids.astype(np.int64)), cosines)

    def _faiss_range(self, codes: np.ndarray, radius: int) -> tuple[Any, Any, Any]:
        """FAISS range search for distances <= radius (FAISS keeps distances < its radius)."""
        if self._index.ntotal == 0:
            return np.zeros(codes.shape[0] + 1, dtype=np.int64), np.empty(0), np.empty(0, np.int64)
        inner = self._inner()
        if self._kind == "multihash":
            # Tables are disjoint hash_bits blocks: a pair within the radius differs by at most
            # floor(radius / nhash) bits in some block, so probing that many flips is exact.
            flips = radius // inner.nhash
            if flips <= _MAX_EXACT_FLIPS:
                with self._nflip:
                    inner.nflip = flips
                    return self._index.range_search(codes, radius + 1)
        if self._kind in ("multihash", "hnsw"):
            storage = faiss.downcast_IndexBinary(inner.storage)
            lims, distances, positions = storage.range_search(codes, radius + 1)
            return lims, distances, self._stored_ids()[positions]
        return self._index.range_search(codes, radius + 1)

    # ------------------------------------------------------------------ persistence
    @reads
    def save(self, path: str | Path) -> None:
        """Save to a directory, atomically replacing any index saved there before.

        Writes FAISS's own binary index file, the tombstones as ``.npy``, string ids as JSON
        (``keys``) and ``manifest.json`` (format version, settings, featurizer configuration,
        counts, SHA-256 of every file). Format version 2 is an index with string ids; one
        with int64 ids is saved as version 1, which older releases read too.
        A crash or error mid-save leaves the previous index loadable.

        Parameters
        ----------
        path : str or Path
            Directory (created if missing).

        Raises
        ------
        OSError
            The directory cannot be written.
        """
        metadata = {
            "kind": self._kind,
            "bits": self._bits,
            "seed": self._seed,
            "params": self._params,
            "featurizer": self._featurizer.to_config(),
            "ntotal": int(self._index.ntotal),
            "n_tombstones": self.n_tombstones,
        }
        start = time.perf_counter()
        storage.save(
            path,
            metadata=metadata,
            index=self._index,
            tombstones=self._tombstones,
            keys=self._keys,
        )
        _LOGGER.info(
            "saved %s: %d entries (%.3f s)", path, metadata["ntotal"], time.perf_counter() - start
        )

    @classmethod
    def load(
        cls, path: str | Path, *, mmap: bool = False, verify: bool = True, device: str = "cpu"
    ) -> SimHashIndex:
        """Load an index saved with `save`, refusing anything truncated, corrupt or mismatched.

        Parameters
        ----------
        path : str or Path
            Directory written by `save`.
        mmap : bool
            Memory-map the FAISS file instead of reading it (FAISS supports this for the flat
            storage); the index is then read-only.
        verify : bool
            Check the SHA-256 of every file (reads them once). Sizes are always checked.
        device : {"cpu", "gpu", "auto"}
            Where kNN searches run (see `SimHashIndex`).

        Returns
        -------
        SimHashIndex

        Raises
        ------
        gpusimhash.io.bundle.BundleError
            (a ValueError) naming the missing, truncated, corrupt, mismatched or malformed file
            (the manifest's checksum detects corruption, not deliberate tampering).
        ValueError, RuntimeError
            A bad `device`, as for `SimHashIndex`.

        Examples
        --------
        >>> import tempfile
        >>> index = SimHashIndex(bits=64)
        >>> _ = index.add(["one fish two fish", "red fish blue fish"])
        >>> folder = tempfile.mkdtemp()
        >>> index.save(folder)
        >>> SimHashIndex.load(folder).ids().tolist()
        [0, 1]
        """
        start = time.perf_counter()
        with reading(path):  # no concurrent save deletes the files before they are parsed
            index = cls._load(path, mmap=mmap, verify=verify, device=device)
        _LOGGER.info(
            "loaded %s: %d entries, %d bits, kind %s, %s ids (%.3f s)",
            path,
            len(index),
            index.bits,
            index.kind,
            index.id_type,
            time.perf_counter() - start,
        )
        return index

    @classmethod
    def _load(cls, path: str | Path, *, mmap: bool, verify: bool, device: str) -> SimHashIndex:
        saved = storage.load(path, mmap=mmap, verify=verify)
        metadata, loaded = saved.metadata, saved.index
        try:
            index = cls(
                metadata["bits"],
                kind=metadata["kind"],
                seed=metadata["seed"],
                featurizer=TextFeaturizer.from_config(metadata["featurizer"]),
                **metadata["params"],
            )
            ntotal = storage.count(metadata, "ntotal")
        except (KeyError, TypeError, ValueError, OverflowError) as error:
            raise BundleError(f"{saved.manifest}: bad index metadata ({error})") from None
        faiss_path = saved.index_file
        if loaded.d != index.bits or loaded.ntotal != ntotal:
            raise BundleError(
                f"{faiss_path}: holds {loaded.ntotal} codes of {loaded.d} bits, the manifest "
                f"says {ntotal} codes of {index.bits} bits"
            )
        expected_inner = type(index._inner()).__name__
        inner = faiss.downcast_IndexBinary(loaded.index)
        if type(inner).__name__ != expected_inner:
            raise BundleError(f"{faiss_path}: not a {expected_inner} (kind {index.kind!r})")
        check_params(inner, index.kind, index.bits, index._params, faiss_path)
        check_loaded(
            loaded, inner, index.kind, saved.tombstones, (faiss_path, saved.tombstones_file)
        )
        fault = hash_tables_fault(faiss_path, inner) if index.kind == "multihash" else None
        if fault is None:
            index._index = loaded
        else:  # derived from the codes: filed again, into the index's own empty tables
            _LOGGER.info("%s: %s; its hash tables are rebuilt from its codes", faiss_path, fault)
            multi_hash: Any = inner
            flat: Any = faiss.downcast_IndexBinary(multi_hash.storage)
            codes = faiss.vector_to_array(flat.xb)
            stored = faiss.vector_to_array(loaded.id_map).astype(np.int64, copy=False)
            index._index.add_with_ids(codes.reshape(int(loaded.ntotal), -1), stored)
        index._tombstones = saved.tombstones
        index._keys = saved.keys
        index._read_only = mmap
        index._device = index._resolve_device(device)
        if index.kind == "ivf":
            index._quantizer = faiss.downcast_IndexBinary(index._inner().quantizer)  # type: ignore[assignment]
        index._apply_search_params()
        return index

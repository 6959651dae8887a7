"""Deduplicate a new batch against a saved index: ``gpusimhash dedup new.jsonl --against DIR``.

A `SimHashIndex` keeps codes, not texts, so a new document is matched against the indexed ones
by its fingerprint only, as dedup's ``--no-verify`` does: it matches when an indexed code lies
within `index_radius` (the estimated cosine of the threshold; dedup's exact verification needs
both documents' features, which the index does not hold). Short texts give noisy codes: at
128 bits, "a quiet library in the north of the city lends tools and books" lies 25 bits from
"the river flooded the old mill after three days of heavy rain in the valley" (true cosine
0.45; radius 26 for 0.8), at 256 bits 67 bits away (radius 52). Index at 256 bits or more.
Each kept code is searched in the index (FAISS: exhaustive for kinds flat and multihash at
dedup's radii), so the cost grows with the batch's clusters times the index's entries. With an
id field, the ids of the removed documents take one more read of the input. The new batch is first deduplicated within itself as usual; then every
cluster whose kept document matches an indexed entry is removed whole, its members being
near-duplicates of that kept document. The documents still kept can be added to the index
(`add_kept`), which is how a corpus grows batch by batch without repeats.

The batch is fingerprinted with the index's settings (`SimHashIndex.settings`), whatever the
command line says, so that codes are comparable. `Against` is what a dedup run holds: the
index, opened before the first pass (a bad folder fails at once), then `Against.remove_indexed`
after clustering, `Against.write` (``in_index.<format>``: one record per removed cluster) and,
with ``add_kept``, `Against.add` once the kept documents are written.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from gpusimhash.fingerprinting import FingerprintSettings
from gpusimhash.index._index import SimHashIndex
from gpusimhash.join._radius import cosine_radius

__all__ = [
    "Against",
    "IndexMatches",
    "add_kept",
    "index_radius",
    "match_clusters",
]


def index_radius(bits: int, measure: str, value: float) -> int:
    """Return the Hamming radius within which a new document matches an indexed one.

    Parameters
    ----------
    bits : int
        Code length.
    measure : {"cosine", "jaccard"}
        The threshold's similarity (dedup's ``Threshold.measure``).
    value : float
        The threshold: the estimated cosine must reach it (for Jaccard, its cosine bound
        ``2 J / (1 + J)``, as dedup searches).

    Returns
    -------
    int

    Examples
    --------
    >>> index_radius(256, "cosine", 0.8), index_radius(256, "jaccard", 0.5)
    (52, 68)
    """
    cosine = 2 * value / (1 + value) if measure == "jaccard" else value
    return cosine_radius(bits, cosine)


@dataclass(frozen=True)
class IndexMatches:
    """The indexed entry nearest to each cluster's kept document, where within the radius.

    Attributes
    ----------
    matched : ndarray, shape (n_clusters,), dtype bool
        Whether the cluster's kept document lies within the radius of an indexed code.
    ids : ndarray, shape (n_clusters,)
        The nearest indexed id (the index's ids: int64 with ``-1``, or objects with ``None``,
        where unmatched).
    distances : ndarray, shape (n_clusters,), dtype int32
        Its Hamming distance (``-1`` where unmatched).
    """

    matched: np.ndarray
    ids: np.ndarray
    distances: np.ndarray

    def kept(self, labels: np.ndarray, kept: np.ndarray) -> np.ndarray:
        """Return the documents still kept: those kept whose cluster matched nothing indexed.

        Parameters
        ----------
        labels : ndarray, shape (n,), dtype int64
            Cluster of every document, ``0 .. n_clusters - 1``.
        kept : ndarray, shape (n,), dtype bool
            The documents kept within the batch.

        Returns
        -------
        ndarray, shape (n,), dtype bool
        """
        return kept & ~self.matched[labels]


def match_clusters(
    index: SimHashIndex, codes: np.ndarray, kept_rows: np.ndarray, radius: int
) -> IndexMatches:
    """Find, for each cluster's kept document, the nearest indexed code within the radius.

    Parameters
    ----------
    index : SimHashIndex
        The saved index (exact kinds give exact answers; ``hnsw`` and ``ivf`` may miss).
    codes : ndarray, shape (n, bits // 8), dtype uint8
        The batch's codes, fingerprinted with `SimHashIndex.settings`.
    kept_rows : ndarray, shape (n_clusters,), dtype int64
        The kept document of every cluster.
    radius : int
        As `index_radius`.

    Returns
    -------
    IndexMatches

    Raises
    ------
    ValueError
        Codes of another length than the index's.

    Examples
    --------
    >>> index = SimHashIndex(bits=64)
    >>> _ = index.add(["the cat sat on the mat"], ids=["old-1"])
    >>> batch = index.to_codes(["The cat sat on the mat!", "a dog ran in the park"])
    >>> found = match_clusters(index, batch, np.array([0, 1]), radius=3)
    >>> found.matched.tolist(), found.ids.tolist()
    ([True, False], ['old-1', None])
    >>> found.kept(np.array([0, 1]), np.array([True, True])).tolist()
    [False, True]
    """
    queries = index.to_codes(np.ascontiguousarray(codes)[kept_rows], name="codes")
    if len(index) == 0 or queries.shape[0] == 0:
        none = index.search(queries, k=1)  # the index's own "no result" ids
        return IndexMatches(np.zeros(queries.shape[0], bool), none.ids[:, 0], none.distances[:, 0])
    nearest = index.search(queries, k=1)
    distances, ids = nearest.distances[:, 0], nearest.ids[:, 0]
    matched = (distances >= 0) & (distances <= radius)
    missing: Any = None if ids.dtype == object else -1
    return IndexMatches(
        matched,
        np.where(matched, ids, missing).astype(ids.dtype),
        np.where(matched, distances, -1).astype(np.int32),
    )


def add_kept(folder: str | Path, codes: np.ndarray, ids: Any) -> int:
    """Add the kept documents' codes to a saved index, atomically, under its writer lock.

    Parameters
    ----------
    folder : str or Path
        The index folder (`SimHashIndex.save`).
    codes : ndarray, shape (m, bits // 8), dtype uint8
        Codes of the documents to add.
    ids : sequence of int or str, length m, or None
        Their ids (None: consecutive int64 ids after the largest stored).

    Returns
    -------
    int
        Documents added.

    Raises
    ------
    ValueError, TypeError
        As `SimHashIndex.add`: ids already in the index, string ids for an index of integer
        ids, codes of the wrong length.
    """
    from gpusimhash.io.bundle import writing

    with writing(folder):  # load, add, save: a concurrent add waits and keeps both
        index = SimHashIndex.load(folder)
        index.add(codes, ids)
        index.save(folder)
    return int(codes.shape[0])


@dataclass
class Against:
    """A saved index a dedup run removes its batch's repeats against.

    Attributes
    ----------
    folder : Path
        The index folder.
    index : SimHashIndex
        The index as loaded before the run.
    matches : IndexMatches or None
        Set by `remove_indexed`.

    Examples
    --------
    >>> import tempfile
    >>> folder = tempfile.mkdtemp()
    >>> old = SimHashIndex(bits=64)
    >>> _ = old.add(["the cat sat on the mat"], ids=["old-1"])
    >>> old.save(folder)
    >>> run = Against.open(folder, old.settings)
    >>> codes = old.to_codes(["the cat sat on the mat", "a dog ran"])
    >>> labels, kept = np.array([0, 1]), np.array([True, True])
    >>> run.remove_indexed(codes, labels, kept, np.array([0, 1]), "cosine", 0.8).tolist()
    [False, True]
    >>> run.summary()
    {'removed_as_indexed': 1, 'clusters_matching_index': 1}
    """

    folder: Path
    index: SimHashIndex
    matches: IndexMatches | None = field(default=None, init=False)
    _labels: np.ndarray | None = field(default=None, init=False, repr=False)
    _kept_rows: np.ndarray | None = field(default=None, init=False, repr=False)

    @classmethod
    def open(cls, folder: str | Path, settings: FingerprintSettings) -> Against:
        """Load the index and check that the run fingerprints as it does.

        Parameters
        ----------
        folder : str or Path
            The index folder.
        settings : FingerprintSettings
            The run's settings (`SimHashIndex.settings` of the index, on the command line).

        Returns
        -------
        Against

        Raises
        ------
        gpusimhash.io.bundle.BundleError
            Not a loadable index (a ValueError naming the file).
        ValueError
            Settings other than the index's: its codes could not be compared.
        """
        index = SimHashIndex.load(folder)
        theirs = index.settings
        ours = (settings.bits, settings.seed, settings.featurizer.to_config())
        if ours != (theirs.bits, theirs.seed, theirs.featurizer.to_config()):
            raise ValueError(
                f"{folder}: the index fingerprints with {index.bits} bits, seed {index.seed} and "
                f"{index.featurizer!r}; the run must use the same settings"
            )
        return cls(Path(folder), index)

    def remove_indexed(
        self,
        codes: np.ndarray,
        labels: np.ndarray,
        kept: np.ndarray,
        kept_rows: np.ndarray,
        measure: str,
        value: float,
    ) -> np.ndarray:
        """Return the documents still kept once clusters matching the index are removed.

        Parameters
        ----------
        codes : ndarray, shape (n, bits // 8), dtype uint8
            The batch's codes.
        labels, kept, kept_rows : ndarray
            The clustering: cluster of every document, documents kept, kept row per cluster.
        measure, value : str, float
            The run's threshold (see `index_radius`).

        Returns
        -------
        ndarray, shape (n,), dtype bool
        """
        radius = index_radius(self.index.bits, measure, value)
        self.matches = match_clusters(self.index, codes, kept_rows, radius)
        self._labels, self._kept_rows = labels, kept_rows
        return self.matches.kept(labels, kept)

    def summary(self) -> dict[str, int]:
        """Return the documents and clusters removed as already indexed."""
        if self.matches is None or self._labels is None:
            return {"removed_as_indexed": 0, "clusters_matching_index": 0}
        matched = self.matches.matched
        return {
            "removed_as_indexed": int(matched[self._labels].sum()),
            "clusters_matching_index": int(matched.sum()),
        }

    def records(self, ids: Sequence[Any] | None) -> list[dict[str, Any]]:
        """Return one record per removed cluster: the indexed id it matched, distance, members.

        Parameters
        ----------
        ids : sequence, optional
            Every document's id, in row order (None: the rows are the ids).
        """
        if self.matches is None or self._labels is None or self._kept_rows is None:
            return []
        order = np.argsort(self._labels, kind="stable")
        sizes = np.bincount(self._labels, minlength=self.matches.matched.size)
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        out = []
        named = (lambda row: row) if ids is None else ids.__getitem__
        for label in np.flatnonzero(self.matches.matched).tolist():
            rows = order[starts[label] : starts[label] + sizes[label]].tolist()
            kept = int(self._kept_rows[label])
            out.append(
                {
                    "index_id": _plain(self.matches.ids[label]),
                    "distance": int(self.matches.distances[label]),
                    "kept_id": _plain(named(kept)),
                    "kept_row": kept,
                    "ids": [_plain(named(row)) for row in rows],
                    "rows": rows,
                }
            )
        return out

    def write(self, folder: Path, output_format: str, ids: Sequence[Any] | None) -> tuple[str, str]:
        """Write `records` to ``in_index.<output_format>`` in ``folder``.

        Parameters
        ----------
        folder : Path
            The run's output folder.
        output_format : {"jsonl", "parquet"}
            As the run's other outputs.
        ids : sequence, optional
            As `records`.

        Returns
        -------
        name, description : str
            The file's name and what it holds, for the run's list of files.
        """
        from gpusimhash.io.writers import RecordWriter

        path = folder / f"in_index.{output_format}"
        records = self.records(ids)
        with RecordWriter(path, output_format) as writer:
            writer.write(records)
        return path.name, (
            f"{len(records):,} clusters removed as already in the index {self.folder}: the "
            "indexed id each matched, its Hamming distance, the kept document and every member"
        )

    def add(self, codes: np.ndarray, kept: np.ndarray, ids: Iterable[Any] | None) -> int:
        """Add the kept documents to the index folder (see `add_kept`).

        Parameters
        ----------
        codes : ndarray, shape (n, bits // 8), dtype uint8
            The batch's codes.
        kept : ndarray, shape (n,), dtype bool
            The documents kept.
        ids : iterable, optional
            Every document's id, in row order (None: consecutive int64 ids after the largest).

        Returns
        -------
        int
            Documents added.
        """
        rows = np.flatnonzero(kept)
        chosen = None if ids is None else [i for i, k in zip(ids, kept, strict=True) if k]
        return add_kept(self.folder, codes[rows], chosen)


def _plain(value: Any) -> Any:
    """Return a NumPy scalar as a Python value (for JSON)."""
    return value.item() if isinstance(value, np.generic) else value

"""`FeatureSpill`: every document's merged features on disk during a run, read back by row.

12 bytes per distinct feature and 24 per document go to files in a temporary folder during the
fingerprint pass (8 bytes per document stay in memory); the verification reads back only the
documents in candidate pairs, in bounded windows.
"""

from __future__ import annotations

import contextlib
import errno
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from gpusimhash import _segments
from gpusimhash._memory import check_memory
from gpusimhash.verify._features import DocumentFeatures

# entries of a column file read at a time when gathering features
_WINDOW = 1 << 20


# the dtypes narrowed weights are read as, narrowest first: each holds every value of the ones
# before it exactly (counts as small integers: 1 byte a feature instead of 8)
_NARROWED = (np.int8, np.int16, np.float32, np.float64)


class FeatureSpill:
    """Merged document features, appended batch by batch to files, read back by row.

    Open one with `feature_spill`, which deletes the files afterwards.

    Parameters
    ----------
    directory : Path
        An empty folder for the files.
    """

    _COLUMNS = (
        ("states", np.uint32),
        ("weights", np.float64),
        ("exponents", np.int64),
        ("squared_norms", np.float64),
    )

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._ends: list[np.ndarray] = []  # each batch's documents' feature ends (int64)
        self._total = 0  # features appended
        self._offsets: np.ndarray | None = None
        self._files = {name: open(directory / name, "wb") for name, _ in self._COLUMNS}  # noqa: SIM115

    def close(self) -> None:
        """Close the files."""
        for handle in self._files.values():
            handle.close()

    @property
    def n_docs(self) -> int:
        """Documents appended so far."""
        return sum(ends.size for ends in self._ends)

    def append(self, features: DocumentFeatures) -> None:
        """Append the documents of a batch.

        Parameters
        ----------
        features : DocumentFeatures
            The batch's documents, next in order.
        """
        for name, dtype in self._COLUMNS:
            column = np.ascontiguousarray(getattr(features, name), dtype=dtype)
            try:
                column.tofile(self._files[name])
            except OSError as error:  # a short write (a full disk, a file size limit)
                raise OSError(
                    error.errno or errno.ENOSPC,
                    f"cannot write the features' temporary file ({error.strerror or error}): "
                    "the disk is full or a file size limit was reached; TMPDIR chooses the "
                    "folder",
                    str(self.directory / name),
                ) from None
        ends = self._total + np.cumsum(features.sizes, dtype=np.int64)
        self._ends.append(ends)
        self._total = int(ends[-1]) if ends.size else self._total
        self._offsets = None

    def gather(self, rows: Any, *, narrow: bool = False) -> DocumentFeatures:
        """Read back some documents.

        The files are read in windows of at most ``_WINDOW`` entries around the wanted
        documents (never mapped), so memory holds the result and one window.

        Parameters
        ----------
        rows : array_like of int
            Ascending document indices.
        narrow : bool
            Return the weights in the narrowest of int8, int16, float32 and float64 that holds
            every weight read exactly (checked window by window, widening as needed): word
            counts take 5 bytes per distinct feature instead of 12. Only for callers that widen
            them back before computing with them.

        Returns
        -------
        DocumentFeatures
            Document ``i`` is document ``rows[i]`` of those appended.

        Raises
        ------
        ValueError
            Rows not ascending or out of range.
        MemoryError
            Before reading, when the result cannot fit in the memory available.
        """
        rows = np.asarray(rows, dtype=np.int64).reshape(-1)
        n = self.n_docs
        if rows.size and (np.any(np.diff(rows) <= 0) or rows[0] < 0 or rows[-1] >= n):
            raise ValueError(f"rows must be ascending document indices in [0, {n})")
        for handle in self._files.values():
            handle.flush()
        if self._offsets is None:  # one array: the batches' ends become a view of it
            self._offsets = np.concatenate([np.zeros(1, np.int64), *self._ends])
            self._ends = [self._offsets[1:]]
        starts = self._offsets[rows]
        sizes = self._offsets[rows + 1] - starts
        total = int(sizes.sum())
        check_memory(12 * total + 32 * rows.size, f"the features of {rows.size:,} documents need")
        offsets = np.zeros(rows.size + 1, dtype=np.int64)
        np.cumsum(sizes, out=offsets[1:])
        ones = np.ones(rows.size, dtype=np.int64)
        return DocumentFeatures(
            self._read("states", np.uint32, starts, sizes),
            offsets,
            self._read("weights", _NARROWED[0] if narrow else np.float64, starts, sizes),
            self._read("exponents", np.int64, rows, ones),
            self._read("squared_norms", np.float64, rows, ones),
        )

    def _read(self, name: str, dtype: Any, starts: np.ndarray, sizes: np.ndarray) -> np.ndarray:
        """Read the runs ``[starts[i], starts[i] + sizes[i])`` of a column file, concatenated.

        A narrower ``dtype`` than the file's (one of `_NARROWED`) holds the values while they
        are exact in it; a window that is not widens the result to the narrowest dtype of
        `_NARROWED` exact for it (the values so far converted exactly).
        """
        out = np.empty(int(sizes.sum()), dtype=dtype)
        dtype = dict(self._COLUMNS)[name]
        itemsize = np.dtype(dtype).itemsize
        ends = starts + sizes
        written = 0
        with open(self.directory / name, "rb") as handle:
            first = 0
            while first < starts.size:
                # the runs that fit in one window from this one (at least this one)
                last = max(int(np.searchsorted(ends, starts[first] + _WINDOW, "right")), first + 1)
                lo = int(starts[first])
                handle.seek(lo * itemsize)
                window = np.fromfile(handle, dtype=dtype, count=int(ends[last - 1]) - lo)
                picked = window[_segments.ranges(starts[first:last] - lo, sizes[first:last])]
                if out.dtype != picked.dtype and not _exact_narrow(picked, out.dtype):
                    wider = _NARROWED[_NARROWED.index(out.dtype.type) + 1 :]
                    wide = np.empty(out.size, dtype=_narrowest(picked, wider))
                    wide[:written] = out[:written]
                    out = wide
                out[written : written + picked.size] = picked
                written += picked.size
                first = last
        return out


def _exact_narrow(values: np.ndarray, dtype: Any) -> bool:
    """Whether every value is exactly representable in ``dtype`` (NaN never is)."""
    with np.errstate(over="ignore", invalid="ignore"):
        return bool(np.array_equal(values.astype(dtype), values))


def _narrowest(values: np.ndarray, dtypes: tuple[Any, ...]) -> Any:
    """Return the first of ``dtypes`` that holds every value exactly (else the last one)."""
    return next((d for d in dtypes[:-1] if _exact_narrow(values, d)), dtypes[-1])


@contextlib.contextmanager
def feature_spill(folder: str | Path | None = None) -> Iterator[FeatureSpill]:
    """Open a `FeatureSpill` in a temporary folder; delete it afterwards.

    Parameters
    ----------
    folder : str or Path, optional
        Where the temporary folder goes (default: the system's, ``TMPDIR``).

    Yields
    ------
    FeatureSpill

    Examples
    --------
    >>> from gpusimhash.fingerprinting import featurize
    >>> with feature_spill() as spill:
    ...     spill.append(DocumentFeatures.from_batch(featurize(["a b", "c"])))
    ...     spill.append(DocumentFeatures.from_batch(featurize(["c c", ""])))
    ...     spill.gather([1, 2]).sizes.tolist(), spill.n_docs
    ([1, 1], 4)
    """
    with tempfile.TemporaryDirectory(prefix="gpusimhash-features-", dir=folder) as directory:
        spill = FeatureSpill(Path(directory))
        try:
            yield spill
        finally:
            spill.close()

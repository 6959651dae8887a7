"""The batch every engine fingerprints: documents as CSR rows of feature states and weights."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpusimhash import _segments


@dataclass(frozen=True)
class FeatureBatch:
    """A batch of documents in compressed sparse row form.

    Document ``d`` has the entries ``offsets[d]`` to ``offsets[d + 1]``: feature states
    (``hashing.feature_states``, the FNV-1a value before the seed suffix) and their weights.

    Attributes
    ----------
    states : ndarray, shape (nnz,), dtype uint32
        Feature state of each entry.
    offsets : ndarray, shape (n_docs + 1,), dtype int64
        Row starts; ``offsets[0] == 0`` and ``offsets[-1] == nnz``.
    weights : ndarray, shape (nnz,), dtype float64, or None
        Weight of each entry; None means every weight is 1 (counts by occurrence).

    Examples
    --------
    >>> import numpy as np
    >>> batch = FeatureBatch(np.array([7, 9], np.uint32), np.array([0, 2, 2], np.int64), None)
    >>> batch.n_docs, batch.nnz
    (2, 2)
    """

    states: np.ndarray
    offsets: np.ndarray
    weights: np.ndarray | None

    @property
    def n_docs(self) -> int:
        """Number of documents in the batch."""
        return int(self.offsets.size - 1)

    @property
    def nnz(self) -> int:
        """Number of entries (feature occurrences) in the batch."""
        return int(self.states.size)

    def entry_weights(self) -> np.ndarray:
        """Return the weights as a float64 array, ones where ``weights`` is None."""
        if self.weights is None:
            return np.ones(self.nnz, dtype=np.float64)
        return self.weights

    def doc_ids(self) -> np.ndarray:
        """Return the document index of every entry, shape (nnz,), int64."""
        return _segments.segment_of(np.diff(self.offsets))

    @classmethod
    def concatenate(cls, batches: list[FeatureBatch]) -> FeatureBatch:
        """Stack batches into one, documents in order.

        Parameters
        ----------
        batches : list of FeatureBatch
            At least one batch.

        Returns
        -------
        FeatureBatch
        """
        states = np.concatenate([b.states for b in batches])
        starts = np.cumsum([0] + [b.nnz for b in batches[:-1]])
        offsets = np.concatenate(
            [[0]] + [b.offsets[1:] + start for b, start in zip(batches, starts, strict=True)]
        ).astype(np.int64)
        if all(b.weights is None for b in batches):
            weights = None
        else:
            weights = np.concatenate([b.entry_weights() for b in batches])
        return cls(states, offsets, weights)

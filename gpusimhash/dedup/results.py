"""What the stages of a dedup run hand each other, and what the run returns.

`Fingerprints` is what the first pass keeps per document, `Clusters` what the cluster stage
decides, `DedupResult` what `gpusimhash.dedup.run` returns.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from gpusimhash._reprs import short_repr


@dataclass
class DedupResult:
    """What a deduplication run found and wrote.

    Attributes
    ----------
    summary : dict
        ``input``, ``settings``, ``results``, ``ground_truth`` (or None), ``cluster_sizes``
        (number of clusters of each size), ``timings_s`` and ``files``: JSON-safe, and written
        to ``summary.json``.
    codes : ndarray, shape (n, bits // 8), dtype uint8
        Every document's fingerprint, in input order.
    cluster : ndarray, shape (n,), dtype int64
        Cluster of each document (``-1`` for documents without a near-duplicate).
    kept : ndarray, shape (n,), dtype bool
        Which documents were written to the kept file.
    """

    summary: dict[str, Any]
    codes: np.ndarray
    cluster: np.ndarray
    kept: np.ndarray

    __repr__ = short_repr


@dataclass
class Fingerprints:
    """What the first pass keeps per document."""

    codes: np.ndarray
    lengths: np.ndarray | None  # for the keep policy "longest" only
    scores: np.ndarray | None
    truth: np.ndarray | None
    has_features: np.ndarray  # bool: whether each document has a feature


@dataclass
class Clusters:
    """Clusters of near-duplicates and the document kept for each."""

    labels: np.ndarray  # cluster of every document, 0 .. n_clusters - 1
    sizes: np.ndarray  # documents per cluster
    kept: np.ndarray  # bool per document
    kept_rows: np.ndarray  # the kept document of every cluster
    in_cluster: np.ndarray  # bool per document: in a cluster of two or more
    similarity: np.ndarray  # exact similarity of every document to its kept one
    below_threshold: int  # removed documents below the threshold against their kept one

"""Clusters of near-duplicates and the one document kept for each.

- `star_clusters`: never chains. Documents are visited in keep-policy order; a document not yet
  assigned is kept and takes every unassigned document paired with it, so with verified pairs
  every removed document reaches the threshold against the document kept for it.
- `cluster_labels`: connected components, where a chain of pairs links documents that may be
  far apart.
- `keep_one`: the document kept in each cluster (the first, the longest or the best-scored);
  `cluster_summary`: sizes and counts.

The dedup job clusters its candidate graph lazily (``_graph``: verifying only the pairs the
clustering needs) and measures every removed document against its kept one (``_documents``).

Tested in ``tests/cluster/``.
"""

from gpusimhash._choices import POLICIES
from gpusimhash.cluster._pairs import (
    ClusterSummary,
    StarClusters,
    cluster_labels,
    cluster_summary,
    keep_one,
    star_clusters,
)

__all__ = [
    "POLICIES",
    "ClusterSummary",
    "StarClusters",
    "cluster_labels",
    "cluster_summary",
    "keep_one",
    "star_clusters",
]

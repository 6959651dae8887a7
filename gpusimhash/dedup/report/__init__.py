"""A Markdown report of a deduplication run, with PNG plots: what was removed, and why.

``write_report`` writes ``report.md`` and three plots into a folder:

- the largest clusters, the kept text next to its members' texts (excerpts), each member with
  the edge that put it there (its similarity and Hamming distance to the kept document);
- around the threshold: the distances from sampled documents to all their neighbours up to a
  little beyond the candidate radius, and the pairs just beyond it with their true cosines
  (those at or above the threshold are near-duplicates the candidate search can miss);
- the estimated against the true cosine of sampled pairs; cluster sizes on log-log axes.

Plots need matplotlib (a dependency; where it is missing the report is written without them).

- `_sample`: the sampling (`sample_pairs`, `sampled_cosines`, `largest_clusters`);
- `_render`: the Markdown (`write_report`);
- `_plots`: the plots (`PLOTS` names their files).
"""

from gpusimhash._output_names import PLOTS
from gpusimhash.dedup.report._render import write_report
from gpusimhash.dedup.report._sample import (
    CODES_PER_SCAN,
    ClusterView,
    draw_sample,
    largest_clusters,
    neighbours,
    reach,
    sample_pairs,
    sampled_cosines,
)

__all__ = [
    "CODES_PER_SCAN",
    "PLOTS",
    "ClusterView",
    "draw_sample",
    "largest_clusters",
    "neighbours",
    "reach",
    "sample_pairs",
    "sampled_cosines",
    "write_report",
]

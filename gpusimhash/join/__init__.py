"""Joins over packed codes: every pair of codes within a Hamming radius, and what they share.

- `near_duplicates` and `near_duplicate_groups`: every pair within the radius, exactly (CPU or
  GPU), or, with ``recall=``, each pair with at least that probability (bit-sampling LSH, for
  large radii); `near_duplicate_groups` keeps identical codes collapsed (`DuplicateGroups`).
- `near_duplicate_graph`: the collapsed pairs as an int32 adjacency (`CodeGraph`), the form the
  dedup job clusters; `near_duplicate_components`: clusters linked by chains of pairs, without
  listing them.
- `cosine_radius` and `radius_recall`: the radius of an estimated cosine, and the chance that a
  pair of a given true cosine lands within a radius.

Tested in ``tests/join/``.
"""

from gpusimhash.join._exact import (
    near_duplicate_components,
    near_duplicate_graph,
    near_duplicate_groups,
    near_duplicates,
)
from gpusimhash.join._graph import CodeGraph
from gpusimhash.join._groups import DuplicateGroups
from gpusimhash.join._radius import cosine_radius, radius_recall

__all__ = [
    "CodeGraph",
    "DuplicateGroups",
    "cosine_radius",
    "near_duplicate_components",
    "near_duplicate_graph",
    "near_duplicate_groups",
    "near_duplicates",
    "radius_recall",
]

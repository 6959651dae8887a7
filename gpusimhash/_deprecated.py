"""Deprecated aliases: each warns (`DeprecationWarning`) and forwards to its replacement.

They stay for one release after the one that deprecated them. The CHANGELOG lists each.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from gpusimhash.evaluation import block_candidates
from gpusimhash.join import DuplicateGroups, near_duplicate_components, near_duplicate_groups


def _warn(old: str, new: str) -> None:
    """Warn that ``old`` is deprecated in favour of ``new``."""
    warnings.warn(
        f"gpusimhash.{old} is deprecated and will be removed in the next release: use {new}",
        DeprecationWarning,
        stacklevel=3,
    )


# ---- deprecated in 0.2 -----------------------------------------------------------------------


def approximate_near_duplicates(
    codes: np.ndarray,
    *,
    max_distance: int | None = None,
    min_cosine: float | None = None,
    recall: float = 0.99,
    seed: int = 0,
    max_tables: int = 256,
) -> np.ndarray:
    """Find approximate near-duplicates: deprecated, use `gpusimhash.near_duplicates` with ``recall=``."""
    _warn("approximate_near_duplicates", "near_duplicates(codes, ..., recall=0.99)")
    return _approximate(codes, max_distance, min_cosine, recall, seed, max_tables).pairs()


def approximate_near_duplicate_groups(
    codes: np.ndarray,
    *,
    max_distance: int | None = None,
    min_cosine: float | None = None,
    recall: float = 0.99,
    seed: int = 0,
    max_tables: int = 256,
) -> DuplicateGroups:
    """Find approximate groups: deprecated, use `gpusimhash.near_duplicate_groups` with ``recall=``."""
    _warn("approximate_near_duplicate_groups", "near_duplicate_groups(codes, ..., recall=0.99)")
    return _approximate(codes, max_distance, min_cosine, recall, seed, max_tables)


def cluster_near_duplicates(
    codes: np.ndarray, *, max_distance: int | None = None, min_cosine: float | None = None
) -> np.ndarray:
    """Label linked codes: deprecated, use `gpusimhash.near_duplicate_components` (the same)."""
    _warn("cluster_near_duplicates", "near_duplicate_components")
    return near_duplicate_components(codes, max_distance=max_distance, min_cosine=min_cosine)


def candidates(codes: np.ndarray, num_blocks: int) -> np.ndarray:
    """Pair codes by blocks: deprecated, use `gpusimhash.evaluation.block_candidates`."""
    _warn("candidates", "gpusimhash.evaluation.block_candidates")
    return block_candidates(codes, num_blocks)


def _approximate(
    codes: Any,
    max_distance: int | None,
    min_cosine: float | None,
    recall: float,
    seed: int,
    max_tables: int,
) -> DuplicateGroups:
    """Run the approximate join as the deprecated functions did: on the CPU."""
    return near_duplicate_groups(
        codes,
        max_distance=max_distance,
        min_cosine=min_cosine,
        recall=recall,
        seed=seed,
        max_tables=max_tables,
        device="cpu",
    )

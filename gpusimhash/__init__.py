"""gpusimhash: bit-exact weighted SimHash on CPU and GPU, with FAISS binary indexes.

Public names load on first use (PEP 562), so ``import gpusimhash`` and the command line's
``--help`` stay fast: NumPy, SciPy, Numba and FAISS are imported only by what needs them.
The stages have faces of their own, which these names come from: `gpusimhash.join` (codes to
pairs), `gpusimhash.verify` (pairs to exact similarities), `gpusimhash.cluster` (pairs to
clusters), `gpusimhash.index` (`SimHashIndex`) and `gpusimhash.dedup` (the main job).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# public name -> the module it comes from
_PUBLIC = {
    # fingerprints
    "FeatureBatch": "gpusimhash.features",
    "FingerprintSettings": "gpusimhash.fingerprinting",
    "TextFeaturizer": "gpusimhash.text",
    "Utf8Texts": "gpusimhash.utf8",
    "fingerprint": "gpusimhash.fingerprinting",
    "fingerprint_device": "gpusimhash.fingerprinting",
    # codes
    "estimate_cosine": "gpusimhash.codes",
    "hamming": "gpusimhash.codes",
    "hamming_matrix": "gpusimhash.codes",
    # joins
    "CodeGraph": "gpusimhash.join",
    "DuplicateGroups": "gpusimhash.join",
    "cosine_radius": "gpusimhash.join",
    "near_duplicate_components": "gpusimhash.join",
    "near_duplicate_graph": "gpusimhash.join",
    "near_duplicate_groups": "gpusimhash.join",
    "near_duplicates": "gpusimhash.join",
    "radius_recall": "gpusimhash.join",
    # verification
    "DocumentFeatures": "gpusimhash.verify",
    "Similarities": "gpusimhash.verify",
    "candidate_radius": "gpusimhash.verify",
    "verified_near_duplicates": "gpusimhash.verify",
    "verify_pairs": "gpusimhash.verify",
    # clusters
    "ClusterSummary": "gpusimhash.cluster",
    "StarClusters": "gpusimhash.cluster",
    "cluster_labels": "gpusimhash.cluster",
    "cluster_summary": "gpusimhash.cluster",
    "keep_one": "gpusimhash.cluster",
    "star_clusters": "gpusimhash.cluster",
    # the search index
    "Hits": "gpusimhash.index",
    "RangeResult": "gpusimhash.index",
    "SearchResult": "gpusimhash.index",
    "SimHashIndex": "gpusimhash.index",
    # the main job
    "DedupOptions": "gpusimhash.dedup",
    "DedupResult": "gpusimhash.dedup",
    "annotate_table": "gpusimhash.dedup",
    "dedup_file": "gpusimhash.dedup",
    # Deprecated aliases (they warn when called; removed in the next release):
    "approximate_near_duplicate_groups": "gpusimhash._deprecated",  # near_duplicate_groups(recall=)
    "approximate_near_duplicates": "gpusimhash._deprecated",  # near_duplicates(recall=)
    "candidates": "gpusimhash._deprecated",  # gpusimhash.evaluation.block_candidates
    "cluster_near_duplicates": "gpusimhash._deprecated",  # near_duplicate_components
}

__all__ = [
    "ClusterSummary",
    "CodeGraph",
    "DedupOptions",
    "DedupResult",
    "DocumentFeatures",
    "DuplicateGroups",
    "FeatureBatch",
    "FingerprintSettings",
    "Hits",
    "RangeResult",
    "SearchResult",
    "SimHashIndex",
    "Similarities",
    "StarClusters",
    "TextFeaturizer",
    "Utf8Texts",
    "__version__",
    "annotate_table",
    "approximate_near_duplicate_groups",
    "approximate_near_duplicates",
    "candidate_radius",
    "candidates",
    "cluster_labels",
    "cluster_near_duplicates",
    "cluster_summary",
    "cosine_radius",
    "dedup_file",
    "estimate_cosine",
    "fingerprint",
    "fingerprint_device",
    "hamming",
    "hamming_matrix",
    "keep_one",
    "near_duplicate_components",
    "near_duplicate_graph",
    "near_duplicate_groups",
    "near_duplicates",
    "radius_recall",
    "star_clusters",
    "verified_near_duplicates",
    "verify_pairs",
]

if TYPE_CHECKING:
    from gpusimhash._deprecated import (
        approximate_near_duplicate_groups,
        approximate_near_duplicates,
        candidates,
        cluster_near_duplicates,
    )
    from gpusimhash.cluster import (
        ClusterSummary,
        StarClusters,
        cluster_labels,
        cluster_summary,
        keep_one,
        star_clusters,
    )
    from gpusimhash.codes import estimate_cosine, hamming, hamming_matrix
    from gpusimhash.dedup import DedupOptions, DedupResult, annotate_table, dedup_file
    from gpusimhash.features import FeatureBatch
    from gpusimhash.fingerprinting import FingerprintSettings, fingerprint, fingerprint_device
    from gpusimhash.index import Hits, RangeResult, SearchResult, SimHashIndex
    from gpusimhash.join import (
        CodeGraph,
        DuplicateGroups,
        cosine_radius,
        near_duplicate_components,
        near_duplicate_graph,
        near_duplicate_groups,
        near_duplicates,
        radius_recall,
    )
    from gpusimhash.text import TextFeaturizer
    from gpusimhash.utf8 import Utf8Texts
    from gpusimhash.verify import (
        DocumentFeatures,
        Similarities,
        candidate_radius,
        verified_near_duplicates,
        verify_pairs,
    )


def __getattr__(name: str) -> Any:
    """Import a public name's module on first use and cache the name here."""
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'gpusimhash' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """List the public names with the module's own."""
    return sorted({*globals(), *_PUBLIC})

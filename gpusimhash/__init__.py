"""gpusimhash: bit-exact weighted SimHash on CPU and GPU, with FAISS binary indexes.

Public names load on first use (PEP 562), so ``import gpusimhash`` and the command line's
``--help`` stay fast: NumPy, SciPy, Numba and FAISS are imported only by what needs them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# public name -> the module that defines it
_PUBLIC = {
    "FeatureBatch": "gpusimhash.features",
    "FingerprintSettings": "gpusimhash.fingerprinting",
    "SimHashIndex": "gpusimhash.search.index",
    "TextFeaturizer": "gpusimhash.text",
    "Utf8Texts": "gpusimhash.utf8",
    "approximate_near_duplicate_groups": "gpusimhash.search.lsh",
    "approximate_near_duplicates": "gpusimhash.search.lsh",
    "candidate_radius": "gpusimhash.search.verify",
    "candidates": "gpusimhash.codes",
    "cluster_labels": "gpusimhash.search.clusters",
    "cluster_near_duplicates": "gpusimhash.search.clusters",
    "cluster_summary": "gpusimhash.search.clusters",
    "cosine_radius": "gpusimhash.search._join",
    "estimate_cosine": "gpusimhash.codes",
    "fingerprint": "gpusimhash.fingerprinting",
    "fingerprint_device": "gpusimhash.fingerprinting",
    "hamming": "gpusimhash.codes",
    "hamming_matrix": "gpusimhash.codes",
    "keep_one": "gpusimhash.search.clusters",
    "near_duplicate_components": "gpusimhash.search.exact",
    "near_duplicate_groups": "gpusimhash.search.exact",
    "near_duplicates": "gpusimhash.search.exact",
    "radius_recall": "gpusimhash.search._join",
    "star_clusters": "gpusimhash.search.clusters",
    "verified_near_duplicates": "gpusimhash.search.verify",
    "verify_pairs": "gpusimhash.search.verify",
}

__all__ = [
    "FeatureBatch",
    "FingerprintSettings",
    "SimHashIndex",
    "TextFeaturizer",
    "Utf8Texts",
    "__version__",
    "approximate_near_duplicate_groups",
    "approximate_near_duplicates",
    "candidate_radius",
    "candidates",
    "cluster_labels",
    "cluster_near_duplicates",
    "cluster_summary",
    "cosine_radius",
    "estimate_cosine",
    "fingerprint",
    "fingerprint_device",
    "hamming",
    "hamming_matrix",
    "keep_one",
    "near_duplicate_components",
    "near_duplicate_groups",
    "near_duplicates",
    "radius_recall",
    "star_clusters",
    "verified_near_duplicates",
    "verify_pairs",
]

if TYPE_CHECKING:
    from gpusimhash.codes import candidates, estimate_cosine, hamming, hamming_matrix
    from gpusimhash.features import FeatureBatch
    from gpusimhash.fingerprinting import FingerprintSettings, fingerprint, fingerprint_device
    from gpusimhash.search._join import cosine_radius, radius_recall
    from gpusimhash.search.clusters import (
        cluster_labels,
        cluster_near_duplicates,
        cluster_summary,
        keep_one,
        star_clusters,
    )
    from gpusimhash.search.exact import (
        near_duplicate_components,
        near_duplicate_groups,
        near_duplicates,
    )
    from gpusimhash.search.index import SimHashIndex
    from gpusimhash.search.lsh import approximate_near_duplicate_groups, approximate_near_duplicates
    from gpusimhash.search.verify import candidate_radius, verified_near_duplicates, verify_pairs
    from gpusimhash.text import TextFeaturizer
    from gpusimhash.utf8 import Utf8Texts


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

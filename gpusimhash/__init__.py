"""gpusimhash: bit-exact weighted SimHash on CPU and GPU, with FAISS binary indexes."""

from gpusimhash._cuda import fingerprint_device
from gpusimhash.clusters import cluster_labels, cluster_near_duplicates, cluster_summary, keep_one
from gpusimhash.codes import candidates, estimate_cosine, hamming, hamming_matrix
from gpusimhash.features import FeatureBatch
from gpusimhash.fingerprint import fingerprint
from gpusimhash.index import SimHashIndex
from gpusimhash.lshjoin import approximate_near_duplicate_groups, approximate_near_duplicates
from gpusimhash.neardup import (
    cosine_radius,
    near_duplicate_groups,
    near_duplicates,
    radius_recall,
)
from gpusimhash.text import TextFeaturizer

__version__ = "0.1.0"

__all__ = [
    "FeatureBatch",
    "SimHashIndex",
    "TextFeaturizer",
    "__version__",
    "approximate_near_duplicate_groups",
    "approximate_near_duplicates",
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
    "near_duplicate_groups",
    "near_duplicates",
    "radius_recall",
]

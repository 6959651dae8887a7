"""gpusimhash: bit-exact weighted SimHash on CPU and GPU, with FAISS binary indexes."""

from gpusimhash._cuda import fingerprint_device
from gpusimhash.codes import candidates, estimate_cosine, hamming, hamming_matrix
from gpusimhash.features import FeatureBatch
from gpusimhash.fingerprint import fingerprint
from gpusimhash.text import TextFeaturizer

__version__ = "0.1.0"

__all__ = [
    "FeatureBatch",
    "TextFeaturizer",
    "__version__",
    "candidates",
    "estimate_cosine",
    "fingerprint",
    "fingerprint_device",
    "hamming",
    "hamming_matrix",
]

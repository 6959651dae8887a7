"""Verification on the documents' own features: exact similarities decide every candidate.

SimHash finds candidates; this package decides them. Every candidate pair is compared on the
features its fingerprints were computed from (the same featurizer): the weighted cosine, the
Jaccard similarity of the two feature sets, and the weighted Jaccard similarity
``sum min(a, b) / sum max(a, b)``. A pair is kept only at or above the threshold, so precision
is exact, and a looser Hamming radius buys recall.

- `verify_pairs`: keep the given pairs that reach the threshold;
- `verified_near_duplicates`: every near-duplicate pair of a corpus, candidates from the codes;
- `candidate_radius`: the Hamming radius that finds a pair at the threshold with a given
  probability, under the binomial SimHash model;
- `DocumentFeatures` and `Similarities`: merged features and the exact similarities of pairs.

**The candidate radius.** Under the SimHash model a pair at true cosine ``c`` differs in
``d ~ Binomial(bits, acos(c) / pi)`` bits; `candidate_radius` is the smallest radius that finds
a pair exactly at the threshold with probability ``candidate_recall`` (pairs above it are found
more often). The model is optimistic for short or heavily weighted documents: it assumes
independent Gaussian hyperplanes, while each feature draws +-1 signs from a 32-bit hash, so a
document of a few features (or one dominant feature) has few distinct slot sums, a slot whose
sum is exactly zero (frequent with an even count of equal weights) is always 0, and all its bits
come from the same handful of hashes. Such pairs differ in more bits than the model says, more
often; ``bench/bench_quality.py`` measures the recall this gives on real documents.

**Jaccard thresholds.** For sets, ``cosine >= 2 J / (1 + J)`` (equality for two sets of the
same size), so a Jaccard threshold ``J`` is searched as the cosine threshold ``2 J / (1 + J)``
over fingerprints of the feature sets (every weight 1), where that bound holds. No such bound
exists for the weighted Jaccard similarity (one heavy feature moves the cosine but hardly the
sums), so it is reported, never used as a threshold.

Features are compared by their 32-bit state, as the fingerprint sees them: two distinct
features of one pair with the same state (probability about ``k**2 / 2**33`` for ``k``
features) count as one.

**Memory.** `DocumentFeatures` holds 12 bytes per distinct feature of a document (state and
weight) and 24 bytes per document (row start, exponent, norm), for the documents that need
verifying; verification runs over candidate pairs in chunks of bounded size.

Tested in ``tests/verify/``.
"""

from gpusimhash.verify._features import DocumentFeatures, Similarities
from gpusimhash.verify._pairs import verified_near_duplicates, verify_pairs
from gpusimhash.verify._threshold import (
    DEFAULT_CANDIDATE_RECALL,
    DEFAULT_MIN_COSINE,
    candidate_radius,
)

__all__ = [
    "DEFAULT_CANDIDATE_RECALL",
    "DEFAULT_MIN_COSINE",
    "DocumentFeatures",
    "Similarities",
    "candidate_radius",
    "verified_near_duplicates",
    "verify_pairs",
]

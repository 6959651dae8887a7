"""Time the compiled loops of whichever gpusimhash is first on the path, warm, on one corpus.

Usage: python _loops_probe.py CORPUS DOCS REPEATS. Prints one JSON object: per job, the best
wall seconds of REPEATS calls after one warm-up call (which, for Numba loops, compiles or loads
them). The jobs call the package's own functions, whose names and arguments are the same at
every revision compared, so the same probe times the C loops and the Numba loops they replaced;
the feature join's probe is `probe_range` over every document, or, at revisions before it,
`probe_blocks` over 4 interleaved blocks.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import load_lines

from gpusimhash.fingerprinting import fingerprint
from gpusimhash.text import TextFeaturizer
from gpusimhash.utf8 import Utf8Texts
from gpusimhash.verify._feature_join import feature_index
from gpusimhash.verify._features import DocumentFeatures
from gpusimhash.verify._units import feature_units

try:
    from gpusimhash.verify._feature_join import probe_range

    def probe_all(index):
        """Probe every document of a feature index."""
        return probe_range(index, 0, index.n_docs)

except ImportError:  # a revision before probe_range
    from gpusimhash.verify._feature_join import probe_blocks

    def probe_all(index):
        """Probe every document of a feature index."""
        return probe_blocks(index, np.arange(4), 4)


def timed(repeats: int, job) -> float:
    """Best wall seconds of ``repeats`` calls of ``job()`` after one warm-up call."""
    job()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        job()
        best = min(best, time.perf_counter() - start)
    return best


def main(corpus: Path, n_docs: int, repeats: int) -> dict:
    """Return the best seconds of each job on the corpus's first ``n_docs`` lines."""
    texts = Utf8Texts.from_strings(load_lines(corpus, n_docs))
    tfidf = TextFeaturizer(weighting="tfidf").fit(load_lines(corpus, n_docs))
    words = TextFeaturizer()
    batch = words.transform(texts)
    features = DocumentFeatures.from_batch(batch)
    rng = np.random.default_rng(0)
    pairs = rng.integers(0, features.n_docs, (1_000_000, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    rows = np.arange(features.n_docs)
    codes = np.zeros(features.n_docs, dtype=np.int64)  # one code: feature_units hashes them all
    jobs = {
        "tokenize (UTF-8 words)": lambda: words.transform(texts),
        "fingerprint 256 bits, word counts": lambda: fingerprint(texts, bits=256, device="cpu"),
        "fingerprint 256 bits, TF-IDF weights": lambda: fingerprint(
            texts, bits=256, device="cpu", featurizer=tfidf
        ),
        "merge features": lambda: DocumentFeatures.from_batch(batch),
        "similarities of 1M pairs": lambda: features.similarities(pairs),
        "identical features (hash, confirm)": lambda: feature_units(codes, features, rows, False),
    }
    for measure, value in (("cosine", 0.8), ("jaccard", 0.8)):
        index = feature_index(features, measure, value)
        jobs[f"feature join index, {measure} {value}"] = lambda m=measure, v=value: feature_index(
            features, m, v
        )
        jobs[f"feature join probe, {measure} {value}"] = lambda i=index: probe_all(i)
    return {name: timed(repeats, job) for name, job in jobs.items()}


if __name__ == "__main__":
    print(json.dumps(main(Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]))))

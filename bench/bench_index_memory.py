"""Memory of the exact feature join's index per feature entry, against the estimate that guards it.

`gpusimhash.verify._feature_join.feature_index` refuses, before building it, an index whose
estimate (`INDEX_BYTES_PER_ENTRY` bytes per feature entry) is over the memory available. This
measures what the index takes on real and synthetic text: for each corpus, the documents that
one machine joins (one per code and feature set, as `gpusimhash.dedup.candidates` chooses them)
are indexed once, at the default threshold (cosine 0.8) and at Jaccard 0.5, and
``tracemalloc`` gives the peak of the build and what the index holds once built, per feature
entry (the build allocates through NumPy alone, compiled loops' scratch included, and
tracemalloc traces NumPy's allocations). The tails' share of the entries is what varies the
index most (a posting per tail entry).

- ``pypi-N``: the corpus's first N lines (``--sizes``);
- ``synth-L``: 20,000 synthetic documents of at most L words (`gpusimhash.datasets.synth`).

    python bench/bench_index_memory.py [CORPUS] [--sizes 50000 200000]

Writes ``bench/results/index_memory_cpu.json``.
"""

from __future__ import annotations

import argparse
import sys
import tracemalloc
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DEFAULT_CORPUS, load_lines, print_table, write_json

from gpusimhash.codes import code_words
from gpusimhash.datasets.synth import CorpusSpec, generate
from gpusimhash.fingerprinting import featurize, fingerprint_batch
from gpusimhash.join._groups import collapse
from gpusimhash.verify._feature_join import INDEX_BYTES_PER_ENTRY, feature_index
from gpusimhash.verify._features import DocumentFeatures
from gpusimhash.verify._units import feature_units

THRESHOLDS = (("cosine", 0.8), ("jaccard", 0.5))


def joined_documents(texts: list[str]) -> DocumentFeatures:
    """Return the features of the documents one machine's feature join indexes."""
    batch = featurize(texts)
    features = DocumentFeatures.from_batch(batch)
    featured = np.flatnonzero(features.sizes > 0)
    features = features.take(featured)
    codes = fingerprint_batch(batch, "cpu", bits=256, seed=0)[featured]
    _, inverse = collapse(code_words(codes))
    _, representative = feature_units(inverse, features, np.arange(features.n_docs), False)
    return features.take(representative)


def measure(name: str, features: DocumentFeatures, metric: str, value: float) -> dict:
    """Index the documents once; return the build's peak and the index's bytes per entry."""
    entries = int(features.states.size)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        index = feature_index(features, metric, value)
        held, peak = (n - before for n in tracemalloc.get_traced_memory())
    finally:
        tracemalloc.stop()
    return {
        "corpus": name,
        "threshold": f"{metric} {value}",
        "documents": features.n_docs,
        "entries": entries,
        "entries_per_document": round(entries / features.n_docs, 2),
        "tail_share": round(index.indexed / entries, 3),
        "peak_bytes_per_entry": round(peak / entries, 1),
        "held_bytes_per_entry": round(held / entries, 1),
        "estimate_bytes_per_entry": INDEX_BYTES_PER_ENTRY,
        "estimate_over_peak": round(INDEX_BYTES_PER_ENTRY * entries / peak, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", nargs="?", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--sizes", type=int, nargs="+", default=[50_000, 200_000])
    args = parser.parse_args()
    lines = load_lines(args.corpus, max(args.sizes))
    corpora = {f"pypi-{n}": lines[:n] for n in sorted(args.sizes)}
    for length in (40, 200):
        spec = CorpusSpec(n_docs=20_000, seed=2, max_length=length)
        corpora[f"synth-{length}"] = [d.text for d in generate(spec)]
    rows = [
        measure(name, joined_documents(texts), metric, value)
        for name, texts in corpora.items()
        for metric, value in THRESHOLDS
    ]
    print_table(rows, list(rows[0]))
    path = write_json(
        "index_memory_cpu.json",
        {
            "corpus": str(args.corpus),
            "sizes": sorted(args.sizes),
            "rows": rows,
            "note": "tracemalloc: NumPy's allocations during feature_index (all of the build's), "
            "per feature entry of the documents indexed (one per code and feature set)",
        },
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

"""Precision and recall of dedup settings: bits x features x verification, on three truths.

* ``sample``: the bundled sample corpus; truth = its ``group`` labels (removal scores).
* ``synthetic``: ``datasets.synth.generate``; truth = group labels (removal scores).
* ``pypi``: a random sample of PyPI summaries; truth = every pair whose exact cosine of the
  featurizer's own features (``TextFeaturizer.features``, by feature string, tested in integers
  on the count weights) reaches the threshold (pair scores, and recall over the pairs that are
  not identical vectors).

Dedup runs in memory with the functions the pipeline calls (`gpusimhash.cluster._documents`): without
verification, the pairs within the radius of the estimated cosine and connected components (the
old dedup); with it, the candidate radius of ``--candidate-recall``, every candidate verified,
star clusters. Every setting also counts the removed documents whose exact similarity to their
kept one is below the threshold. ``seconds`` is join + verify + cluster, measured side by side
in one run (compare within a file only).

    python bench/bench_quality.py [--min-cosine 0.8] [--pypi-docs 20000] [--synthetic-docs 50000]

Writes ``bench/results/quality_<min cosine>.json`` (or ``--out``).
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
from fractions import Fraction
from pathlib import Path

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DEFAULT_CORPUS, write_json

from gpusimhash._cpu._fingerprint import fingerprint_batch
from gpusimhash.cluster._documents import cluster_documents
from gpusimhash.datasets import sample
from gpusimhash.datasets.synth import CorpusSpec, generate
from gpusimhash.evaluation import removal_scores
from gpusimhash.fingerprinting import featurize
from gpusimhash.join._exact import near_duplicate_graph
from gpusimhash.join._graph import join_with_features
from gpusimhash.text import TextFeaturizer
from gpusimhash.verify._features import DocumentFeatures
from gpusimhash.verify._threshold import plan_threshold
from gpusimhash.verify._units import verify_candidates

FEATURES = {
    "words": lambda: TextFeaturizer("word", 1),
    "word 3-grams": lambda: TextFeaturizer("word", 3),
    "char 5-grams": lambda: TextFeaturizer("char", 5),
}


def load_sample() -> tuple[list[str], np.ndarray]:
    with gzip.open(sample.sample_corpus_path(), "rt", encoding="utf-8") as handle:
        records = [json.loads(line) for line in handle]
    return [r["text"] for r in records], np.array([r["group"] for r in records])


def load_synthetic(n: int) -> tuple[list[str], np.ndarray]:
    spec = CorpusSpec(
        n_docs=n, seed=1, vocabulary_size=50_000, zipf_exponent=0.9, min_length=20, max_length=80
    )
    docs = list(generate(spec))
    return [d.text for d in docs], np.array([d.group for d in docs])


def load_pypi(path: Path, n: int, seed: int) -> list[str]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        lines = handle.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    rows = np.sort(np.random.default_rng(seed).choice(len(lines), size=n, replace=False))
    return [lines[r] for r in rows]


def exact_truth(docs: list[str], featurizer: TextFeaturizer, threshold: Fraction):
    """Keys ``i * n + j`` (i < j) of the pairs whose exact cosine reaches the threshold, and
    whether each pair is two identical vectors."""
    vocabulary: dict[str, int] = {}
    rows, cols, vals = [], [], []
    for i, text in enumerate(docs):
        for feature, weight in featurizer.features(text).items():
            rows.append(i)
            cols.append(vocabulary.setdefault(feature, len(vocabulary)))
            vals.append(int(weight))
    n = len(docs)
    x = sp.csr_matrix((np.array(vals, np.int64), (rows, cols)), shape=(n, len(vocabulary)))
    squared = np.asarray(x.multiply(x).sum(axis=1)).ravel().astype(np.int64)
    p, q = threshold.numerator, threshold.denominator
    xt = x.T.tocsr()
    keys, identical = [], []
    for start in range(0, n, 1000):
        dots = (x[start : start + 1000] @ xt).tocoo()
        i = dots.row.astype(np.int64) + start
        j, d = dots.col.astype(np.int64), dots.data.astype(np.int64)
        ok = (i < j) & (d > 0) & (q * q * d * d >= p * p * squared[i] * squared[j])
        keys.append(i[ok] * n + j[ok])
        identical.append(d[ok] * d[ok] == squared[i[ok]] * squared[j[ok]])
    keys, identical = np.concatenate(keys), np.concatenate(identical)
    order = np.argsort(keys)
    return keys[order], identical[order]


def dedup(features, batch, bits, min_cosine, verified, candidate_recall):
    """One in-memory dedup: its row of figures, the kept mask and the pair keys found."""
    n = features.n_docs
    limit = plan_threshold(
        bits, verify=verified, min_cosine=min_cosine, candidate_recall=candidate_recall
    )
    codes = fingerprint_batch(batch, bits=bits, seed=0)
    begin = time.perf_counter()
    graph = join_with_features(
        codes, features.sizes > 0, lambda c: near_duplicate_graph(c, max_distance=limit.radius)
    )
    groups = graph.to_groups()
    rows = graph.candidate_documents()
    local = features.take(rows)
    found = verify_candidates(groups, local, rows, min_cosine=min_cosine) if verified else None
    method = "star" if verified else "components"
    clusters = cluster_documents(graph, features.take, limit, method=method)
    seconds = time.perf_counter() - begin
    pairs = groups.pairs() if found is None else found.document_pairs()[0]
    removed = ~clusters.keep
    row = {
        "radius": limit.radius,
        "seconds": seconds,
        "candidate_pairs": len(groups.pairs()) if n < 200_000 else None,
        "removed": int(removed.sum()),
        "largest_cluster": int(np.bincount(clusters.labels).max()) if n else 0,
        "removed_below_threshold": clusters.below_threshold,
        "lowest_similarity_to_kept": (
            float(np.nanmin(clusters.similarity[removed])) if removed.any() else None
        ),
    }
    return row, clusters.keep, pairs[:, 0] * n + pairs[:, 1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", nargs="?", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--bits", type=int, nargs="+", default=[64, 128, 256, 512])
    parser.add_argument("--features", nargs="+", default=list(FEATURES), choices=list(FEATURES))
    parser.add_argument(
        "--datasets",
        nargs="+",
        default=["sample", "synthetic", "pypi"],
        choices=["sample", "synthetic", "pypi"],
    )
    parser.add_argument("--min-cosine", default="0.8")
    parser.add_argument("--candidate-recall", type=float, default=0.99)
    parser.add_argument("--synthetic-docs", type=int, default=50_000)
    parser.add_argument("--pypi-docs", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=0, help="seed of the PyPI sample")
    parser.add_argument("--out", help="result file name (default: quality_<min cosine>.json)")
    args = parser.parse_args()
    threshold = Fraction(args.min_cosine)
    min_cosine = float(threshold)
    results = []
    for dataset in args.datasets:
        if dataset == "sample":
            docs, groups = load_sample()
        elif dataset == "synthetic":
            docs, groups = load_synthetic(args.synthetic_docs)
        else:
            docs, groups = load_pypi(args.corpus, args.pypi_docs, args.seed), None
        for name in args.features:
            featurizer = FEATURES[name]()
            batch = featurize(docs, featurizer)
            features = DocumentFeatures.from_batch(batch)
            truth = identical = None
            if groups is None:
                truth, identical = exact_truth(docs, featurizer, threshold)
            for bits in args.bits:
                for verified in (False, True):
                    row, kept, keys = dedup(
                        features, batch, bits, min_cosine, verified, args.candidate_recall
                    )
                    row = {
                        "dataset": dataset,
                        "n_docs": len(docs),
                        "features": name,
                        "bits": bits,
                        "verified": verified,
                        **row,
                    }
                    if groups is not None:
                        scores = removal_scores(groups, kept)
                        row["removal_precision"] = scores["removal_precision"]
                        row["removal_recall"] = scores["removal_recall"]
                    else:
                        hits = np.isin(truth, keys)
                        row["true_pairs"] = int(truth.size)
                        row["pairs_found"] = int(keys.size)
                        row["pair_precision"] = float(hits.sum() / keys.size) if keys.size else 1.0
                        row["pair_recall"] = float(hits.mean()) if truth.size else 1.0
                        row["pair_recall_not_identical"] = (
                            float(hits[~identical].mean()) if (~identical).any() else 1.0
                        )
                    results.append(row)
                    print(json.dumps(row), flush=True)
    settings = {
        "min_cosine": min_cosine,
        "candidate_recall": args.candidate_recall,
        "pypi_docs": args.pypi_docs,
        "pypi_sample_seed": args.seed,
        "synthetic_docs": args.synthetic_docs,
        "synthetic_seed": 1,
    }
    name = args.out or f"quality_{args.min_cosine}.json"
    target = write_json(name, {"settings": settings, "results": results})
    print(f"wrote {target}")


if __name__ == "__main__":
    main()

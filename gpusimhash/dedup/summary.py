"""``summary.json``: a run's settings, results, timings and files, as one JSON-safe dict.

`run_summary` describes the settings and results, `finish_summary` adds the timings once the
last stage is done; the keys are documented in the README's "Reading the summary".
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from gpusimhash import _compile_time
from gpusimhash.cluster._pairs import cluster_summary
from gpusimhash.dedup.options import DedupOptions
from gpusimhash.dedup.results import Clusters, Fingerprints
from gpusimhash.dedup.timer import StageTimer
from gpusimhash.fingerprinting import FingerprintSettings
from gpusimhash.io.sources import Source
from gpusimhash.join._graph import CodeGraph
from gpusimhash.join._groups import DuplicateGroups
from gpusimhash.verify._threshold import Threshold


def run_summary(
    source: Source,
    settings: FingerprintSettings,
    options: DedupOptions,
    device: str,
    limit: Threshold,
    graph: CodeGraph,
    first: Fingerprints,
    clusters: Clusters,
) -> dict[str, Any]:
    """Describe the run's settings and results (the caller adds timings and files)."""
    n, sizes, kept = first.codes.shape[0], clusters.sizes, clusters.kept
    featurizer, recall, radius = settings.featurizer, options.recall, limit.radius
    removed = ~kept
    return {
        "input": source.name,
        "settings": {
            "bits": settings.bits,
            "seed": settings.seed,
            "device": device,
            "analyzer": featurizer.analyzer,
            "ngram": featurizer.ngram,
            "weighting": featurizer.weighting,
            "max_distance": radius,
            "join": "exact" if recall is None else f"approximate, recall >= {recall}",
            "min_estimated_cosine": float(np.cos(np.pi * radius / settings.bits)),
            "verify": limit.verify,
            "similarity": limit.measure,
            "threshold": limit.value,
            "candidate_recall": (
                options.candidate_recall if limit.verify and options.max_distance is None else None
            ),
            "cluster": options.cluster,
            "empty_as_duplicates": options.empty_as_duplicates,
            "keep": options.keep,
        },
        "results": {
            "documents": n,
            "kept": int(kept.sum()),
            "removed": int(n - kept.sum()),
            "clusters": int((sizes > 1).sum()),
            "largest_cluster": int(sizes.max()) if n else 0,
            "lowest_similarity_to_kept": (
                float(np.nanmin(clusters.similarity[removed])) if removed.any() else None
            ),
            "removed_below_threshold": clusters.below_threshold,
            "distinct_codes": graph.n_unique,
            "skipped_invalid": source.skipped.count if source.skipped else 0,
        },
        "skipped": source.skipped.examples if source.skipped else [],
        "ground_truth": None,
        "cluster_sizes": cluster_summary(clusters.labels).to_dict()["size_counts"],
    }


def finish_summary(summary: dict[str, Any], timer: StageTimer, start: float, n: int) -> None:
    """Add the total time, the throughput (compile time left out) and each stage's time."""
    total = time.perf_counter() - start
    # compiling Numba loops (a first run without a cache) is not the documents' cost
    compiling = min(_compile_time.seconds() - timer.compiled_before, total)
    summary["results"]["seconds"] = round(total, 3)
    working = total - compiling
    summary["results"]["documents_per_second"] = round(n / working, 1) if working else 0.0
    timings = {**timer.seconds, "compile": compiling, "total": total}
    summary["timings_s"] = {k: round(v, 4) for k, v in timings.items()}


def count_pairs(groups: DuplicateGroups) -> int:
    """Count the document pairs within the radius, without expanding them."""
    sizes = np.bincount(groups.inverse) if groups.inverse.size else np.zeros(0, np.int64)
    same = int((sizes * (sizes - 1) // 2).sum())
    if not len(groups.unique_pairs):
        return same
    return same + int((sizes[groups.unique_pairs[:, 0]] * sizes[groups.unique_pairs[:, 1]]).sum())

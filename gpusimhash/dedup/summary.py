"""``summary.json``: a run's settings, results, timings and files, as one JSON-safe dict.

`run_summary` describes the settings and results, `finish_summary` adds the timings once the
last stage is done; the keys are documented in the dedup guide (``docs/dedup.md``, "Reading the
output").
"""

from __future__ import annotations

import time
from dataclasses import dataclass
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


def settings_summary(
    settings: FingerprintSettings,
    options: DedupOptions,
    limit: Threshold,
    *,
    device: str | None = None,
) -> dict[str, Any]:
    """Describe the ``settings`` of a summary, on one machine (with its device) or a cluster.

    Examples
    --------
    >>> from gpusimhash.dedup.options import DedupOptions
    >>> options = DedupOptions()
    >>> summary = settings_summary(FingerprintSettings(bits=64), options, options.threshold(64))
    >>> summary["candidates"], summary["max_distance"], "device" in summary
    ('features', None, False)
    >>> options = DedupOptions(candidates="codes")
    >>> settings_summary(FingerprintSettings(bits=64), options, options.threshold(64))["max_distance"]
    21
    """
    featurizer, radius, recall = settings.featurizer, limit.radius, options.recall
    where = {} if device is None else {"device": device}
    codes = options.candidate_source(limit, device or "cpu") == "codes"
    return {
        "bits": settings.bits,
        "seed": settings.seed,
        **where,
        "analyzer": featurizer.analyzer,
        "ngram": featurizer.ngram,
        "weighting": featurizer.weighting,
        "candidates": "codes" if codes else "features",
        "max_distance": radius if codes else None,
        "join": "exact" if recall is None else f"approximate, recall >= {recall}",
        "min_estimated_cosine": float(np.cos(np.pi * radius / settings.bits)) if codes else None,
        "verify": limit.verify,
        "similarity": limit.measure,
        "threshold": limit.value,
        "candidate_recall": (
            options.candidate_recall
            if codes and limit.verify and options.max_distance is None
            else None
        ),
        "cluster": options.cluster,
        "empty_as_duplicates": options.empty_as_duplicates,
        "keep": options.keep,
    }


def removal_results(
    *,
    documents: int,
    removed: int,
    clusters: int,
    largest_cluster: int,
    lowest_similarity: float | None,
    below_threshold: int,
    distinct_codes: int,
) -> dict[str, Any]:
    """Describe the ``results`` every run reports first: what was removed, and how close."""
    return {
        "documents": documents,
        "kept": documents - removed,
        "removed": removed,
        "clusters": clusters,
        "largest_cluster": largest_cluster,
        "lowest_similarity_to_kept": lowest_similarity,
        "removed_below_threshold": below_threshold,
        "distinct_codes": distinct_codes,
    }


@dataclass(frozen=True)
class RunCounts:
    """What a run counted besides its clusters, for the summary.

    Attributes
    ----------
    estimated_candidate_pairs : int or None
        The guard rail's estimate, before a join of the codes (None for the features).
    index_results : dict
        What ``--against`` matched (`gpusimhash.dedup.against.Against.summary`), else empty.
    pairs_verified : int
        Pairs of units compared on their features.
    near_duplicate_pairs : int or None
        Document pairs at or above the threshold, where every candidate was verified.
    """

    estimated_candidate_pairs: int | None
    index_results: dict[str, Any]
    pairs_verified: int
    near_duplicate_pairs: int | None


def run_summary(
    source: Source,
    settings: FingerprintSettings,
    options: DedupOptions,
    device: str,
    limit: Threshold,
    graph: CodeGraph,
    first: Fingerprints,
    clusters: Clusters,
    counts: RunCounts,
    ground_truth: dict[str, Any] | None,
    files: dict[str, str],
) -> dict[str, Any]:
    """Describe a run's settings and results on one machine (`finish_summary` adds timings)."""
    n, sizes, kept = first.codes.shape[0], clusters.sizes, clusters.kept
    removed = ~kept
    results = removal_results(
        documents=n,
        removed=int(n - kept.sum()),
        clusters=int((sizes > 1).sum()),
        largest_cluster=int(sizes.max()) if n else 0,
        lowest_similarity=(
            float(np.nanmin(clusters.similarity[removed])) if removed.any() else None
        ),
        below_threshold=clusters.below_threshold,
        distinct_codes=graph.n_unique,
    )
    summary: dict[str, Any] = {
        "input": source.name,
        "settings": {
            **settings_summary(settings, options, limit, device=device),
            "estimated_candidate_pairs": counts.estimated_candidate_pairs,
        },
        "results": {
            **results,
            "skipped_invalid": source.skipped.count if source.skipped else 0,
            **counts.index_results,
            "candidate_pairs": graph.document_pairs(),
            "candidate_code_pairs": graph.n_pairs,
            "pairs_verified": counts.pairs_verified,
            "near_duplicate_pairs": counts.near_duplicate_pairs,
            "featureless_documents": int(n - first.has_features.sum()),
        },
        "skipped": [source.shown_in(e) for e in source.skipped.examples] if source.skipped else [],
        "ground_truth": ground_truth,
        "cluster_sizes": cluster_summary(clusters.labels).to_dict()["size_counts"],
    }
    if clusters.below_threshold:
        summary["warnings"] = [
            (
                f"{clusters.below_threshold:,} removed documents are below the {limit.measure} "
                f"threshold {limit.value:g} against the document kept for them (lowest "
                f"{results['lowest_similarity_to_kept']:.3f}): clusters chain; star clusters of "
                "verified pairs never do"
            )
        ]
    summary["files"] = files
    return summary


def finish_summary(summary: dict[str, Any], timer: StageTimer, start: float, n: int) -> None:
    """Add the total time, the throughputs and each stage's time.

    ``documents_per_second`` is the documents over ``seconds``, the whole run's wall-clock time,
    compiling included: what a user timing the run sees. ``compile_seconds`` is the part of it
    spent compiling Numba loops (only the codes' multi-index hashing join, on a first run
    without a cache; 0 once they are cached, and always 0 for the feature join), and
    ``documents_per_second_excluding_compile`` the throughput without it, the figure the next
    runs reach.
    """
    total = time.perf_counter() - start
    compiling = min(_compile_time.seconds() - timer.compiled_before, total)
    working = total - compiling
    results = summary["results"]
    results["seconds"] = round(total, 3)
    results["compile_seconds"] = round(compiling, 3)
    results["documents_per_second"] = round(n / total, 1) if total else 0.0
    results["documents_per_second_excluding_compile"] = round(n / working, 1) if working else 0.0
    timings = {**timer.seconds, "compile": compiling, "total": total}
    summary["timings_s"] = {k: round(v, 4) for k, v in timings.items()}


def count_pairs(groups: DuplicateGroups) -> int:
    """Count the document pairs within the radius, without expanding them."""
    sizes = np.bincount(groups.inverse) if groups.inverse.size else np.zeros(0, np.int64)
    same = int((sizes * (sizes - 1) // 2).sum())
    if not len(groups.unique_pairs):
        return same
    return same + int((sizes[groups.unique_pairs[:, 0]] * sizes[groups.unique_pairs[:, 1]]).sum())

"""Deduplicate a document file in bounded memory: two streaming passes around an in-memory join.

1. Read the file in batches and fingerprint each batch; only the codes (``bits / 8`` bytes per
   document) and, where asked for, text lengths, scores and ground-truth labels stay in memory.
2. Find every pair of codes within the radius (``near_duplicate_groups``: identical codes
   collapsed) and cluster them (connected components); keep one document per cluster.
3. Read the file again and write the kept documents, whole records, in input order, and a
   duplicates report: one line per cluster of two or more documents, with its members and their
   Hamming distances to the kept one.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from gpusimhash.clusters import POLICIES, cluster_summary, group_labels, keep_one
from gpusimhash.codes import estimate_cosine, hamming
from gpusimhash.fingerprint import fingerprint, resolve_device
from gpusimhash.lshjoin import approximate_near_duplicate_groups
from gpusimhash.neardup import near_duplicate_groups, resolve_radius
from gpusimhash.readers import InputError, read_batches
from gpusimhash.text import TextFeaturizer
from gpusimhash.writers import RecordWriter

SAMPLED_PAIRS = 1500
MAX_EVALUATED_PAIRS = 20_000_000


@dataclass
class DedupResult:
    """What a deduplication run found and wrote.

    Attributes
    ----------
    summary : dict
        ``input``, ``settings``, ``results``, ``ground_truth`` (or None), ``cluster_sizes``
        (number of clusters of each size), ``timings_s`` and ``files``: JSON-safe.
    codes : ndarray, shape (n, bits // 8), dtype uint8
        Every document's fingerprint, in input order.
    cluster : ndarray, shape (n,), dtype int64
        Cluster of each document (``-1`` for documents without a near-duplicate).
    kept : ndarray, shape (n,), dtype bool
        Which documents were written to the kept file.
    report_data : dict
        Arrays for the report's plots (see ``gpusimhash.report.write_report``).
    """

    summary: dict[str, Any]
    codes: np.ndarray
    cluster: np.ndarray
    kept: np.ndarray
    report_data: dict[str, np.ndarray] = field(default_factory=dict)


@dataclass
class _FirstPass:
    codes: np.ndarray
    lengths: np.ndarray
    scores: np.ndarray | None
    truth: np.ndarray | None


def _progress(progress: Callable[..., Any] | None, **kwargs: Any) -> Any:
    """Return a progress bar from the factory, or a disabled tqdm bar (does nothing)."""
    if progress is None:
        return tqdm(disable=True)
    return progress(**kwargs)


def _labels(values: list[Any], table: dict[Any, int], where: str) -> np.ndarray:
    """Map ground-truth labels (any hashable JSON scalar) to small integers."""
    out = np.empty(len(values), dtype=np.int64)
    for k, value in enumerate(values):
        if isinstance(value, dict | list):
            raise InputError(
                f"{where}: ground-truth label must be a scalar, got {type(value).__name__}"
            )
        out[k] = table.setdefault(value, len(table))
    return out


def _first_pass(path, read, featurizer, bits, seed, device, truth_field, score_field, bar):
    """Fingerprint every document; keep codes, lengths, scores and labels."""
    codes, lengths, scores, truth = [], [], [], []
    table: dict[Any, int] = {}
    need_records = truth_field is not None or score_field is not None
    for batch in read(records=need_records):
        codes.append(
            fingerprint(batch.texts, bits=bits, seed=seed, device=device, featurizer=featurizer)
        )
        lengths.append(np.fromiter(map(len, batch.texts), dtype=np.int64, count=len(batch)))
        if truth_field is not None:
            values = [_record_value(path, batch, k, truth_field) for k in range(len(batch))]
            truth.append(_labels(values, table, str(path)))
        if score_field is not None:
            scores.append(_scores(path, batch, score_field))
        bar.update(len(batch))
    width = bits // 8
    return _FirstPass(
        codes=np.concatenate(codes) if codes else np.zeros((0, width), np.uint8),
        lengths=np.concatenate(lengths) if lengths else np.zeros(0, np.int64),
        scores=(np.concatenate(scores) if scores else np.zeros(0)) if score_field else None,
        truth=(np.concatenate(truth) if truth else np.zeros(0, np.int64)) if truth_field else None,
    )


def _record_value(path, batch, k, field_name) -> Any:
    """Return a field of a record, or raise naming the row."""
    record = batch.records[k]
    if field_name not in record:
        raise InputError(
            f"{path}, document {int(batch.rows[k])}: no field {field_name!r} "
            f"(fields: {', '.join(sorted(record))})"
        )
    return record[field_name]


def _scores(path, batch, field_name) -> np.ndarray:
    """Return the numeric score of every record of a batch."""
    out = np.empty(len(batch))
    for k in range(len(batch)):
        value = _record_value(path, batch, k, field_name)
        if isinstance(value, str):
            try:
                value = float(value)
            except ValueError:
                value = None
        if isinstance(value, bool) or not isinstance(value, int | float) or not np.isfinite(value):
            raise InputError(
                f"{path}, document {int(batch.rows[k])}: score field {field_name!r} must be a "
                f"finite number, got {value!r}"
            )
        out[k] = value
    return out


def dedup_file(
    path: str | Path,
    out_dir: str | Path,
    *,
    format: str | None = None,
    text_field: str = "text",
    id_field: str | None = None,
    truth_field: str | None = None,
    score_field: str | None = None,
    bits: int = 64,
    seed: int = 0,
    device: str = "auto",
    featurizer: TextFeaturizer | None = None,
    max_distance: int | None = None,
    min_cosine: float | None = None,
    recall: float | None = None,
    keep: str = "first",
    output_format: str = "jsonl",
    batch_size: int = 10_000,
    progress: Callable[..., Any] | None = None,
) -> DedupResult:
    """Remove near-duplicate documents from a file, streaming it twice.

    Parameters
    ----------
    path : str or Path
        Input file (see ``gpusimhash.readers``).
    out_dir : str or Path
        Folder for ``kept.<fmt>`` and ``duplicates.<fmt>`` (created if missing).
    format, text_field, id_field, batch_size
        How to read the input (``read_batches``).
    truth_field : str, optional
        Field with ground-truth group labels: precision and recall are added to the summary.
    score_field : str, optional
        Numeric field for ``keep="score"``.
    bits, seed, device, featurizer
        How to fingerprint (``gpusimhash.fingerprint``).
    max_distance, min_cosine
        The near-duplicate threshold: give one (a Hamming radius or a minimum estimated cosine).
    recall : float, optional
        Use the approximate join (``approximate_near_duplicate_groups``): every pair within the
        radius is found with at least this probability, and no pair beyond it is reported.
        Default: the exact join. Pays off for large radii over large corpora.
    keep : {"first", "longest", "score"}
        Which document of a cluster is kept: the first in the file, the longest text, or the
        highest ``score_field`` (ties go to the first).
    output_format : {"jsonl", "parquet"}
        Format of the two output files.
    progress : callable, optional
        ``tqdm``-like factory ``progress(total=..., desc=...)`` for progress bars.

    Returns
    -------
    DedupResult

    Raises
    ------
    InputError
        A problem with the input file (names file, line and field).
    ValueError
        A bad option.
    """
    if keep not in POLICIES:
        raise ValueError(f"keep must be one of {', '.join(POLICIES)}, got {keep!r}")
    if keep == "score" and score_field is None:
        raise ValueError("keep='score' needs a score field")
    path, out_dir = Path(path), Path(out_dir)
    radius = resolve_radius(bits, max_distance=max_distance, min_cosine=min_cosine)
    engine = resolve_device(device)
    featurizer = TextFeaturizer() if featurizer is None else featurizer
    out_dir.mkdir(parents=True, exist_ok=True)
    timings: dict[str, float] = {}

    def read(records: bool):
        return read_batches(
            path,
            format=format,
            text_field=text_field,
            id_field=id_field,
            batch_size=batch_size,
            records=records,
        )

    start = time.perf_counter()
    if featurizer.weighting == "tfidf" and not featurizer.is_fitted:
        with _progress(progress, desc="fit tf-idf", unit="doc") as bar:
            featurizer.fit(_texts_with_progress(read(False), bar))
        timings["fit_tfidf"] = time.perf_counter() - start
    begin = time.perf_counter()
    with _progress(progress, desc="fingerprint", unit="doc") as bar:
        first = _first_pass(
            path, read, featurizer, bits, seed, engine, truth_field, score_field, bar
        )
    timings["fingerprint"] = time.perf_counter() - begin
    n = first.codes.shape[0]

    begin = time.perf_counter()
    if recall is None:
        groups = near_duplicate_groups(first.codes, max_distance=radius)
    else:
        groups = approximate_near_duplicate_groups(first.codes, max_distance=radius, recall=recall)
    timings["join"] = time.perf_counter() - begin
    begin = time.perf_counter()
    labels = group_labels(groups)
    sizes = np.bincount(labels, minlength=int(labels.max()) + 1 if n else 0)
    kept = keep_one(labels, policy=keep, lengths=first.lengths, scores=first.scores)
    kept_rows = np.empty(sizes.size, dtype=np.int64)
    kept_rows[labels[kept]] = np.flatnonzero(kept)
    in_cluster = sizes[labels] > 1 if n else np.zeros(0, dtype=bool)
    timings["cluster"] = time.perf_counter() - begin

    sample = _sample_pairs(groups, first.codes, seed)
    begin = time.perf_counter()
    with _progress(progress, desc="write", unit="doc", total=n) as bar:
        files, ids, texts = _second_pass(
            path, read, out_dir, output_format, kept, in_cluster, set(sample["rows"].tolist()), bar
        )
    cluster = _write_duplicates(
        out_dir, output_format, labels, sizes, kept_rows, in_cluster, ids, first.codes, files
    )
    timings["write"] = time.perf_counter() - begin
    timings["total"] = time.perf_counter() - start

    from gpusimhash.report import true_cosines

    a, b = sample["pairs"][:, 0], sample["pairs"][:, 1]
    true = true_cosines(featurizer, [texts[r] for r in a], [texts[r] for r in b])
    estimated = estimate_cosine(first.codes[a], first.codes[b]) if a.size else np.zeros(0)
    report_data = {
        "found_distances": sample["found_distances"],
        "random_distances": sample["random_distances"],
        "estimated": estimated,
        "true": true,
        "sampled_found": sample["found"],
        "cluster_sizes": sizes[sizes > 1],
    }
    n_pairs = _count_pairs(groups)
    summary = {
        "input": str(path),
        "settings": {
            "bits": bits,
            "seed": seed,
            "device": engine,
            "analyzer": featurizer.analyzer,
            "ngram": featurizer.ngram,
            "weighting": featurizer.weighting,
            "max_distance": radius,
            "join": "exact" if recall is None else f"approximate, recall >= {recall}",
            "min_estimated_cosine": float(np.cos(np.pi * radius / bits)),
            "keep": keep,
        },
        "results": {
            "documents": n,
            "kept": int(kept.sum()),
            "removed": int(n - kept.sum()),
            "clusters": int((sizes > 1).sum()),
            "largest_cluster": int(sizes.max()) if n else 0,
            "distinct_codes": groups.n_unique,
            "near_duplicate_pairs": n_pairs,
            "seconds": round(timings["total"], 3),
            "documents_per_second": round(n / timings["total"], 1) if timings["total"] else 0.0,
        },
        "ground_truth": _evaluate(groups, first.truth, kept, n_pairs) if truth_field else None,
        "cluster_sizes": cluster_summary(labels).to_dict()["size_counts"],
        "timings_s": {k: round(v, 4) for k, v in timings.items()},
        "files": files,
    }
    return DedupResult(summary, first.codes, cluster, kept, report_data)


def _texts_with_progress(batches, bar):
    """Yield every text of a stream of batches, counting them on a progress bar."""
    for batch in batches:
        yield from batch.texts
        bar.update(len(batch))


def _count_pairs(groups) -> int:
    """Count the document pairs within the radius, without expanding them."""
    sizes = np.bincount(groups.inverse) if groups.inverse.size else np.zeros(0, np.int64)
    same = int((sizes * (sizes - 1) // 2).sum())
    if not len(groups.unique_pairs):
        return same
    return same + int((sizes[groups.unique_pairs[:, 0]] * sizes[groups.unique_pairs[:, 1]]).sum())


def _sample_pairs(groups, codes: np.ndarray, seed: int) -> dict[str, np.ndarray]:
    """Pick near-duplicate pairs and random pairs for the report's plots."""
    rng = np.random.default_rng(seed)
    n = codes.shape[0]
    first_row = np.full(groups.n_unique, -1, dtype=np.int64)
    first_row[groups.inverse[::-1]] = np.arange(n)[::-1]
    found = first_row[groups.unique_pairs] if len(groups.unique_pairs) else np.zeros((0, 2), int)
    sizes = np.bincount(groups.inverse) if n else np.zeros(0, np.int64)
    repeated = np.flatnonzero(sizes > 1)
    second_row = np.full(groups.n_unique, -1, dtype=np.int64)
    if repeated.size:
        order = np.argsort(groups.inverse, kind="stable")
        starts = np.cumsum(sizes) - sizes
        second_row[repeated] = order[starts[repeated] + 1]
    identical = np.stack([first_row[repeated], second_row[repeated]], axis=1)
    all_found = np.concatenate([found, identical]).astype(np.int64)
    distances = (
        hamming(codes[all_found[:, 0]], codes[all_found[:, 1]]) if len(all_found) else np.zeros(0)
    )
    if len(all_found) > SAMPLED_PAIRS:
        all_found = all_found[rng.choice(len(all_found), SAMPLED_PAIRS, replace=False)]
    random = rng.integers(0, n, size=(SAMPLED_PAIRS if n > 1 else 0, 2))
    random = random[random[:, 0] != random[:, 1]]
    random_distances = (
        hamming(codes[random[:, 0]], codes[random[:, 1]]) if len(random) else (np.zeros(0))
    )
    pairs = np.concatenate([all_found, random]).astype(np.int64)
    return {
        "pairs": pairs,
        "found": np.r_[np.ones(len(all_found), bool), np.zeros(len(random), bool)],
        "rows": np.unique(pairs),
        "found_distances": np.asarray(distances),
        "random_distances": np.asarray(random_distances),
    }


def _second_pass(path, read, out_dir, output_format, kept, in_cluster, wanted_rows, bar):
    """Write the kept records; collect ids of clustered rows and texts of sampled rows."""
    kept_path = out_dir / f"kept.{output_format}"
    ids: dict[int, Any] = {}
    texts: dict[int, str] = {}
    writer_rows = 0
    with RecordWriter(kept_path, output_format) as writer:
        for batch in read(True):
            rows = batch.rows
            writer_rows += len(batch)
            if writer_rows > len(kept):
                break
            mask = kept[rows]
            writer.write([batch.records[k] for k in np.flatnonzero(mask)])
            for k in np.flatnonzero(in_cluster[rows]):
                ids[int(rows[k])] = batch.ids[k]
            for k, row in enumerate(rows.tolist()):
                if row in wanted_rows:
                    texts[row] = batch.texts[k]
            bar.update(len(batch))
    if writer_rows != len(kept):
        raise InputError(
            f"{path}: changed while it was read ({len(kept)} documents, then {writer_rows})"
        )
    files = {kept_path.name: f"the {writer.count:,} kept documents, whole records, in input order"}
    return files, ids, texts


def _write_duplicates(
    out_dir, output_format, labels, sizes, kept_rows, in_cluster, ids, codes, files
):
    """Write one record per cluster of two or more documents; return per-document cluster ids."""
    path = out_dir / f"duplicates.{output_format}"
    rows = np.flatnonzero(in_cluster)
    rows = rows[np.argsort(labels[rows], kind="stable")]
    cluster = np.full(labels.size, -1, dtype=np.int64)
    big = np.flatnonzero(sizes > 1)
    report_id = np.full(sizes.size, -1, dtype=np.int64)
    report_id[big] = np.arange(big.size)
    cluster[rows] = report_id[labels[rows]]
    starts = np.searchsorted(labels[rows], big)
    ends = np.append(starts[1:], rows.size)[: starts.size]
    with RecordWriter(path, output_format) as writer:
        records = []
        for number, (label, lo, hi) in enumerate(zip(big, starts, ends, strict=True)):
            members = rows[lo:hi]
            kept = kept_rows[label]
            distances = hamming(codes[members], np.broadcast_to(codes[kept], codes[members].shape))
            records.append(
                {
                    "cluster": number,
                    "size": int(members.size),
                    "kept_id": ids[int(kept)],
                    "kept_row": int(kept),
                    "ids": [ids[int(r)] for r in members],
                    "rows": members.tolist(),
                    "distances": distances.astype(int).tolist(),
                }
            )
            if len(records) == 10_000:
                writer.write(records)
                records = []
        writer.write(records)
    files[path.name] = (
        f"{big.size:,} clusters of near-duplicates: ids, rows and Hamming distance of every "
        "member to the kept one"
    )
    return cluster


def _evaluate(groups, truth: np.ndarray, kept: np.ndarray, n_pairs: int) -> dict[str, Any]:
    """Precision and recall of pairs and of removals against ground-truth labels."""
    from gpusimhash.synth import pair_scores

    n = truth.size
    group_sizes = np.bincount(truth) if n else np.zeros(0, np.int64)
    is_duplicate = group_sizes[truth] > 1 if n else np.zeros(0, bool)
    # the ground truth keeps one document per group: the rest should be removed
    should_remove = int((group_sizes[group_sizes > 1] - 1).sum())
    removed = ~kept
    # a removed document is correct if its group keeps some other member
    kept_per_group = np.bincount(truth[kept], minlength=group_sizes.size) if n else group_sizes
    correct = removed & is_duplicate & (kept_per_group[truth] >= 1)
    result: dict[str, Any] = {
        "true_groups_with_duplicates": int((group_sizes > 1).sum()),
        "documents_to_remove": should_remove,
        "removed_correctly": int(correct.sum()),
        "removal_precision": float(correct.sum() / removed.sum()) if removed.any() else 1.0,
        "removal_recall": float(correct.sum() / should_remove) if should_remove else 1.0,
    }
    if n_pairs <= MAX_EVALUATED_PAIRS:
        scores = pair_scores(groups.pairs(), truth)
        result.update(
            {
                "true_pairs": scores["true_pairs"],
                "pairs_found": scores["predicted_pairs"],
                "pair_precision": scores["precision"],
                "pair_recall": scores["recall"],
            }
        )
    return result

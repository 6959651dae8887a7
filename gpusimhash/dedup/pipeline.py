"""Deduplicate a document file in bounded memory, as named stages around an in-memory join.

The stages, each timed by `StageTimer` and recorded in the summary's ``timings_s``:

1. ``fingerprint``: read the file in batches (after a ``fit_tfidf`` pass for tf-idf weighting)
   and fingerprint each batch; only the codes (``bits / 8`` bytes per document), whether each
   document has features and, where asked for, text lengths, scores and ground-truth labels
   stay in memory. Each batch's merged features go to temporary files
   (`gpusimhash.verify._spill`: 12 bytes per distinct feature and 24 per document).
2. ``join``: the candidate pairs (`gpusimhash.dedup.candidates`), identical codes collapsed
   and featureless documents left out, as an int32 adjacency of distinct codes
   (`gpusimhash.join.CodeGraph`). From the features: every pair of documents at or above
   the threshold, by the exact feature join on the documents' features read back from the
   spill (more passing pairs than the budget are refused unless forced). From the codes: the
   pairs of distinct codes the radius would produce are estimated from sampled degrees, and
   a radius over budget is refused unless forced (and one whose pairs cannot fit in the
   memory available, always); then every pair of distinct codes within the radius, exactly
   or with the approximate join.
3. ``verify``: with verification, the features of the documents in candidate pairs (only
   those) are read back, and the clustering verifies the candidate pairs it needs on them
   (`gpusimhash.cluster._graph`: star clusters, or components, exactly those of
   verifying every pair); without, the clusters come from the graph. Every removed document's
   exact similarity to its kept one is measured, and those below the threshold are counted
   (zero for verified stars). With ground truth, every candidate pair is also verified
   (`gpusimhash.verify._units.verify_candidates`) for the pair scores.
4. ``cluster``: cluster sizes, kept documents and membership.
5. ``write``: read the file again and write the kept documents, whole records, in input order,
   and a duplicates file (one line per cluster of two or more documents, with its members,
   their Hamming distances and their exact similarities to the kept one).
6. ``report`` (only when asked): sampled pairs, their true cosines and ``report.md`` with plots.

Every run writes ``summary.json`` last (``summary``); the record files are written by
``outputs``, the report by ``report``, and their names are those of ``gpusimhash._output_names``.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from gpusimhash._memory import MemoryRefusal
from gpusimhash.cluster._documents import Clustering, cluster_documents
from gpusimhash.dedup import report
from gpusimhash.dedup.candidates import feature_graph
from gpusimhash.dedup.document_memory import check_longest, out_of_memory
from gpusimhash.dedup.options import DedupOptions
from gpusimhash.dedup.outputs import kept_schema, write_duplicates, write_kept, write_pairs
from gpusimhash.dedup.results import Clusters, DedupResult, Fingerprints
from gpusimhash.dedup.summary import RunCounts, count_pairs, finish_summary, run_summary
from gpusimhash.dedup.timer import Progress, StageTimer
from gpusimhash.evaluation import removal_scores
from gpusimhash.features import FeatureBatch
from gpusimhash.fingerprinting import FingerprintSettings, fingerprint_batch, resolve_device
from gpusimhash.io import consumed
from gpusimhash.io.lines import LineBatch
from gpusimhash.io.readers import DocumentBatch as Batch
from gpusimhash.io.records import (
    record_labels,
    record_scores,
    text_lengths,
    texts_with_progress,
)
from gpusimhash.io.sources import Source
from gpusimhash.io.writers import write_json
from gpusimhash.join._budget import check_budget
from gpusimhash.join._exact import near_duplicate_graph
from gpusimhash.join._graph import CodeGraph, join_with_features
from gpusimhash.join._groups import DuplicateGroups
from gpusimhash.text import TextFeaturizer
from gpusimhash.verify._features import DocumentFeatures
from gpusimhash.verify._spill import FeatureSpill, feature_spill
from gpusimhash.verify._threshold import Threshold
from gpusimhash.verify._units import VerifiedCandidates, verify_candidates

if TYPE_CHECKING:
    from gpusimhash.dedup.against import Against

__all__ = ["DedupOptions", "DedupResult", "StageTimer", "dedup_file", "run"]

# pairs expanded for the ground-truth pair scores at most (beyond, removal scores only)
_LOGGER = logging.getLogger(__name__)
MAX_EVALUATED_PAIRS = 20_000_000
# candidate pairs of distinct codes the report samples from, at most (unverified runs)
_REPORTED_CODE_PAIRS = 1 << 20


def dedup_file(
    path: str | Path | Sequence[str | Path],
    out_dir: str | Path,
    *,
    bits: int = 256,
    seed: int = 0,
    featurizer: TextFeaturizer | None = None,
    progress: Progress | None = None,
    **options: Any,
) -> DedupResult:
    r"""Remove near-duplicate documents from a file, streaming it twice.

    Parameters
    ----------
    path : str, Path or sequence of them
        Input file, or files read one after another as one corpus (see
        ``gpusimhash.io.readers``; `gpusimhash.io.inputs.input_files` expands folders and globs).
        Ids come from ``id_field``, else from an ``id`` field when the first record has one
        (an int or a str), else they are row numbers (counted across the files).
    out_dir : str or Path
        Folder for ``kept.<fmt>``, ``duplicates.<fmt>`` and ``summary.json`` (created if
        missing).
    bits, seed, featurizer
        How to fingerprint (`gpusimhash.FingerprintSettings`); 256 bits by default, as the
        ``gpusimhash dedup`` command.
    progress : callable, optional
        ``tqdm``-like factory ``progress(desc=..., unit=...)`` for progress bars.
    **options
        The fields of `DedupOptions`.

    Returns
    -------
    DedupResult

    Raises
    ------
    InputError
        A problem with the input file (names file, line and field).
    ValueError
        A bad option.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "in.txt").write_text("red fox\nblue sky\nred fox\n")
    >>> result = dedup_file(folder / "in.txt", folder / "out")
    >>> result.kept.tolist()
    [True, True, False]
    """
    settings = FingerprintSettings(
        bits=bits, seed=seed, featurizer=TextFeaturizer() if featurizer is None else featurizer
    )
    return run(path, out_dir, settings, DedupOptions(**options), progress=progress)


def run(
    path: str | Path | Sequence[str | Path],
    out_dir: str | Path,
    settings: FingerprintSettings,
    options: DedupOptions,
    *,
    progress: Progress | None = None,
    shown: dict[Path, str] | None = None,
) -> DedupResult:
    """Run every stage of a deduplication (see the module's description).

    Parameters
    ----------
    path : str, Path or sequence of them
        Input file, or files read as one corpus (as for `dedup_file`).
    out_dir : str or Path
        Output folder (created if missing).
    settings : FingerprintSettings
        Bits, seed and featurizer.
    options : DedupOptions
        Input, threshold, join, keep policy, outputs.
    progress : callable, optional
        ``tqdm``-like factory for progress bars.
    shown : dict, optional
        Names the summary and the report give some input files instead of their paths
        (standard input's temporary copy: ``<stdin>``).

    Returns
    -------
    DedupResult
    """
    source, out_dir = Source.of(path, options.reading, shown=shown), Path(out_dir)
    states = source.states()  # read more than once: no pipe, checked after the last read
    # before any work: inputs of different schemas
    schema = kept_schema(source, options.output_format, options.annotate)
    limit = options.threshold(settings.bits)
    checked: Against | None = None
    if options.against is not None:
        from gpusimhash.dedup.against import Against  # FAISS's index: only such a run loads it

        checked = Against.open(options.against, settings)
    device = resolve_device(options.device, uses=("fingerprint", "join"))
    out_dir.mkdir(parents=True, exist_ok=True)
    timer = StageTimer(progress)
    start = time.perf_counter()

    if settings.featurizer.weighting == "tfidf" and not settings.featurizer.is_fitted:
        with timer.stage("fit_tfidf") as bar:
            settings.featurizer.fit(texts_with_progress(source.batches(records=False), bar))
    with feature_spill() as spill:
        with timer.stage("fingerprint", unit="B") as bar:
            first = _fingerprint_pass(source, options, settings, device, bar, spill, limit)
        n = first.codes.shape[0]
        with timer.stage("join", unit="part"):
            has_features = first.has_features
            if options.candidate_source(limit, device) == "features":
                estimate = None
                rows = np.flatnonzero(has_features)
                graph = join_with_features(
                    first.codes,
                    has_features,
                    lambda codes: feature_graph(
                        codes,
                        spill.gather(rows, narrow=True),
                        limit,
                        max_pairs=None if options.force else options.max_candidate_pairs,
                    ),
                    empty_as_duplicates=options.empty_as_duplicates,
                )
            else:
                estimate = check_budget(
                    first.codes[has_features],
                    limit.radius,
                    force=options.force,
                    budget=options.max_candidate_pairs,
                )
                graph = join_with_features(
                    first.codes,
                    has_features,
                    lambda codes: _join(codes, limit.radius, options.recall, device),
                    empty_as_duplicates=options.empty_as_duplicates,
                )
        with timer.stage("verify", unit="part"):
            # every verified pair, only where the ground truth's pair scores or --pairs need them
            every_pair = first.truth is not None or options.pairs
            found = _verify(graph, spill, limit, options) if every_pair else None
            clustering = cluster_documents(
                graph,
                functools.partial(spill.gather, narrow=True),  # float32 weights where exact
                limit,
                method=options.cluster,
                policy=options.keep,
                lengths=first.lengths,
                scores=first.scores,
                empty_as_duplicates=options.empty_as_duplicates,
            )
    with timer.stage("cluster"):
        clusters = _clusters(clustering)
        if checked is not None:  # clusters whose kept document is indexed already go
            kept = checked.remove_indexed(
                first.codes,
                clusters.labels,
                clusters.kept,
                clusters.kept_rows,
                limit.measure,
                limit.value,
            )
            clusters = dataclasses.replace(clusters, kept=kept)
    sample = None
    if options.report:
        near = clustering.kept_pairs(graph.max_distance) if limit.verify else _sampled(graph)
        view = report.ClusterView(clusters.labels, clusters.kept_rows, clusters.similarity)
        sample = report.sample_pairs(near, first.codes, settings.seed, clusters=view)
    wanted = set(sample["rows"].tolist()) if sample is not None else set()
    files: dict[str, str] = {}
    with timer.stage("write", total=n) as bar:
        ids, texts = write_kept(
            source,
            out_dir,
            options.output_format,
            options.annotate,
            clusters,
            wanted,
            files,
            bar,
            schema,
        )
        cluster = write_duplicates(out_dir, options.output_format, clusters, ids, first, files)
    # every id (one more read of the input), or rows as ids
    every_id = (
        [i for batch in source.batches(records=False) for i in batch.ids]
        if source.id_field is not None and (checked is not None or options.pairs)
        else None
    )
    if checked is not None:
        name, what = checked.write(out_dir, options.output_format, every_id)
        files[name] = what
        if options.add_kept:
            checked.add(first.codes, clusters.kept, every_id)
    if options.pairs:
        near_pairs, similarity = (
            (graph.to_groups().pairs(), None) if found is None else found.document_pairs()
        )
        name, what = write_pairs(
            out_dir, options.output_format, near_pairs, similarity, first.codes, every_id
        )
        files[name] = what
    source.check(states)

    n_candidates = graph.document_pairs()
    if not limit.verify:
        n_pairs: int | None = n_candidates
    else:
        n_pairs = None if found is None else count_pairs(found.as_groups(limit.radius))
    ground_truth = None
    if first.truth is not None:
        pairs = None
        if n_pairs is not None and n_pairs <= MAX_EVALUATED_PAIRS:
            pairs = graph.to_groups().pairs() if found is None else found.document_pairs()[0]
        ground_truth = removal_scores(first.truth, clusters.kept, pairs)
    files["summary.json"] = "this summary, as JSON"
    summary = run_summary(
        source,
        settings,
        options,
        device,
        limit,
        graph,
        first,
        clusters,
        RunCounts(
            estimated_candidate_pairs=None if estimate is None else round(estimate),
            index_results={} if checked is None else checked.summary(),
            pairs_verified=clustering.pairs_verified,
            near_duplicate_pairs=n_pairs,
        ),
        ground_truth,
        files,
    )
    if sample is not None:
        with timer.stage("report", unit="pair"):
            files["report.md"] = "the report, with plots (PNG)"
            finish_summary(summary, timer, start, n)
            data = report.sampled_cosines(sample, texts, settings.featurizer, ids)
            report.write_report(
                out_dir, summary, **data, cluster_sizes=clusters.sizes[clusters.sizes > 1]
            )
    finish_summary(summary, timer, start, n)
    write_json(out_dir / "summary.json", summary)
    return DedupResult(summary, first.codes, cluster, clusters.kept)


# ---------------------------------------------------------------- stages


def _featurized(
    batch: Batch | LineBatch, settings: FingerprintSettings, limit: Threshold, device: str
) -> tuple[DocumentFeatures, np.ndarray]:
    """Return a batch's features and codes (of the feature sets for a Jaccard threshold)."""
    first_row = int(batch.rows[0]) if len(batch) else 0
    entries = settings.featurizer.transform(batch.texts, first_index=first_row)
    features = DocumentFeatures.from_batch(entries)
    if limit.measure == "jaccard":
        entries = FeatureBatch(features.states, features.offsets, None)
    if limit.measure == "jaccard" or device == "cpu":
        return features, fingerprint_batch(entries, device, bits=settings.bits, seed=settings.seed)
    return features, settings.fingerprint(batch.texts, device=device)


def _fingerprint_pass(
    source: Source,
    options: DedupOptions,
    settings: FingerprintSettings,
    device: str,
    bar: Any,
    spill: FeatureSpill,
    limit: Threshold,
) -> Fingerprints:
    """Fingerprint every document and spill its features; keep codes, lengths, scores, labels.

    Text is featurized once on the CPU for the features; the CPU fingerprints come from that
    same batch (as `gpusimhash.fingerprint` computes them), the GPU featurizes on its own. A
    Jaccard threshold fingerprints the feature sets (every weight 1). The bar counts the input
    files' bytes (compressed bytes for ``.gz``), its total their sizes: it has an ETA.
    """
    codes, lengths, scores, truth, featured = [], [], [], [], []
    table: dict[Any, int] = {}
    need_records = options.truth_field is not None or options.score_field is not None
    bar.unit, bar.unit_scale = "B", True
    bar.total, done = sum(path.stat().st_size for path in source.paths), 0
    bar.refresh()
    with consumed.counting() as read:
        for batch in source.fingerprint_batches(records=need_records):
            check_longest(batch, source.where)
            try:
                features, batch_codes = _featurized(batch, settings, limit, device)
            except MemoryError as error:
                if isinstance(error, MemoryRefusal):
                    raise
                raise out_of_memory(batch, source.where) from None
            spill.append(features)
            featured.append(features.sizes > 0)
            codes.append(batch_codes)
            if options.keep == "longest":
                lengths.append(text_lengths(batch))
            # labels and scores: fields of records (asked for, so never plain text as bytes)
            if options.truth_field is not None and isinstance(batch, Batch):
                truth.append(record_labels(source.where, batch, options.truth_field, table))
            if options.score_field is not None and isinstance(batch, Batch):
                scores.append(record_scores(source.where, batch, options.score_field))
            bar.update(read.bytes - done)
            done = read.bytes
        bar.update(read.bytes - done)  # the last file's end, after its last batch
    return Fingerprints(
        codes=np.concatenate(codes) if codes else np.zeros((0, settings.bits // 8), np.uint8),
        lengths=_stack(lengths, np.int64) if options.keep == "longest" else None,
        scores=_stack(scores, np.float64) if options.score_field else None,
        truth=_stack(truth, np.int64) if options.truth_field else None,
        has_features=_stack(featured, np.bool_),
    )


def _join(codes: np.ndarray, radius: int, recall: float | None, device: str) -> CodeGraph:
    """Every pair of codes within the radius: exact (on ``device``), or approximate (CPU)."""
    device = device if recall is None else "cpu"
    return near_duplicate_graph(codes, max_distance=radius, recall=recall, device=device)


def _sampled(graph: CodeGraph) -> DuplicateGroups:
    """At most ``_REPORTED_CODE_PAIRS`` candidate pairs of distinct codes, for the report."""
    return graph.to_groups(limit=_REPORTED_CODE_PAIRS)


def _verify(
    graph: CodeGraph, spill: FeatureSpill, limit: Threshold, options: DedupOptions
) -> VerifiedCandidates | None:
    """Verify every candidate pair on the documents' features (None without verification)."""
    if not limit.verify:
        return None
    rows = graph.candidate_documents()
    return verify_candidates(
        graph.to_groups(),
        spill.gather(rows),
        rows,
        min_cosine=limit.value if limit.measure == "cosine" else None,
        min_jaccard=limit.value if limit.measure == "jaccard" else None,
        empty_as_duplicates=options.empty_as_duplicates,
    )


def _clusters(clustering: Clustering) -> Clusters:
    """Cluster sizes, kept documents and membership of a clustering."""
    labels = clustering.labels
    n = labels.size
    sizes = np.bincount(labels, minlength=int(labels.max()) + 1 if n else 0)
    kept = clustering.keep
    kept_rows = np.empty(sizes.size, dtype=np.int64)
    kept_rows[labels[kept]] = np.flatnonzero(kept)
    in_cluster = sizes[labels] > 1 if n else np.zeros(0, dtype=bool)
    return Clusters(
        labels,
        sizes,
        kept,
        kept_rows,
        in_cluster,
        clustering.similarity,
        clustering.below_threshold,
    )


def _stack(parts: list[np.ndarray], dtype: type) -> np.ndarray:
    """Concatenate per-batch arrays (an empty array of ``dtype`` for none)."""
    return np.concatenate(parts) if parts else np.zeros(0, dtype)

"""Deduplicate a document file in bounded memory, as named stages around an in-memory join.

The stages, each timed by `StageTimer` and recorded in the summary's ``timings_s``:

1. ``fingerprint``: read the file in batches (after a ``fit_tfidf`` pass for tf-idf weighting)
   and fingerprint each batch; only the codes (``bits / 8`` bytes per document), whether each
   document has features and, where asked for, text lengths, scores and ground-truth labels
   stay in memory. Each batch's merged features go to temporary files
   (`verification.feature_spill`: 12 bytes per distinct feature and 24 per document).
2. ``join``: the pairs of distinct codes a radius would produce are estimated from sampled
   degrees, and a radius over budget is refused unless forced (and one whose pairs cannot fit
   in the memory available, always); then every pair of distinct codes within the radius
   (identical codes collapsed, featureless documents left out), exactly or with the
   approximate join, as an int32 adjacency (`gpusimhash.search.graph.CodeGraph`).
3. ``verify``: with verification, the features of the documents in candidate pairs (only
   those) are read back, and the clustering verifies the candidate pairs it needs on them
   (`gpusimhash.search.graph_clusters`: star clusters, or components, exactly those of
   verifying every pair); without, the clusters come from the graph. Every removed document's
   exact similarity to its kept one is measured, and those below the threshold are counted
   (zero for verified stars). With ground truth, every candidate pair is also verified
   (`gpusimhash.search.verify.verify_candidates`) for the pair scores.
4. ``cluster``: cluster sizes, kept documents and membership.
5. ``write``: read the file again and write the kept documents, whole records, in input order,
   and a duplicates file (one line per cluster of two or more documents, with its members,
   their Hamming distances and their exact similarities to the kept one).
6. ``report`` (only when asked): sampled pairs, their true cosines and ``report.md`` with plots.

Every run writes ``summary.json`` last; this module owns every output file and the summary's
list of them.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np
from tqdm import tqdm

from gpusimhash import _compile_time, _progress
from gpusimhash._choices import OUTPUT_FORMATS, POLICIES
from gpusimhash._reprs import short_repr
from gpusimhash.codes import hamming
from gpusimhash.dedup import report
from gpusimhash.dedup.against import Against
from gpusimhash.dedup.pairs import write_pairs
from gpusimhash.dedup.row_ids import RowIds
from gpusimhash.dedup.verification import (
    CLUSTERINGS,
    Clustering,
    FeatureSpill,
    Threshold,
    check_budget,
    cluster_documents,
    feature_spill,
    join_with_features,
    plan_threshold,
)
from gpusimhash.evaluation import removal_scores
from gpusimhash.features import FeatureBatch
from gpusimhash.fingerprinting import FingerprintSettings, resolve_device
from gpusimhash.io import consumed
from gpusimhash.io.lines import LineBatch, document_batches
from gpusimhash.io.readers import DocumentBatch as Batch
from gpusimhash.io.readers import FileState, InputError, detect_format, read_batches
from gpusimhash.io.skipped import Skipped
from gpusimhash.io.writers import RecordWriter, write_json
from gpusimhash.search._join import DuplicateGroups
from gpusimhash.search.budget import MAX_CANDIDATE_PAIRS
from gpusimhash.search.clusters import cluster_summary
from gpusimhash.search.exact import near_duplicate_graph
from gpusimhash.search.graph import CodeGraph
from gpusimhash.search.lsh import approximate_near_duplicate_groups
from gpusimhash.search.verify import (
    DEFAULT_CANDIDATE_RECALL,
    DocumentFeatures,
    VerifiedCandidates,
    fingerprint_batch,
    verify_candidates,
)
from gpusimhash.text import TextFeaturizer

__all__ = ["DedupOptions", "DedupResult", "StageTimer", "dedup_file", "run"]

# pairs expanded for the ground-truth pair scores at most (beyond, removal scores only)
_LOGGER = logging.getLogger(__name__)
MAX_EVALUATED_PAIRS = 20_000_000
# records per write of the duplicates file
_DUPLICATES_CHUNK = 10_000
# the fields --annotate adds to every record
_ANNOTATIONS = frozenset({"cluster", "duplicate_of", "similarity"})
# candidate pairs of distinct codes the report samples from, at most (unverified runs)
_REPORTED_CODE_PAIRS = 1 << 20

Progress = Callable[..., Any]


@dataclass(frozen=True)
class DedupOptions:
    """How to read the input, which pairs are near-duplicates, and what to write.

    Attributes
    ----------
    format, text_field, id_field, batch_size
        How to read the input (see ``gpusimhash.io.readers.read_batches``).
    truth_field : str, optional
        Field with ground-truth group labels: precision and recall are added to the summary.
    score_field : str, optional
        Numeric field for ``keep="score"``.
    max_distance, min_cosine, min_jaccard
        The near-duplicate threshold. With verification: an exact minimum cosine of the
        weighted features or Jaccard similarity of the feature sets (at most one; default:
        cosine 0.8), and optionally the Hamming radius of the candidates. Without: one of a
        Hamming radius, a minimum estimated cosine or Jaccard similarity (default: cosine 0.8).
    verify : bool
        Verify every candidate pair on its features (`gpusimhash.verify_pairs`).
    candidate_recall : float
        With verification and no ``max_distance``: the probability that a pair exactly at the
        threshold is a candidate (`gpusimhash.candidate_radius`).
    cluster : {"star", "components"}
        Star clusters, in which every removed document is a near-duplicate of the document kept
        for it, or connected components (which chain: the summary warns when their members
        are below the threshold against the kept document).
    empty_as_duplicates : bool
        Featureless documents (no word) are duplicates of each other; otherwise each is kept.
    force : bool
        Join even when the estimated number of candidate pairs is over the budget.
    max_candidate_pairs : int
        The budget: most pairs of distinct codes the join may produce without ``force``
        (estimated from a sample; the join holds about 40 bytes per pair at its peak).
    recall : float, optional
        Use the approximate join (every pair within the radius found with at least this
        probability, none beyond it reported); default: the exact join.
    keep : {"first", "longest", "score"}
        Which document of a cluster is kept: the first in the file, the longest text, or the
        highest ``score_field`` (ties go to the first).
    device : {"auto", "cpu", "gpu"}
        Where to fingerprint and run the exact join (the approximate join runs on the CPU).
    output_format : {"jsonl", "parquet"}
        Format of the kept and duplicates files.
    report : bool
        Write ``report.md`` with plots (sampling pairs and their true cosines costs a little).
    skip_invalid : bool
        Skip invalid records (bad JSON or UTF-8, a missing or non-text text field, a bad id, a
        CSV row of the wrong length, a null Parquet text) instead of stopping: the summary
        counts them (``results.skipped_invalid``) and lists the first few (``skipped``).
    annotate : bool
        Write every record, none dropped, to ``annotated.<fmt>`` instead of ``kept.<fmt>``, with
        ``cluster`` (its number in the duplicates file, null alone), ``duplicate_of`` (the id of
        the document kept for it, null when kept) and ``similarity`` (to that document).
    against : str or Path, optional
        A saved `SimHashIndex` folder: clusters whose kept document it already holds (within
        the threshold's estimated-cosine radius, `gpusimhash.dedup.against`) are removed and
        listed in ``in_index.<fmt>``. The settings must be the index's.
    add_kept : bool
        Add the documents kept to the ``against`` index (their ids, or consecutive int64 ids
        without an id field).
    pairs : bool
        Write ``pairs.<fmt>``: every near-duplicate pair with its distance and exact similarity
        (`gpusimhash.dedup.pairs`; verifies every candidate pair).

    Raises
    ------
    ValueError
        An unknown keep policy, clustering or output format, ``keep="score"`` without a score
        field, or a contradictory or out-of-range threshold; ``add_kept`` without ``against``;
        ``annotate`` with ``against``.
    """

    format: str | None = None
    text_field: str = "text"
    id_field: str | None = None
    truth_field: str | None = None
    score_field: str | None = None
    batch_size: int = 10_000
    max_distance: int | None = None
    min_cosine: float | None = None
    min_jaccard: float | None = None
    verify: bool = True
    candidate_recall: float = DEFAULT_CANDIDATE_RECALL
    cluster: str = "star"
    empty_as_duplicates: bool = False
    force: bool = False
    max_candidate_pairs: int = MAX_CANDIDATE_PAIRS
    recall: float | None = None
    keep: str = "first"
    device: str = "auto"
    output_format: str = "jsonl"
    report: bool = False
    skip_invalid: bool = False
    annotate: bool = False
    against: str | Path | None = None
    add_kept: bool = False
    pairs: bool = False

    def __post_init__(self) -> None:
        """Check the options."""
        if self.keep not in POLICIES:
            raise ValueError(f"keep must be one of {', '.join(POLICIES)}, got {self.keep!r}")
        if self.keep == "score" and self.score_field is None:
            raise ValueError("keep='score' needs a score field")
        if self.output_format not in OUTPUT_FORMATS:
            raise ValueError(
                f"output format must be one of {', '.join(OUTPUT_FORMATS)}, "
                f"got {self.output_format!r}"
            )
        if self.cluster not in CLUSTERINGS:
            raise ValueError(
                f"cluster must be one of {', '.join(CLUSTERINGS)}, got {self.cluster!r}"
            )
        if self.add_kept and self.against is None:
            raise ValueError("add_kept needs an index to add to (against)")
        if self.annotate and self.against is not None:
            raise ValueError("annotate does not show matches against an index yet: not both")
        self.threshold(8)  # checks the threshold options (the radius depends on the bits)

    def threshold(self, bits: int) -> Threshold:
        """Return the threshold and the Hamming radius of codes of ``bits`` bits.

        Parameters
        ----------
        bits : int
            Code length.

        Returns
        -------
        Threshold
        """
        return plan_threshold(
            bits,
            verify=self.verify,
            max_distance=self.max_distance,
            min_cosine=self.min_cosine,
            min_jaccard=self.min_jaccard,
            candidate_recall=self.candidate_recall,
        )


@dataclass
class DedupResult:
    """What a deduplication run found and wrote.

    Attributes
    ----------
    summary : dict
        ``input``, ``settings``, ``results``, ``ground_truth`` (or None), ``cluster_sizes``
        (number of clusters of each size), ``timings_s`` and ``files``: JSON-safe, and written
        to ``summary.json``.
    codes : ndarray, shape (n, bits // 8), dtype uint8
        Every document's fingerprint, in input order.
    cluster : ndarray, shape (n,), dtype int64
        Cluster of each document (``-1`` for documents without a near-duplicate).
    kept : ndarray, shape (n,), dtype bool
        Which documents were written to the kept file.
    """

    summary: dict[str, Any]
    codes: np.ndarray
    cluster: np.ndarray
    kept: np.ndarray

    __repr__ = short_repr


class StageTimer:
    """Wall-clock seconds of named stages, with an optional progress bar per stage.

    Parameters
    ----------
    progress : callable, optional
        ``tqdm``-like factory ``progress(desc=..., unit=..., total=...)``; None for no bars.

    Examples
    --------
    >>> timer = StageTimer()
    >>> with timer.stage("join"):
    ...     pass
    >>> list(timer.seconds)
    ['join']
    """

    def __init__(self, progress: Progress | None = None) -> None:
        self.progress = progress
        self.seconds: dict[str, float] = {}
        self.compiled_before = _compile_time.seconds()  # Numba compile time until now

    @contextlib.contextmanager
    def stage(self, name: str, *, unit: str = "doc", total: int | None = None) -> Iterator[Any]:
        """Time the block as stage ``name``; yield its progress bar (disabled without one)."""
        bar = tqdm(disable=True) if self.progress is None else self.progress(desc=name, unit=unit)
        if total is not None:
            bar.total = total
        start = time.perf_counter()
        try:
            with bar, _progress.reporting(bar):  # loops deep in the stage report to its bar
                yield bar
        finally:
            self.seconds[name] = time.perf_counter() - start
            _LOGGER.info("%s: %.3f s", name, self.seconds[name])


@dataclass
class _Fingerprints:
    """What the first pass keeps per document."""

    codes: np.ndarray
    lengths: np.ndarray | None  # for the keep policy "longest" only
    scores: np.ndarray | None
    truth: np.ndarray | None
    has_features: np.ndarray  # bool: whether each document has a feature


@dataclass
class _Clusters:
    """Clusters of near-duplicates and the document kept for each."""

    labels: np.ndarray  # cluster of every document, 0 .. n_clusters - 1
    sizes: np.ndarray  # documents per cluster
    kept: np.ndarray  # bool per document
    kept_rows: np.ndarray  # the kept document of every cluster
    in_cluster: np.ndarray  # bool per document: in a cluster of two or more
    similarity: np.ndarray  # exact similarity of every document to its kept one
    below_threshold: int  # removed documents below the threshold against their kept one


@dataclass
class _Source:
    """The input files, read one after another as one corpus (rows numbered across them)."""

    paths: tuple[Path, ...]
    options: DedupOptions
    id_field: str | None  # the option, else ``id`` when the first record has one
    skipped: Skipped | None = None  # the first pass's invalid records (skip_invalid)

    @classmethod
    def of(cls, path: str | Path | Sequence[str | Path], options: DedupOptions) -> _Source:
        """Name the input files; take ids from an ``id`` field when none is named and one exists."""
        paths = (Path(path),) if isinstance(path, str | Path) else tuple(map(Path, path))
        if not paths:
            raise ValueError("no input file")
        id_field = options.id_field
        if id_field is None and _has_id_field(paths[0], options):
            id_field = "id"
        return cls(paths, options, id_field)

    @property
    def name(self) -> str:
        """The input in messages and the summary: the file, or the first of several."""
        more = len(self.paths) - 1
        return f"{self.paths[0]} (and {more} more files)" if more else str(self.paths[0])

    def states(self) -> list[FileState]:
        """Take every file's state (pipes refused: the input is read more than once)."""
        return [FileState.of(path) for path in self.paths]

    def check(self, states: list[FileState]) -> None:
        """Raise InputError if a file changed since its state was taken."""
        for path, state in zip(self.paths, states, strict=True):
            state.check(path)

    def batches(self, *, records: bool) -> Iterator[Batch]:
        """Read the files in batches (with whole records when asked)."""
        batches = self._each(
            lambda path: read_batches(
                path,
                format=self.options.format,
                text_field=self.options.text_field,
                id_field=self.id_field,
                batch_size=self.options.batch_size,
                records=records,
                skipped=Skipped() if self.options.skip_invalid else None,  # as in the first pass
            )
        )
        return cast(Iterator[Batch], batches)  # read_batches' batches, renumbered

    def fingerprint_batches(self, *, records: bool) -> Iterator[Batch | LineBatch]:
        """Read the files for the first pass: plain text as UTF-8 bytes, unless records are needed.

        Invalid records skipped (``skip_invalid``) are counted in ``self.skipped``.
        """
        self.skipped = Skipped() if self.options.skip_invalid else None
        return self._each(
            lambda path: (
                document_batches(
                    path,
                    format=self.options.format,
                    text_field=self.options.text_field,
                    id_field=self.id_field,
                    batch_size=self.options.batch_size,
                    skipped=self.skipped,
                )
                if not records
                else read_batches(
                    path,
                    format=self.options.format,
                    text_field=self.options.text_field,
                    id_field=self.id_field,
                    batch_size=self.options.batch_size,
                    records=True,
                    skipped=self.skipped,
                )
            )
        )

    def _each(
        self, read: Callable[[Path], Iterator[Batch | LineBatch]]
    ) -> Iterator[Batch | LineBatch]:
        """Chain the files' batches, rows (and ids that are rows) numbered across files."""
        offset = 0
        for path in self.paths:
            plain = (self.options.format or detect_format(path)) == "text"
            rows = 0
            for batch in read(path):
                rows += len(batch)
                yield _shifted(batch, offset, self.id_field is None, plain) if offset else batch
            offset += rows


def _shifted(
    batch: Batch | LineBatch, offset: int, row_ids: bool, plain: bool
) -> Batch | LineBatch:
    """Renumber a batch's rows from ``offset`` on, and its ids when they are rows.

    A plain-text file's records (``{"id": row, "text": line}``) take the new rows as ids.
    """
    rows = batch.rows + offset
    if isinstance(batch, LineBatch):
        return LineBatch(rows, batch.texts)
    if not (row_ids or plain):
        return dataclasses.replace(batch, rows=rows)
    ids = rows.tolist()
    records = batch.records
    if plain and records is not None:
        records = [{"id": row, "text": r["text"]} for row, r in zip(ids, records, strict=True)]
    return dataclasses.replace(batch, rows=rows, ids=ids, records=records)


def _has_id_field(path: Path, options: DedupOptions) -> bool:
    """Whether a (regular) file's first record has an ``id`` field holding an int or a str."""
    format = options.format or detect_format(path)
    if format == "text" or options.text_field == "id" or not path.is_file():
        return False
    batches = read_batches(
        path, format=format, text_field=options.text_field, batch_size=1, records=True
    )
    first = next(batches, None)
    value = first.record(0).get("id") if first is not None else None
    return isinstance(value, int | str) and not isinstance(value, bool)


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

    Returns
    -------
    DedupResult
    """
    source, out_dir = _Source.of(path, options), Path(out_dir)
    states = source.states()  # read more than once: no pipe, checked after the last read
    limit = options.threshold(settings.bits)
    checked = None if options.against is None else Against.open(options.against, settings)
    device = resolve_device(options.device, uses=("fingerprint", "join"))
    out_dir.mkdir(parents=True, exist_ok=True)
    timer = StageTimer(progress)
    start = time.perf_counter()

    if settings.featurizer.weighting == "tfidf" and not settings.featurizer.is_fitted:
        with timer.stage("fit_tfidf") as bar:
            settings.featurizer.fit(_texts_with_progress(source.batches(records=False), bar))
    with feature_spill() as spill:
        with timer.stage("fingerprint", unit="B") as bar:
            first = _fingerprint_pass(source, settings, device, bar, spill, limit)
        n = first.codes.shape[0]
        with timer.stage("join", unit="part"):
            has_features = first.has_features
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
        near = clustering.kept_pairs(limit.radius) if limit.verify else _sampled(graph)
        view = report.ClusterView(clusters.labels, clusters.kept_rows, clusters.similarity)
        sample = report.sample_pairs(near, first.codes, settings.seed, clusters=view)
    wanted = set(sample["rows"].tolist()) if sample is not None else set()
    files: dict[str, str] = {}
    with timer.stage("write", total=n) as bar:
        ids, texts = _write_kept(source, out_dir, clusters, wanted, files, bar)
        cluster = _write_duplicates(out_dir, options.output_format, clusters, ids, first, files)
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
        n_pairs = None if found is None else _count_pairs(found.as_groups(limit.radius))
    summary = _summary(source, settings, options, device, limit, graph, first, clusters)
    if checked is not None:
        summary["results"].update(checked.summary())
    summary["settings"]["estimated_candidate_pairs"] = round(estimate)
    summary["results"].update(
        {
            "candidate_pairs": n_candidates,
            "candidate_code_pairs": graph.n_pairs,
            "pairs_verified": clustering.pairs_verified,
            "near_duplicate_pairs": n_pairs,
            "featureless_documents": int(n - has_features.sum()),
        }
    )
    if clusters.below_threshold:
        lowest = summary["results"]["lowest_similarity_to_kept"]
        summary["warnings"] = [
            (
                f"{clusters.below_threshold:,} removed documents are below the {limit.measure} "
                f"threshold {limit.value:g} against the document kept for them (lowest "
                f"{lowest:.3f}): clusters chain; star clusters of verified pairs never do"
            )
        ]
    if first.truth is not None:
        pairs = None
        if n_pairs is not None and n_pairs <= MAX_EVALUATED_PAIRS:
            pairs = graph.to_groups().pairs() if found is None else found.document_pairs()[0]
        summary["ground_truth"] = removal_scores(first.truth, clusters.kept, pairs)
    summary["files"] = files
    files["summary.json"] = "this summary, as JSON"
    if sample is not None:
        with timer.stage("report", unit="pair"):
            files["report.md"] = "the report, with plots (PNG)"
            _finish_summary(summary, timer, start, n)
            data = report.sampled_cosines(sample, texts, settings.featurizer, ids)
            report.write_report(
                out_dir, summary, **data, cluster_sizes=clusters.sizes[clusters.sizes > 1]
            )
    _finish_summary(summary, timer, start, n)
    write_json(out_dir / "summary.json", summary)
    return DedupResult(summary, first.codes, cluster, clusters.kept)


# ---------------------------------------------------------------- stages


def _fingerprint_pass(
    source: _Source,
    settings: FingerprintSettings,
    device: str,
    bar: Any,
    spill: FeatureSpill,
    limit: Threshold,
) -> _Fingerprints:
    """Fingerprint every document and spill its features; keep codes, lengths, scores, labels.

    Text is featurized once on the CPU for the features; the CPU fingerprints come from that
    same batch (as `gpusimhash.fingerprint` computes them), the GPU featurizes on its own. A
    Jaccard threshold fingerprints the feature sets (every weight 1). The bar counts the input
    files' bytes (compressed bytes for ``.gz``), its total their sizes: it has an ETA.
    """
    options = source.options
    codes, lengths, scores, truth, featured = [], [], [], [], []
    table: dict[Any, int] = {}
    need_records = options.truth_field is not None or options.score_field is not None
    bar.unit, bar.unit_scale = "B", True
    bar.total, done = sum(path.stat().st_size for path in source.paths), 0
    bar.refresh()
    with consumed.counting() as read:
        for batch in source.fingerprint_batches(records=need_records):
            first_row = int(batch.rows[0]) if len(batch) else 0
            entries = settings.featurizer.transform(batch.texts, first_index=first_row)
            features = DocumentFeatures.from_batch(entries)
            spill.append(features)
            featured.append(features.sizes > 0)
            if limit.measure == "jaccard":
                entries = FeatureBatch(features.states, features.offsets, None)
            if limit.measure == "jaccard" or device == "cpu":
                codes.append(
                    fingerprint_batch(entries, device, bits=settings.bits, seed=settings.seed)
                )
            else:
                codes.append(settings.fingerprint(batch.texts, device=device))
            if options.keep == "longest":
                lengths.append(_lengths(batch))
            # labels and scores: fields of records (asked for, so never plain text as bytes)
            if options.truth_field is not None and isinstance(batch, Batch):
                field = options.truth_field
                values = [_record_value(source.name, batch, k, field) for k in range(len(batch))]
                truth.append(_labels(values, table, source.name))
            if options.score_field is not None and isinstance(batch, Batch):
                scores.append(_scores(source.name, batch, options.score_field))
            bar.update(read.bytes - done)
            done = read.bytes
        bar.update(read.bytes - done)  # the last file's end, after its last batch
    return _Fingerprints(
        codes=np.concatenate(codes) if codes else np.zeros((0, settings.bits // 8), np.uint8),
        lengths=_stack(lengths, np.int64) if options.keep == "longest" else None,
        scores=_stack(scores, np.float64) if options.score_field else None,
        truth=_stack(truth, np.int64) if options.truth_field else None,
        has_features=_stack(featured, np.bool_),
    )


def _join(codes: np.ndarray, radius: int, recall: float | None, device: str) -> CodeGraph:
    """Every pair of codes within the radius: exact (on ``device``), or approximate."""
    if recall is None:
        return near_duplicate_graph(codes, max_distance=radius, device=device)
    return CodeGraph.from_groups(
        approximate_near_duplicate_groups(codes, max_distance=radius, recall=recall)
    )


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


def _clusters(clustering: Clustering) -> _Clusters:
    """Cluster sizes, kept documents and membership of a clustering."""
    labels = clustering.labels
    n = labels.size
    sizes = np.bincount(labels, minlength=int(labels.max()) + 1 if n else 0)
    kept = clustering.keep
    kept_rows = np.empty(sizes.size, dtype=np.int64)
    kept_rows[labels[kept]] = np.flatnonzero(kept)
    in_cluster = sizes[labels] > 1 if n else np.zeros(0, dtype=bool)
    return _Clusters(
        labels,
        sizes,
        kept,
        kept_rows,
        in_cluster,
        clustering.similarity,
        clustering.below_threshold,
    )


def _write_kept(
    source: _Source,
    out_dir: Path,
    clusters: _Clusters,
    wanted_rows: set[int],
    files: dict[str, str],
    bar: Any,
) -> tuple[RowIds, dict[int, str]]:
    """Write the kept records (or every record, annotated); collect ids and wanted texts.

    Returns the ids of the clustered rows and the texts of ``wanted_rows``.
    """
    options = source.options
    kept = clusters.kept
    annotation = _Annotation.of(source, clusters) if options.annotate else None
    name = "kept" if annotation is None else "annotated"
    kept_path = out_dir / f"{name}.{options.output_format}"
    ids = RowIds()
    texts: dict[int, str] = {}
    rows_read = 0
    with RecordWriter(kept_path, options.output_format) as writer:
        for batch in source.batches(records=True):
            rows = batch.rows
            rows_read += len(batch)
            if rows_read > len(kept):
                break
            clustered = np.flatnonzero(clusters.in_cluster[rows])
            ids.append(rows[clustered], [batch.ids[k] for k in clustered.tolist()])
            if annotation is None:
                writer.write([batch.record(int(k)) for k in np.flatnonzero(kept[rows])])
            else:
                writer.write(annotation.records(batch, ids))
            for position, row in enumerate(rows.tolist()):
                if row in wanted_rows:
                    texts[row] = batch.texts[position]
            bar.update(len(batch))
    if rows_read != len(kept):
        raise InputError(
            f"{source.name}: changed while it was read ({len(kept)} documents, then {rows_read})"
        )
    files[kept_path.name] = (
        f"the {writer.count:,} kept documents, whole records, in input order"
        if annotation is None
        else f"all {writer.count:,} documents, whole records, in input order, with "
        "cluster, duplicate_of (the id of the document kept for it) and similarity"
    )
    return ids, texts


@dataclass
class _Annotation:
    """What ``annotate`` adds to each record: its cluster, the id kept for it, the similarity."""

    numbers: np.ndarray  # cluster number of every document (as in duplicates), -1: none
    kept_for: np.ndarray  # row of the document kept for every document
    removed: np.ndarray  # bool per document
    similarity: np.ndarray
    kept_ids: dict[int, Any]  # ids of kept rows read ahead (those after a member)
    source: str

    @classmethod
    def of(cls, source: _Source, clusters: _Clusters) -> _Annotation:
        """Prepare the annotations; read ahead the ids of kept rows that follow a member."""
        kept_for = clusters.kept_rows[clusters.labels]
        removed = ~clusters.kept
        later = np.unique(kept_for[removed & (kept_for > np.arange(kept_for.size))])
        kept_ids: dict[int, Any] = {}
        if later.size:
            for batch in source.batches(records=False):
                for k in np.flatnonzero(np.isin(batch.rows, later)):
                    kept_ids[int(batch.rows[k])] = batch.ids[k]
        return cls(
            _cluster_numbers(clusters),
            kept_for,
            removed,
            clusters.similarity,
            kept_ids,
            source.name,
        )

    def records(self, batch: Batch, ids: RowIds) -> list[dict[str, Any]]:
        """Return the batch's records with the three fields added (``ids``: of clustered rows)."""
        out = []
        for k, row in enumerate(batch.rows.tolist()):
            duplicate_of = similarity = None
            if self.removed[row]:
                kept = int(self.kept_for[row])
                duplicate_of = self.kept_ids[kept] if kept in self.kept_ids else ids[kept]
                similarity = float(self.similarity[row])
            number = int(self.numbers[row])
            out.append(
                _annotated(batch.record(k), self.source, row, number, duplicate_of, similarity)
            )
        return out


def _annotated(
    record: dict[str, Any],
    source: str,
    row: int,
    number: int,
    duplicate_of: Any,
    similarity: float | None,
) -> dict[str, Any]:
    """Return a record with ``cluster``, ``duplicate_of`` and ``similarity`` added.

    ``number`` is -1 outside clusters; ``duplicate_of`` and ``similarity`` are None for a kept
    document (a similarity that is not finite becomes None). Raises InputError naming the
    source and row if the record has one of those fields already.
    """
    clash = _ANNOTATIONS & record.keys()
    if clash:
        raise InputError(
            f"{source}, document {row}: the record has a field {min(clash)!r}, which "
            "annotating would overwrite"
        )
    return {
        **record,
        "cluster": number if number >= 0 else None,
        "duplicate_of": duplicate_of,
        "similarity": similarity if similarity is not None and np.isfinite(similarity) else None,
    }


def _cluster_numbers(clusters: _Clusters) -> np.ndarray:
    """Return each document's cluster number (0, 1, ... over clusters of two or more; else -1)."""
    big = np.flatnonzero(clusters.sizes > 1)
    numbers = np.full(clusters.sizes.size, -1, dtype=np.int64)
    numbers[big] = np.arange(big.size)
    return numbers[clusters.labels]


def _write_duplicates(
    out_dir: Path,
    output_format: str,
    clusters: _Clusters,
    ids: RowIds,
    first: _Fingerprints,
    files: dict[str, str],
) -> np.ndarray:
    """Write one record per cluster of two or more documents; return per-document cluster ids."""
    labels, sizes, codes = clusters.labels, clusters.sizes, first.codes
    path = out_dir / f"duplicates.{output_format}"
    rows = np.flatnonzero(clusters.in_cluster)
    rows = rows[np.argsort(labels[rows], kind="stable")]
    cluster = _cluster_numbers(clusters)
    big = np.flatnonzero(sizes > 1)
    starts = np.searchsorted(labels[rows], big)
    ends = np.append(starts[1:], rows.size)[: starts.size]
    member_ids = ids.take(rows)  # of every member, cluster by cluster
    with RecordWriter(path, output_format) as writer:
        records = []
        for number, (label, lo, hi) in enumerate(zip(big, starts, ends, strict=True)):
            members = rows[lo:hi]
            kept = clusters.kept_rows[label]
            distances = hamming(codes[members], np.broadcast_to(codes[kept], codes[members].shape))
            records.append(
                {
                    "cluster": number,
                    "size": int(members.size),
                    "kept_id": ids[int(kept)],
                    "kept_row": int(kept),
                    "ids": _listed(member_ids[lo:hi]),
                    "rows": members.tolist(),
                    "distances": distances.astype(int).tolist(),
                    "similarities": clusters.similarity[members].tolist(),
                }
            )
            if len(records) == _DUPLICATES_CHUNK:
                writer.write(records)
                records = []
        writer.write(records)
    files[path.name] = (
        f"{big.size:,} clusters of near-duplicates: ids, rows, Hamming distance and exact "
        "similarity of every member to the kept one"
    )
    return cluster


def _listed(values: np.ndarray | list[Any]) -> list[Any]:
    """Return a slice of `RowIds.take`'s result as a list of Python values."""
    return values.tolist() if isinstance(values, np.ndarray) else values


# ---------------------------------------------------------------- summary


def _summary(
    source: _Source,
    settings: FingerprintSettings,
    options: DedupOptions,
    device: str,
    limit: Threshold,
    graph: CodeGraph,
    first: _Fingerprints,
    clusters: _Clusters,
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


def _finish_summary(summary: dict[str, Any], timer: StageTimer, start: float, n: int) -> None:
    """Add the total time, the throughput (compile time left out) and each stage's time."""
    total = time.perf_counter() - start
    # compiling Numba loops (a first run without a cache) is not the documents' cost
    compiling = min(_compile_time.seconds() - timer.compiled_before, total)
    summary["results"]["seconds"] = round(total, 3)
    working = total - compiling
    summary["results"]["documents_per_second"] = round(n / working, 1) if working else 0.0
    timings = {**timer.seconds, "compile": compiling, "total": total}
    summary["timings_s"] = {k: round(v, 4) for k, v in timings.items()}


def _count_pairs(groups: DuplicateGroups) -> int:
    """Count the document pairs within the radius, without expanding them."""
    sizes = np.bincount(groups.inverse) if groups.inverse.size else np.zeros(0, np.int64)
    same = int((sizes * (sizes - 1) // 2).sum())
    if not len(groups.unique_pairs):
        return same
    return same + int((sizes[groups.unique_pairs[:, 0]] * sizes[groups.unique_pairs[:, 1]]).sum())


# ---------------------------------------------------------------- record fields


def _texts_with_progress(batches: Iterator[Batch], bar: Any) -> Iterator[str]:
    """Yield every text of a stream of batches, counting them on a progress bar."""
    for batch in batches:
        yield from batch.texts
        bar.update(len(batch))


def _lengths(batch: Batch | LineBatch) -> np.ndarray:
    """Return each document's length in code points (``len`` of its text)."""
    if isinstance(batch, LineBatch):
        return batch.texts.code_point_counts()
    return np.fromiter(map(len, batch.texts), dtype=np.int64, count=len(batch))


def _stack(parts: list[np.ndarray], dtype: type) -> np.ndarray:
    """Concatenate per-batch arrays (an empty array of ``dtype`` for none)."""
    return np.concatenate(parts) if parts else np.zeros(0, dtype)


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


def _record_value(path: str | Path, batch: Batch, k: int, field_name: str) -> Any:
    """Return a field of a record, or raise naming the row."""
    record = batch.record(k)
    if field_name not in record:
        raise InputError(
            f"{path}, document {int(batch.rows[k])}: no field {field_name!r} "
            f"(fields: {', '.join(sorted(record))})"
        )
    return record[field_name]


def _scores(path: str | Path, batch: Batch, field_name: str) -> np.ndarray:
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

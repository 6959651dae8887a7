"""What a worker does with one input partition: read, fingerprint, hand out pieces, write.

A partition is one input file. `fingerprint_part` reads it in batches exactly as the
single-machine first pass does (same reader, featurizer and fingerprint engine, so the same
codes and the same errors) and keeps a `Part` in the worker's memory: the codes, the merged
features that verification compares, and the lengths and scores the keep policy needs. Only
small pieces of a `Part` ever leave its worker: the (row, code) of its featured documents for
the collapse, the features, lengths and scores of the documents with candidates for the
clustering, the codes and ids of clustered documents. `write_part` reads the file a second
time and writes its kept records to one output part: it needs only the file's `PartFile`
(path, state, documents), so any worker can write any partition.
"""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass
from itertools import compress
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from gpusimhash.codes import code_words
from gpusimhash.dedup.report import neighbours
from gpusimhash.distributed._routing import destination, split_by
from gpusimhash.evaluation import removal_counts
from gpusimhash.features import FeatureBatch
from gpusimhash.fingerprinting import FingerprintSettings, fingerprint_batch, resolve_device
from gpusimhash.io.parquet_schema import take_rows
from gpusimhash.io.readers import (
    DocumentBatch,
    FileState,
    InputError,
    JsonLineBatch,
    detect_format,
    read_batches,
    read_json_lines,
)
from gpusimhash.io.records import annotated, file_rows, record_labels
from gpusimhash.io.skipped import Skipped
from gpusimhash.io.writers import RecordWriter
from gpusimhash.verify import DocumentFeatures
from gpusimhash.verify._units import document_hashes

__all__ = [
    "Annotations",
    "Extras",
    "Part",
    "PartFile",
    "ReadOptions",
    "WrittenPart",
    "collapse_pieces",
    "fingerprint_part",
    "label_task",
    "part_file",
    "read_ids",
    "search_neighbours",
    "take_codes",
    "take_documents",
    "take_hashes",
    "truth_counts",
    "write_part",
]


@dataclass(frozen=True)
class ReadOptions:
    """How every partition is read and fingerprinted (the same on every worker).

    Attributes
    ----------
    format, text_field, id_field, batch_size
        As `gpusimhash.io.readers.read_batches`.
    score_field : str, optional
        Numeric field of the ``"score"`` keep policy.
    jaccard : bool
        Fingerprint the feature sets (every weight 1), as a Jaccard threshold does.
    device : {"auto", "cpu", "gpu"}
        Where to fingerprint, resolved on each worker.
    skip_invalid : bool
        Skip invalid records, as `read_batches` does with ``skipped``, in every read of a
        partition: its documents are its valid records, numbered alike in every read.
    """

    format: str | None
    text_field: str
    id_field: str | None
    batch_size: int
    score_field: str | None
    jaccard: bool
    device: str
    skip_invalid: bool = False

    def ids_are_rows(self, paths: list[Path]) -> bool:
        """Whether every document's id is its global row: no id field, or plain text alone.

        The driver then knows the ids without reading a partition again (`_id`).
        """
        return all(self.rows_are_ids(path) for path in paths)

    def rows_are_ids(self, path: Path) -> bool:
        """Whether a partition's documents are named by their global rows (`_id`)."""
        return self.id_field is None or (self.format or detect_format(path)) == "text"

    def batches(self, path: Path, *, records: bool, skipped: Skipped | None = None) -> Any:
        """Read a partition in batches.

        With ``skip_invalid``, invalid records are skipped and counted in ``skipped`` (or in a
        count of their own where it is None); without, the first one raises.
        """
        if not self.skip_invalid:
            skipped = None
        elif skipped is None:
            skipped = Skipped()
        return read_batches(
            path,
            format=self.format,
            text_field=self.text_field,
            id_field=self.id_field,
            batch_size=self.batch_size,
            records=records,
            skipped=skipped,
        )


@dataclass(frozen=True)
class PartFile:
    """A fingerprinted partition's file: what writing it needs.

    Attributes
    ----------
    path : Path
        The file.
    state : FileState
        Its size and time when it was read (checked again when it is written).
    n_docs : int
        Documents read from it.
    featureless : ndarray, dtype int64
        Rows in the file of its documents without features (never joined).
    feature_bytes : int
        Bytes of its documents' merged features (`DocumentFeatures.nbytes`).
    skipped : Skipped, optional
        The invalid records its reading skipped (``skip_invalid``), else None.
    """

    path: Path
    state: FileState
    n_docs: int
    featureless: np.ndarray
    feature_bytes: int
    skipped: Skipped | None = None


@dataclass(frozen=True)
class Part:
    """One fingerprinted partition, as it stays in its worker's memory.

    Attributes
    ----------
    path : Path
        The partition's file.
    state : FileState
        The file's size and time when it was read (checked again when it is written).
    codes : ndarray, shape (n, bits // 8), dtype uint8
        Fingerprints, in file order.
    features : DocumentFeatures
        Every document's merged features (12 bytes per distinct feature, 24 per document).
    lengths : ndarray, shape (n,), dtype int64
        Text lengths, for ``keep="longest"``.
    scores : ndarray or None, shape (n,), dtype float64
        Scores, for ``keep="score"``.
    skipped : Skipped, optional
        The invalid records its reading skipped (``skip_invalid``), else None.
    """

    path: Path
    state: FileState
    codes: np.ndarray
    features: DocumentFeatures
    lengths: np.ndarray
    scores: np.ndarray | None
    skipped: Skipped | None = None

    @property
    def n_docs(self) -> int:
        """Documents in the partition."""
        return int(self.codes.shape[0])


def fingerprint_part(path: Path, settings: FingerprintSettings, read: ReadOptions) -> Part:
    """Read and fingerprint one partition, as the single-machine first pass does.

    Parameters
    ----------
    path : Path
        The partition's file.
    settings : FingerprintSettings
        Bits, seed and a fitted featurizer.
    read : ReadOptions
        How to read and fingerprint.

    Returns
    -------
    Part

    Raises
    ------
    InputError
        A problem with the file (names file, line and field).
    """
    state = FileState.of(path)
    device = resolve_device(read.device, uses=("fingerprint",))
    codes, lengths, scores, features = [], [], [], []
    skipped = Skipped() if read.skip_invalid else None
    for batch in read.batches(path, records=read.score_field is not None, skipped=skipped):
        first_row = int(batch.rows[0]) if len(batch) else 0
        entries = settings.featurizer.transform(batch.texts, first_index=first_row)
        merged = DocumentFeatures.from_batch(entries)
        features.append(merged)
        if read.jaccard:
            entries = FeatureBatch(merged.states, merged.offsets, None)
        if read.jaccard or device == "cpu":
            codes.append(fingerprint_batch(entries, device, bits=settings.bits, seed=settings.seed))
        else:
            codes.append(settings.fingerprint(batch.texts, device=device))
        lengths.append(np.fromiter(map(len, batch.texts), dtype=np.int64, count=len(batch)))
        if read.score_field is not None:
            scores.append(record_scores(path, batch, read.score_field))
    width = settings.bits // 8
    merged_all = (
        DocumentFeatures.concatenate(features)
        if features
        else DocumentFeatures.from_batch(
            FeatureBatch(np.zeros(0, np.uint32), np.zeros(1, np.int64), None)
        )
    )
    return Part(
        path=path,
        state=state,
        codes=np.concatenate(codes) if codes else np.zeros((0, width), np.uint8),
        features=merged_all,
        lengths=np.concatenate(lengths) if lengths else np.zeros(0, np.int64),
        scores=(
            (np.concatenate(scores) if scores else np.zeros(0))
            if read.score_field is not None
            else None
        ),
        skipped=skipped,
    )


def part_file(part: Part) -> PartFile:
    """Return a partition's file, state, documents, featureless ones and features' bytes.

    What the driver gathers of each partition.
    """
    featureless = np.flatnonzero(part.features.sizes == 0).astype(np.int64)
    return PartFile(
        part.path, part.state, part.n_docs, featureless, part.features.nbytes, part.skipped
    )


def collapse_pieces(part: Part, offset: int, n_tasks: int) -> list[tuple[np.ndarray, ...]]:
    """Split the featured documents of a partition by a hash of their code.

    Identical codes go to the same collapse task wherever they come from.

    Parameters
    ----------
    part : Part
        The partition.
    offset : int
        Global row of its first document.
    n_tasks : int
        Collapse tasks.

    Returns
    -------
    list of (rows, words)
        For each collapse task: global rows (int64) and codes as uint64 words of its
        documents.
    """
    local = np.flatnonzero(part.features.sizes > 0)
    words = code_words(part.codes[local])
    return split_by(destination(words, n_tasks), n_tasks, local + offset, words)


def take_codes(part: Part, rows: np.ndarray, offset: int) -> np.ndarray:
    """Return the codes of some documents of a partition (global rows)."""
    codes: np.ndarray = part.codes[rows - offset]
    return codes


def take_hashes(part: Part, rows: np.ndarray, offset: int) -> np.ndarray:
    """Return the feature hashes of some documents of a partition (global rows).

    Documents with identical features have equal hashes (`gpusimhash.verify._units`'s
    units), uint64.
    """
    return document_hashes(part.features.take(rows - offset))


def search_neighbours(
    part: Part, query_codes: np.ndarray, limit: int, offset: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every (query, global row, distance) of a partition's codes within ``limit`` of a query."""
    query, rows, distances = neighbours(part.codes, query_codes, limit)
    return query, rows + offset, distances


def take_documents(
    part: Part, rows: np.ndarray, offset: int
) -> tuple[DocumentFeatures, np.ndarray, np.ndarray | None]:
    """Return the features, lengths and scores of the partition's documents among some rows.

    Parameters
    ----------
    part : Part
        The partition.
    rows : ndarray, dtype int64
        Ascending global rows, of any partitions.
    offset : int
        Global row of the partition's first document.

    Returns
    -------
    features : DocumentFeatures
    lengths : ndarray, dtype int64
    scores : ndarray or None, dtype float64
        Of the rows in ``[offset, offset + part.n_docs)``, in order.
    """
    lo, hi = np.searchsorted(rows, [offset, offset + part.n_docs])
    local = rows[lo:hi] - offset
    scores = None if part.scores is None else part.scores[local]
    return part.features.take(local), part.lengths[local], scores


@dataclass(frozen=True)
class Annotations:
    """What annotating adds to the clustered documents of one partition.

    Attributes
    ----------
    rows : ndarray, dtype int64
        Ascending global rows of the partition's documents in clusters of two or more.
    numbers : ndarray, dtype int64
        The cluster number of each (its record's number in the duplicates file).
    duplicate_of : list
        The id of the document kept for each, None for a kept one.
    similarity : list of float or None
        Its similarity to that document, None for a kept one.
    """

    rows: np.ndarray
    numbers: np.ndarray
    duplicate_of: list[Any]
    similarity: list[float | None]

    def records(
        self, batch: DocumentBatch, plain: bool, offset: int, source: str
    ) -> list[dict[str, Any]]:
        """Return every record of a batch, annotated as on one machine."""
        where = file_rows(source)
        out = []
        for k, (row, number, of, similarity) in enumerate(self._of_batch(batch, offset)):
            record = _record(batch, k, plain, offset)
            out.append(annotated(record, where, row - offset, number, of, similarity))
        return out

    def table(self, batch: DocumentBatch, offset: int, id_type: Any) -> Any:
        """Return a batch's Arrow records with the three columns, as one machine's Parquet.

        ``cluster`` is null outside clusters, ``duplicate_of`` (of ``id_type``, the ids') and
        ``similarity`` for kept documents and similarities not finite
        (`gpusimhash.dedup.outputs.Annotation.table`).
        """
        import pyarrow as pa

        columns = list(zip(*self._of_batch(batch, offset), strict=True)) or [()] * 4
        _, numbers, of, similarity = columns
        table = batch.table.append_column(
            "cluster", pa.array([n if n >= 0 else None for n in numbers], pa.int64())
        )
        table = table.append_column("duplicate_of", pa.array(list(of), id_type))
        finite = [v if v is not None and np.isfinite(v) else None for v in similarity]
        return table.append_column("similarity", pa.array(finite, pa.float64()))

    def _of_batch(
        self, batch: DocumentBatch, offset: int
    ) -> list[tuple[int, int, Any, float | None]]:
        """Return ``(global row, cluster number or -1, duplicate_of, similarity)`` per document."""
        rows = batch.rows + offset
        at = np.searchsorted(self.rows, rows)
        hit = at < self.rows.size
        hit[hit] = self.rows[at[hit]] == rows[hit]
        numbers = np.full(rows.size, -1, np.int64)
        numbers[hit] = self.numbers[at[hit]]
        return [
            (row, number, *((self.duplicate_of[j], self.similarity[j]) if inside else (None, None)))
            for row, j, inside, number in zip(
                rows.tolist(), at.tolist(), hit.tolist(), numbers.tolist(), strict=True
            )
        ]


@dataclass(frozen=True)
class Extras:
    """What writing a partition also does, besides its kept records (all optional).

    Attributes
    ----------
    annotations : Annotations, optional
        Write every record, annotated, instead of the kept ones.
    texts_of : ndarray, dtype int64
        Ascending global rows whose texts are returned.
    truth_field : str, optional
        Field of ground-truth labels: count each label's documents and kept documents.
    truth_tasks : int
        The label counts are split over this many tasks, by a hash of the label.
    """

    annotations: Annotations | None = None
    texts_of: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0, np.int64))
    truth_field: str | None = None
    truth_tasks: int = 1


class WrittenPart(NamedTuple):
    """What `write_part` wrote and collected.

    Attributes
    ----------
    records : int
        Records written.
    ids : list
        The ids of the wanted rows, in order. Without an id field, a document's id is its
        global row (and a plain-text record's ``"id"`` too), as for one file of every
        partition in order.
    texts : dict
        The text of each row of ``Extras.texts_of``.
    truth : list of (labels, documents, kept)
        With a truth field, for each of ``Extras.truth_tasks`` tasks: its labels, each one's
        documents and kept documents (int64).
    schema : pyarrow.Schema or None
        A Parquet part's schema, None where no record was written to it (and for JSONL and
        CSV): the parts are brought to one schema afterwards
        (`gpusimhash.io.parquet_parts.unified_schema`).
    header : list of str or None
        A CSV part's columns, None where it has none (and for JSONL and Parquet): the parts
        are brought to one header afterwards, as the schemas.
    """

    records: int
    ids: list[Any]
    texts: dict[int, str]
    truth: list[tuple[list[Any], np.ndarray, np.ndarray]]
    schema: Any
    header: list[str] | None


def write_part(
    part: PartFile,
    read: ReadOptions,
    offset: int,
    removed: np.ndarray,
    wanted: np.ndarray,
    out_path: Path,
    output_format: str,
    extras: Extras | None = None,
    *,
    schema: Any = None,
) -> WrittenPart:
    """Write the kept records of a partition to one output part; return ids of some rows.

    Parameters
    ----------
    part : PartFile
        The partition's file (read again: it must not have changed).
    read : ReadOptions
        How to read it.
    offset : int
        Global row of its first document.
    removed : ndarray, dtype int64
        Global rows of its removed documents.
    wanted : ndarray, dtype int64
        Global rows (ascending) whose ids are returned.
    out_path : Path
        The output part.
    output_format : {"jsonl", "parquet"}
        Its format.
    extras : Extras, optional
        Annotate every record instead, collect texts, count ground-truth labels.
    schema : pyarrow.Schema, optional
        Parquet output of Parquet inputs: the part's schema, the inputs' (annotated), the
        records written from the batches' Arrow data as one machine writes them
        (`gpusimhash.dedup.outputs.kept_schema`); None: inferred from the records.

    Returns
    -------
    WrittenPart

    Raises
    ------
    InputError
        The file changed since it was fingerprinted, a record has a field annotating would
        overwrite, or no valid truth label.
    """
    extras = Extras() if extras is None else extras
    keep = np.ones(part.n_docs, dtype=bool)
    keep[removed - offset] = False
    want = np.zeros(part.n_docs, dtype=bool)
    want[wanted - offset] = True
    text_wanted = np.zeros(part.n_docs, dtype=bool)
    text_wanted[extras.texts_of - offset] = True
    ids: list[Any] = []
    texts: dict[int, str] = {}
    table: dict[Any, int] = {}  # each truth label's number
    labels = []
    rows_read = 0
    format = read.format or detect_format(part.path)
    plain = format == "text"
    row_ids = read.rows_are_ids(part.path)
    source = str(part.path)
    # JSONL written back as its kept records' lines, as one machine writes them (where it
    # reads every record, to skip the invalid ones, it writes them again)
    as_lines = (
        format == output_format == "jsonl" and extras.annotations is None and not read.skip_invalid
    )
    batches = (
        read_json_lines(
            part.path,
            text_field=read.text_field,
            id_field=read.id_field,
            batch_size=read.batch_size,
        )
        if as_lines
        else read.batches(part.path, records=True)
    )
    header: list[str] = []  # a CSV part's header where it keeps no record: the first record's
    with RecordWriter(out_path, output_format, schema=schema) as writer:
        for batch in batches:
            rows = batch.rows
            rows_read += len(batch)
            if output_format == "csv" and not header and isinstance(batch, DocumentBatch):
                header = list(_record(batch, 0, plain, offset)) if len(batch) else []
            if rows_read > part.n_docs:
                break
            if isinstance(batch, JsonLineBatch):
                writer.write_lines(list(compress(batch.lines, keep[rows].tolist())))
            elif schema is not None and extras.annotations is None:
                writer.write_table(take_rows(batch.table, np.flatnonzero(keep[rows])))
            elif schema is not None and extras.annotations is not None:
                id_type = schema.field("duplicate_of").type
                writer.write_table(extras.annotations.table(batch, offset, id_type))
            elif extras.annotations is None:
                writer.write(
                    [_record(batch, int(k), plain, offset) for k in np.flatnonzero(keep[rows])]
                )
            else:
                writer.write(extras.annotations.records(batch, plain, offset, source))
            ids.extend(_id(batch, int(k), offset, row_ids) for k in np.flatnonzero(want[rows]))
            for k in np.flatnonzero(text_wanted[rows]).tolist():
                texts[int(rows[k]) + offset] = _text(batch, k)
            if extras.truth_field is not None:
                documents = batch.parsed() if isinstance(batch, JsonLineBatch) else batch
                labels.append(_truth_labels(documents, extras.truth_field, table, source))
        count = writer.count
        if header and not count:  # a part that tools reading the folder's parts can read
            writer.write_header(header)
        written_schema, written_header = writer.parquet_schema, writer.csv_header
        if rows_read != part.n_docs:  # checked before the part is written: no part of it
            raise InputError(
                f"{part.path}: changed while it was read ({part.n_docs} documents, then "
                f"{rows_read})"
            )
        part.state.check(part.path)
    truth = []
    if extras.truth_field is not None:
        label = np.concatenate([np.zeros(0, np.int64), *labels])
        truth = _split_labels(list(table), label, keep, extras.truth_tasks)
    return WrittenPart(int(count), ids, texts, truth, written_schema, written_header)


def read_ids(part: PartFile, read: ReadOptions, offset: int, rows: np.ndarray) -> list[Any]:
    """Return the ids of some documents of a partition (ascending global rows), in order."""
    want = np.zeros(part.n_docs, dtype=bool)
    want[rows - offset] = True
    row_ids = read.rows_are_ids(part.path)
    ids: list[Any] = []
    for batch in read.batches(part.path, records=False):
        wanted = np.flatnonzero(want[batch.rows])
        ids.extend(_id(batch, int(k), offset, row_ids) for k in wanted)
    return ids


def _truth_labels(
    batch: DocumentBatch, field_name: str, table: dict[Any, int], source: str
) -> np.ndarray:
    """Return a batch's truth labels numbered as on one machine (errors name the file's row)."""
    return record_labels(file_rows(source), batch, field_name, table)


def _split_labels(
    values: list[Any], label: np.ndarray, keep: np.ndarray, n_tasks: int
) -> list[tuple[list[Any], np.ndarray, np.ndarray]]:
    """Count each label's documents and kept ones; split the labels by `label_task`."""
    documents = np.bincount(label, minlength=len(values)).astype(np.int64)
    kept = np.bincount(label[keep], minlength=len(values)).astype(np.int64)
    task = np.array([label_task(v, n_tasks) for v in values], dtype=np.int64)
    return [
        ([values[k] for k in at.tolist()], documents[at], kept[at])
        for at in (np.flatnonzero(task == t) for t in range(n_tasks))
    ]


def label_task(value: Any, n_tasks: int) -> int:
    """Return the task of a truth label: equal labels (``1 == 1.0``) go to the same one.

    Strings and bytes are hashed with BLAKE2b, not Python's per-process salted hash.

    Examples
    --------
    >>> label_task("spam", 7) == label_task("spam", 7), label_task(1, 7) == label_task(1.0, 7)
    (True, True)
    """
    if isinstance(value, str):
        value = value.encode("utf-8", "surrogatepass")
    if isinstance(value, bytes):
        return int.from_bytes(hashlib.blake2b(value, digest_size=8).digest(), "little") % n_tasks
    if value is None:
        return 0
    return hash(value) % n_tasks  # numbers: the same hash in every process


def truth_counts(*pieces: tuple[list[Any], np.ndarray, np.ndarray]) -> dict[str, int]:
    """Sum one task's label counts over partitions; return `removal_counts` of its labels."""
    totals: dict[Any, list[int]] = {}
    for values, documents, kept in pieces:
        for value, n, k in zip(values, documents.tolist(), kept.tolist(), strict=True):
            total = totals.setdefault(value, [0, 0])
            total[0] += n
            total[1] += k
    counts = np.array(list(totals.values()), dtype=np.int64).reshape(-1, 2)
    return removal_counts(counts[:, 0], counts[:, 1])


def _id(batch: DocumentBatch | JsonLineBatch, k: int, offset: int, row_ids: bool) -> Any:
    """Return a document's id: its global row, or, unless ``row_ids``, its id field.

    ``row_ids``: `ReadOptions.rows_are_ids` of its partition.
    """
    if row_ids:
        return int(batch.rows[k]) + offset
    return batch.document(k)[0] if isinstance(batch, JsonLineBatch) else batch.ids[k]


def _text(batch: DocumentBatch | JsonLineBatch, k: int) -> str:
    """Return a document's text (a JSON line's parsed)."""
    return batch.document(k)[1] if isinstance(batch, JsonLineBatch) else batch.texts[k]


def _record(batch: DocumentBatch, k: int, plain: bool, offset: int) -> dict[str, Any]:
    """Return a document's record; a plain-text line's is numbered by its global row."""
    record = batch.record(k)
    if plain:
        return {"id": int(batch.rows[k]) + offset, "text": record["text"]}
    return record


def record_scores(path: Path, batch: DocumentBatch, field_name: str) -> np.ndarray:
    """Return the numeric score of every record of a batch (the single-machine rule)."""
    from gpusimhash.io.records import record_scores as scores

    return scores(file_rows(path), batch, field_name)

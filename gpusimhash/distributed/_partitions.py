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

import itertools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gpusimhash.codes import code_words
from gpusimhash.features import FeatureBatch
from gpusimhash.fingerprinting import FingerprintSettings, resolve_device
from gpusimhash.io.readers import (
    DocumentBatch,
    FileState,
    InputError,
    detect_format,
    read_batches,
)
from gpusimhash.io.writers import RecordWriter
from gpusimhash.search.verify import DocumentFeatures, fingerprint_batch

__all__ = [
    "Part",
    "PartFile",
    "ReadOptions",
    "collapse_pieces",
    "fingerprint_part",
    "part_file",
    "take_codes",
    "take_documents",
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
    """

    format: str | None
    text_field: str
    id_field: str | None
    batch_size: int
    score_field: str | None
    jaccard: bool
    device: str

    def batches(self, path: Path, *, records: bool) -> Any:
        """Read a partition in batches."""
        return read_batches(
            path,
            format=self.format,
            text_field=self.text_field,
            id_field=self.id_field,
            batch_size=self.batch_size,
            records=records,
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
    """

    path: Path
    state: FileState
    n_docs: int


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
    """

    path: Path
    state: FileState
    codes: np.ndarray
    features: DocumentFeatures
    lengths: np.ndarray
    scores: np.ndarray | None

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
    device = resolve_device(read.device)
    codes, lengths, scores, features = [], [], [], []
    for batch in read.batches(path, records=read.score_field is not None):
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
            scores.append(_scores(path, batch, read.score_field))
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
    )


def part_file(part: Part) -> PartFile:
    """Return a partition's file, state and number of documents (what the driver gathers)."""
    return PartFile(part.path, part.state, part.n_docs)


def collapse_pieces(
    part: Part, offset: int, n_tasks: int
) -> tuple[list[tuple[np.ndarray, np.ndarray]], np.ndarray]:
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
    pieces : list of (rows, words)
        For each collapse task: global rows (int64) and codes as uint64 words of its
        documents.
    featureless : ndarray, dtype int64
        Global rows of the documents without features (never joined).
    """
    has = part.features.sizes > 0
    local = np.flatnonzero(has)
    words = code_words(part.codes[local])
    task = (mix_words(words) % np.uint64(n_tasks)).astype(np.int64)
    order = np.argsort(task, kind="stable")
    bounds = np.searchsorted(task[order], np.arange(n_tasks + 1))
    rows = local + offset
    pieces = [(rows[order[lo:hi]], words[order[lo:hi]]) for lo, hi in itertools.pairwise(bounds)]
    return pieces, np.flatnonzero(~has).astype(np.int64) + offset


def mix_words(words: np.ndarray, salt: int = 0) -> np.ndarray:
    """Hash rows of uint64 words to uint64 (splitmix64 over the words; shuffle routing only)."""
    h = np.full(words.shape[0], (salt * 0x9E3779B97F4A7C15) % 2**64, dtype=np.uint64)
    for k in range(words.shape[1]):
        h = _splitmix(h ^ words[:, k])
    return h


def _splitmix(x: np.ndarray) -> np.ndarray:
    """Apply the splitmix64 finalizer (wrapping uint64 arithmetic)."""
    with np.errstate(over="ignore"):
        x = x + np.uint64(0x9E3779B97F4A7C15)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))


def take_codes(part: Part, rows: np.ndarray, offset: int) -> np.ndarray:
    """Return the codes of some documents of a partition (global rows)."""
    codes: np.ndarray = part.codes[rows - offset]
    return codes


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


def write_part(
    part: PartFile,
    read: ReadOptions,
    offset: int,
    removed: np.ndarray,
    wanted: np.ndarray,
    out_path: Path,
    output_format: str,
) -> tuple[int, list[Any]]:
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

    Returns
    -------
    kept : int
        Records written.
    ids : list
        The ids of the `wanted` rows, in order. Without an id field, a document's id is its
        global row (and a plain-text record's ``"id"`` too), as for one file of every
        partition in order.

    Raises
    ------
    InputError
        The file changed since it was fingerprinted.
    """
    keep = np.ones(part.n_docs, dtype=bool)
    keep[removed - offset] = False
    want = np.zeros(part.n_docs, dtype=bool)
    want[wanted - offset] = True
    ids: list[Any] = []
    rows_read = 0
    plain = (read.format or detect_format(part.path)) == "text"
    with RecordWriter(out_path, output_format) as writer:
        for batch in read.batches(part.path, records=True):
            rows = batch.rows
            rows_read += len(batch)
            if rows_read > part.n_docs:
                break
            writer.write(
                [_record(batch, int(k), plain, offset) for k in np.flatnonzero(keep[rows])]
            )
            ids.extend(_id(batch, int(k), read, offset) for k in np.flatnonzero(want[rows]))
        count = writer.count
    if rows_read != part.n_docs:
        raise InputError(
            f"{part.path}: changed while it was read ({part.n_docs} documents, then {rows_read})"
        )
    part.state.check(part.path)
    return int(count), ids


def _id(batch: DocumentBatch, k: int, read: ReadOptions, offset: int) -> Any:
    """Return a document's id: its id field, or its global row."""
    return batch.ids[k] if read.id_field is not None else int(batch.rows[k]) + offset


def _record(batch: DocumentBatch, k: int, plain: bool, offset: int) -> dict[str, Any]:
    """Return a document's record; a plain-text line's is numbered by its global row."""
    record = batch.record(k)
    if plain:
        return {"id": int(batch.rows[k]) + offset, "text": record["text"]}
    return record


def _scores(path: Path, batch: DocumentBatch, field_name: str) -> np.ndarray:
    """Return the numeric score of every record of a batch (the single-machine rule)."""
    from gpusimhash.dedup.pipeline import _scores as scores

    return scores(path, batch, field_name)

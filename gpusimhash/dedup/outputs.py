"""The record files of a dedup run: kept (or annotated) records, duplicates, pairs.

* ``kept.<fmt>``: the kept documents, whole records, in input order (`write_kept`); with
  ``annotate``, ``annotated.<fmt>`` instead: every record with ``cluster``, ``duplicate_of``
  and ``similarity`` added (`Annotation`).
* ``duplicates.<fmt>``: one record per cluster of two or more documents, with its members,
  their Hamming distances and their exact similarities to the kept one (`write_duplicates`).
* ``pairs.<fmt>`` (`write_pairs`, only when asked): every near-duplicate pair of documents,
  with what decided it. With verification, every candidate pair whose exact similarity reaches
  the threshold (found by verifying every candidate, not only those star clustering needs);
  without, every pair within the radius. Each record names both documents (``id_a``, ``id_b``,
  ``row_a``, ``row_b``, ``row_a < row_b``) and gives their Hamming ``distance`` and exact
  ``similarity`` (null without verification). Pairs come in row order; the file holds every
  pair, so it can be large where documents have many copies (``m`` copies make
  ``m (m - 1) / 2`` pairs).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import compress
from pathlib import Path
from typing import Any

import numpy as np

from gpusimhash.codes import hamming
from gpusimhash.dedup.duplicates_chunk import DuplicatesChunk, chunk_spans, write_chunk
from gpusimhash.dedup.results import Clusters, Fingerprints
from gpusimhash.dedup.row_ids import RowIds
from gpusimhash.io.json_spelling import spelled_floats, spelled_ids, spelled_ints
from gpusimhash.io.lines import LineBatch
from gpusimhash.io.parquet_schema import annotated_schema, input_schema, take_rows
from gpusimhash.io.readers import DocumentBatch as Batch
from gpusimhash.io.readers import InputError, JsonLineBatch
from gpusimhash.io.records import annotated
from gpusimhash.io.sources import Source
from gpusimhash.io.writers import RecordWriter

# records per write of the pairs file
PAIRS_CHUNK = 100_000
# a pair's JSON line, its values already spelled
_PAIR_LINE = b'{"id_a": %b, "id_b": %b, "row_a": %b, "row_b": %b, "distance": %b, "similarity": %b}'


def kept_schema(source: Source, output_format: str, annotate: bool) -> Any:
    """Return the schema kept (or annotated) records are written with, fixed before any work.

    Parquet output of Parquet inputs keeps the inputs' schema
    (`gpusimhash.io.parquet_schema.input_schema`), with the columns annotating adds; any other
    output infers its columns from the records.

    Parameters
    ----------
    source : Source
        The input files (their format, ids and name for messages).
    output_format : str
        The records' output format.
    annotate : bool
        Whether every record is written, annotated.

    Returns
    -------
    pyarrow.Schema or None

    Raises
    ------
    InputError
        Parquet inputs of different columns, or with a column annotating would overwrite.
    """
    if output_format != "parquet":
        return None
    schema = input_schema(source.paths, source.reading.format)
    if schema is not None and annotate:
        schema = annotated_schema(schema, source.id_field, source.name)
    return schema


def write_kept(
    source: Source,
    out_dir: Path,
    output_format: str,
    annotate: bool,
    clusters: Clusters,
    wanted_rows: set[int],
    files: dict[str, str],
    bar: Any,
    schema: Any = None,
) -> tuple[RowIds, dict[int, str]]:
    """Write the kept records (or every record, annotated); collect ids and wanted texts.

    With ``schema`` (Parquet output of Parquet inputs: `gpusimhash.io.parquet_schema`), the
    records are written from the batches' Arrow data, with that schema. Returns the ids of the
    clustered rows and the texts of ``wanted_rows``.
    """
    kept = clusters.kept
    annotation = Annotation.of(source, clusters) if annotate else None
    name = "kept" if annotation is None else "annotated"
    kept_path = out_dir / f"{name}.{output_format}"
    ids = RowIds()
    texts: dict[int, str] = {}
    rows_read = 0
    wanted_sorted = np.array(sorted(wanted_rows), dtype=np.int64)
    lines = annotation is None and schema is None and output_format == "jsonl"
    with RecordWriter(kept_path, output_format, schema=schema) as writer:
        for batch in source.record_batches() if lines else source.batches(records=True):
            rows = batch.rows
            rows_read += len(batch)
            if rows_read > len(kept):
                break
            clustered = np.flatnonzero(clusters.in_cluster[rows]).tolist()
            wanted = np.flatnonzero(np.isin(rows, wanted_sorted)).tolist()
            if isinstance(batch, JsonLineBatch):  # JSONL: the kept records' lines as they were
                ids.append(rows[clustered], batch.ids(clustered))
                texts.update((int(rows[k]), batch.document(k)[1]) for k in wanted)
                writer.write_lines(list(compress(batch.lines, kept[rows].tolist())))
                bar.update(len(batch))
                continue
            batch_ids = batch.ids
            ids.append(rows[clustered], [batch_ids[k] for k in clustered])
            if isinstance(batch, LineBatch):  # plain text: records {"id": row, "text": line}
                texts.update((int(rows[k]), batch.texts[k : k + 1].to_strings()[0]) for k in wanted)
                chosen = np.flatnonzero(kept[rows])
                writer.write_text_lines(rows[chosen].tolist(), batch.texts, chosen)
                bar.update(len(batch))
                continue
            texts.update((int(rows[k]), batch.texts[k]) for k in wanted)
            if schema is not None and annotation is None:
                writer.write_table(take_rows(batch.table, np.flatnonzero(kept[rows])))
            elif schema is not None and annotation is not None:
                id_type = schema.field("duplicate_of").type
                writer.write_table(annotation.table(batch, ids, id_type))
            elif annotation is None:
                writer.write([batch.record(int(k)) for k in np.flatnonzero(kept[rows])])
            else:
                writer.write(annotation.records(batch, ids))
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
class Annotation:
    """What ``annotate`` adds to each record: its cluster, the id kept for it, the similarity."""

    numbers: np.ndarray  # cluster number of every document (as in duplicates), -1: none
    kept_for: np.ndarray  # row of the document kept for every document
    removed: np.ndarray  # bool per document
    similarity: np.ndarray
    kept_ids: dict[int, Any]  # ids of kept rows read ahead (those after a member)
    where: Callable[[int], str]  # names a row of the read in progress (`Source.where`)

    @classmethod
    def of(cls, source: Source, clusters: Clusters) -> Annotation:
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
            cluster_numbers(clusters),
            kept_for,
            removed,
            clusters.similarity,
            kept_ids,
            source.where,
        )

    def records(self, batch: Batch, ids: RowIds) -> list[dict[str, Any]]:
        """Return the batch's records with the three fields added (``ids``: of clustered rows)."""
        return [
            annotated(batch.record(k), self.where, row, number, duplicate_of, similarity)
            for k, (row, number, duplicate_of, similarity) in enumerate(self._fields(batch, ids))
        ]

    def table(self, batch: Batch, ids: RowIds, id_type: Any) -> Any:
        """Return the batch's Arrow records with the three columns appended (no clash checked).

        The columns are null where `records` gives None: ``cluster`` outside clusters,
        ``duplicate_of`` and ``similarity`` for kept documents and similarities not finite.
        ``duplicate_of`` has ``id_type``, the id column's (ids past int64 need uint64).
        """
        import pyarrow as pa

        fields = list(zip(*self._fields(batch, ids), strict=True)) or [(), (), (), ()]
        _, numbers, duplicate_of, similarity = fields
        table = batch.table
        clusters = [n if n >= 0 else None for n in numbers]
        finite = [s if s is not None and np.isfinite(s) else None for s in similarity]
        table = table.append_column("cluster", pa.array(clusters, pa.int64()))
        table = table.append_column("duplicate_of", pa.array(list(duplicate_of), id_type))
        return table.append_column("similarity", pa.array(finite, pa.float64()))

    def _fields(self, batch: Batch, ids: RowIds) -> list[tuple[int, int, Any, float | None]]:
        """Return ``(row, cluster number, duplicate_of, similarity)`` for each document."""
        out = []
        for row in batch.rows.tolist():
            duplicate_of = similarity = None
            if self.removed[row]:
                kept = int(self.kept_for[row])
                duplicate_of = self.kept_ids[kept] if kept in self.kept_ids else ids[kept]
                similarity = float(self.similarity[row])
            out.append((row, int(self.numbers[row]), duplicate_of, similarity))
        return out


def cluster_numbers(clusters: Clusters) -> np.ndarray:
    """Return each document's cluster number (0, 1, ... over clusters of two or more; else -1)."""
    big = np.flatnonzero(clusters.sizes > 1)
    numbers = np.full(clusters.sizes.size, -1, dtype=np.int64)
    numbers[big] = np.arange(big.size)
    return numbers[clusters.labels]


def write_duplicates(
    out_dir: Path,
    output_format: str,
    clusters: Clusters,
    ids: RowIds,
    first: Fingerprints,
    files: dict[str, str],
) -> np.ndarray:
    """Write one record per cluster of two or more documents; return per-document cluster ids."""
    labels, sizes, codes = clusters.labels, clusters.sizes, first.codes
    path = out_dir / f"duplicates.{output_format}"
    rows = np.flatnonzero(clusters.in_cluster)
    rows = rows[np.argsort(labels[rows], kind="stable")]
    cluster = cluster_numbers(clusters)
    big = np.flatnonzero(sizes > 1)
    starts = np.searchsorted(labels[rows], big)
    # every member's fields at once, cluster by cluster, as Python lists to slice
    kept_ids = _listed(ids.take(clusters.kept_rows[big]))
    member_ids = _listed(ids.take(rows))
    member_rows = rows.tolist()
    distances = hamming(codes[rows], codes[clusters.kept_rows[labels[rows]]]).tolist()
    similarities = clusters.similarity[rows].tolist()
    bounds = np.append(starts, rows.size).astype(np.int64)  # the clusters are contiguous
    kept_rows = clusters.kept_rows[big].tolist()
    with RecordWriter(path, output_format) as writer:
        for lo, hi in chunk_spans(big.size):
            a, b = int(bounds[lo]), int(bounds[hi])
            chunk = DuplicatesChunk(
                first=lo,
                bounds=(bounds[lo : hi + 1] - a).tolist(),
                kept_ids=kept_ids[lo:hi],
                kept_rows=kept_rows[lo:hi],
                ids=member_ids[a:b],
                rows=member_rows[a:b],
                distances=distances[a:b],
                similarities=similarities[a:b],
            )
            write_chunk(writer, chunk)
    files[path.name] = (
        f"{big.size:,} clusters of near-duplicates: ids, rows, Hamming distance and exact "
        "similarity of every member to the kept one"
    )
    return cluster


def _listed(values: np.ndarray | list[Any]) -> list[Any]:
    """Return a slice of `RowIds.take`'s result as a list of Python values."""
    return values.tolist() if isinstance(values, np.ndarray) else values


def _pair_lines(
    ids_a: list[Any],
    ids_b: list[Any],
    rows_a: list[int],
    rows_b: list[int],
    distances: list[int],
    similarities: list[float | None],
) -> list[bytes] | None:
    """Return the pairs' JSON lines as `json` spells them, by orjson; None where it cannot.

    None where an id or a similarity is a value orjson spells otherwise
    (`gpusimhash.io.json_spelling`).

    Examples
    --------
    >>> _pair_lines(["a"], ["b"], [0], [3], [5], [None])
    [b'{"id_a": "a", "id_b": "b", "row_a": 0, "row_b": 3, "distance": 5, "similarity": null}']
    """
    a, b, values = spelled_ids(ids_a), spelled_ids(ids_b), spelled_floats(similarities)
    if a is None or b is None or values is None:
        return None
    columns = zip(
        a,
        b,
        spelled_ints(rows_a),
        spelled_ints(rows_b),
        spelled_ints(distances),
        values,
        strict=True,
    )
    return [_PAIR_LINE % fields for fields in columns]


def _plain(value: Any) -> Any:
    """Return a NumPy scalar as a Python value (for JSON and Parquet)."""
    return value.item() if isinstance(value, np.generic) else value


def write_pairs(
    folder: Path,
    output_format: str,
    pairs: np.ndarray,
    similarities: np.ndarray | None,
    codes: np.ndarray,
    ids: Sequence[Any] | None,
) -> tuple[str, str]:
    """Write ``pairs.<output_format>`` into ``folder``.

    Parameters
    ----------
    folder : Path
        The run's output folder.
    output_format : {"jsonl", "parquet", "csv"}
        As the run's other outputs.
    pairs : ndarray, shape (m, 2), dtype int64
        Rows of near-duplicate pairs, ``i < j``.
    similarities : ndarray, shape (m,), dtype float64, optional
        Their exact similarities (None: not verified).
    codes : ndarray, shape (n, bits // 8), dtype uint8
        Every document's code.
    ids : sequence, optional
        Every document's id, in row order (None: the rows are the ids).

    Returns
    -------
    name, description : str
        The file's name and what it holds, for the run's list of files.

    Examples
    --------
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> codes = np.array([[0], [1], [0]], dtype=np.uint8)
    >>> pairs = np.array([[0, 1], [0, 2]])
    >>> write_pairs(folder, "jsonl", pairs, np.array([0.9, 1.0]), codes, ["a", "b", "c"])[0]
    'pairs.jsonl'
    >>> print((folder / "pairs.jsonl").read_text().splitlines()[0])
    {"id_a": "a", "id_b": "b", "row_a": 0, "row_b": 1, "distance": 1, "similarity": 0.9}
    """
    from gpusimhash.io.writers import RecordWriter

    path = folder / f"pairs.{output_format}"
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    with RecordWriter(path, output_format) as writer:
        for lo in range(0, len(pairs), PAIRS_CHUNK):
            part = pairs[lo : lo + PAIRS_CHUNK]
            distances = hamming(codes[part[:, 0]], codes[part[:, 1]]).tolist()
            values = (
                [None] * len(part)
                if similarities is None
                else similarities[lo : lo + PAIRS_CHUNK].tolist()
            )
            rows_a, rows_b = part[:, 0].tolist(), part[:, 1].tolist()
            ids_a, ids_b = (
                (rows_a, rows_b)
                if ids is None
                else ([ids[a] for a in rows_a], [ids[b] for b in rows_b])
            )
            lines = (
                _pair_lines(ids_a, ids_b, rows_a, rows_b, distances, values)
                if output_format == "jsonl"
                else None
            )
            if lines is not None:
                writer.write_lines(lines)
                continue
            writer.write(
                [
                    {
                        "id_a": _plain(id_a),
                        "id_b": _plain(id_b),
                        "row_a": a,
                        "row_b": b,
                        "distance": d,
                        "similarity": s,
                    }
                    for id_a, id_b, a, b, d, s in zip(
                        ids_a, ids_b, rows_a, rows_b, distances, values, strict=True
                    )
                ]
            )
    what = "verified at the threshold" if similarities is not None else "within the radius"
    return path.name, (
        f"{len(pairs):,} near-duplicate pairs ({what}): both ids and rows, Hamming distance and "
        "exact similarity"
    )

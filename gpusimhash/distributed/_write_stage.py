"""The write stage of a distributed deduplication: kept parts, duplicates report, report.md.

`WriteStage._write` has each partition write its kept (or annotated) records to its own part,
reading its file again on any worker, while the driver builds the duplicates report from the
ids and codes of the clustered documents only. The write tasks take their rows from the
clustering's removals themselves, submitted before the removals reach the driver
(`WriteStage._start_write`), unless the report's sample or the annotations need the clusters
first. Where the ids are the documents' rows (no id field, or plain text), the driver writes
the report while the parts are written; otherwise the write tasks collect the ids as they
read, and the report follows them. With ``report`` it draws the single machine's sample of
pairs (codes fetched from the partitions, texts of the sampled documents only), and with
``truth_field`` it sums the ground-truth counts the write tasks made.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gpusimhash.codes import code_words, hamming
from gpusimhash.dedup import report as report_module
from gpusimhash.dedup.duplicates_chunk import DuplicatesChunk, chunk_spans, write_chunk
from gpusimhash.distributed import _partitions as partitions
from gpusimhash.distributed._cluster_stage import Removals
from gpusimhash.distributed._run import RunState, on_worker, piece, worker_names
from gpusimhash.evaluation import removal_figures
from gpusimhash.io.parquet_parts import unified_schema
from gpusimhash.io.writers import RecordWriter, rewrite_csv, rewrite_parquet

__all__ = ["ClusterRows", "WriteStage", "cluster_rows"]


class WriteStage(RunState):
    """Write the kept parts and the reports (a mixin of the run)."""

    def _start_write(self, found: Any) -> _Started:
        """Submit what needs only the clustering's removals, before they reach the driver.

        ``found`` is the future of the `Removals`. The clustered documents' codes are taken
        from each partition and, unless the report's sample or the annotations need the
        clusters first, each partition's kept part is written: each task takes its rows from
        the removals itself, so that it begins as the clustering ends, with no wait for the
        driver.
        """
        name = "annotated" if self.options.annotate else "kept"
        folder = self.out_dir / name
        folder.mkdir(parents=True, exist_ok=True)
        codes = [
            self.client.submit(
                _clustered_codes,
                part,
                found,
                int(self.offsets[d]),
                int(self.offsets[d + 1]),
                key=self.key("codes", d),
                priority=1,  # before the writes: the duplicates report waits for them
                **on_worker(self.holders[d]),
            )
            for d, part in enumerate(self.parts)
        ]
        started = _Started(found, folder, codes, [])
        if not (self.options.report or self.options.annotate):
            started.written = self._write_parts(started, {}, {})
        return started

    def _write_parts(
        self,
        started: _Started,
        texts_by: dict[int, np.ndarray],
        annotations: dict[int, partitions.Annotations],
    ) -> list[Any]:
        """Submit each partition's write task; return their futures.

        ``texts_by`` holds the rows whose texts each partition collects (the report's sample),
        ``annotations`` each partition's annotations (``annotate``). The tasks are spread over
        the workers when submitted, not held back by the scheduler until one is free: the
        driver writes the duplicates report meanwhile (`on_worker`).
        """
        client, options = self.client, self.options
        fmt = options.output_format
        with_ids = not self.read.ids_are_rows(self.paths)
        empty = np.zeros(0, np.int64)
        workers = worker_names(client)
        return [
            client.submit(
                _write_part,
                file,
                started.found,
                self.read,
                (int(self.offsets[d]), int(self.offsets[d + 1])),
                with_ids,
                started.folder / f"part-{d:05d}.{fmt}",
                fmt,
                partitions.Extras(
                    annotations=annotations.get(d),
                    texts_of=texts_by.get(d, empty),
                    truth_field=options.truth_field,
                    truth_tasks=self._truth_tasks,
                ),
                schema=self.kept_schema,
                key=self.key("write", d),
                **on_worker(workers[d % len(workers)]),
            )
            for d, file in enumerate(self.files)
        ]

    def _write(self, started: _Started, found: Removals) -> tuple[dict[str, str], ClusterRows]:
        """Write each partition's kept (or annotated) part, and the duplicates report.

        ``started`` holds the tasks `_start_write` submitted, ``found`` the removals. With
        ``report``, the report's sample is drawn first (its texts are collected while the
        parts are written); with ``truth_field``, the ground-truth scores are counted. Where
        the ids are the rows (`ReadOptions.ids_are_rows`), the duplicates report is written
        while the parts are; otherwise the write tasks collect the clustered documents' ids
        first. Returns the files written and the rows of each cluster (a kept document and
        those removed for it), by first row.
        """
        options = self.options
        fmt = options.output_format
        name = started.folder.name
        ids_known = self.read.ids_are_rows(self.paths)
        clusters, clustered = _clustered(found.removed, found.kept_for, found.similarity)
        sample = None
        if not started.written:  # report, annotate: their write tasks need the clusters
            code_of = self._codes(started.codes) if options.report else None
            sample = None if code_of is None else self._sample(clustered, clusters, code_of)
            texts_by = dict(
                self._by_partition(np.zeros(0, np.int64) if sample is None else sample["rows"])
            )
            wanted_by = dict(self._by_partition(found.clustered))
            annotations = (
                self._annotations(clustered, wanted_by, ids_known) if options.annotate else {}
            )
            started.written = self._write_parts(started, texts_by, annotations)
        written = started.written
        # the label counts stay on the workers, summed there by label (`_ground_truth`)
        finished = (
            written
            if options.truth_field is None
            else [self.client.submit(_without_truth, w) for w in written]
        )
        report = _report_columns(clustered, clusters, self._codes(started.codes))
        path = self.out_dir / f"duplicates.{fmt}"
        ids = clustered.rows.tolist() if ids_known else []
        if ids_known:
            _write_duplicates(path, fmt, report, ids)
        done = self.client.gather(finished)
        if fmt == "parquet" and self.kept_schema is None:
            self._unify_parts(started.folder, fmt, [part.schema for part in done])
        elif fmt == "csv":
            self._unify_headers(started.folder, fmt, [(part.records, part.header) for part in done])
        self.ground_truth = (
            None if options.truth_field is None else self._ground_truth(written, self._truth_tasks)
        )
        kept_count = sum(part.records for part in done)
        if not ids_known:
            ids = [i for part in done for i in part.ids]
            _write_duplicates(path, fmt, report, ids)
        files = {
            f"{name}/": (
                f"the {kept_count:,} kept documents, one part per input partition"
                if not options.annotate
                else f"all {kept_count:,} documents, one part per input partition, with "
                "cluster, duplicate_of (the id of the document kept for it) and similarity"
            ),
            path.name: f"{len(clusters):,} clusters of near-duplicates",
            "summary.json": "this summary, as JSON",
        }
        if sample is not None:
            texts = {row: text for part in done for row, text in part.texts.items()}
            shown = np.unique([r for e in sample["examples"] for r in (e["kept"], *e["members"])])
            at = np.searchsorted(clustered.rows, shown).tolist()
            example_ids = dict(zip(clustered.rows[at].tolist(), [ids[k] for k in at], strict=True))
            self.report_data = report_module.sampled_cosines(
                sample, texts, self.settings.featurizer, example_ids
            )
            self.report_data["cluster_sizes"] = clusters.sizes
            files["report.md"] = "the report, with plots (PNG)"
        return files, clusters

    @property
    def _truth_tasks(self) -> int:
        """Tasks summing the ground-truth label counts: two per worker, at most one a part."""
        return max(1, min(len(self.paths), 2 * self.n_workers))

    def _unify_parts(self, folder: Path, fmt: str, schemas: list[Any]) -> None:
        """Rewrite the Parquet parts whose inferred schema is not all parts' (on the workers).

        Each part inferred its columns from its own records (`gpusimhash.io.parquet_parts`);
        those that differ from the schema of all of them (a part without records, a column
        of nulls, a field some parts lack) are rewritten under it.

        Raises
        ------
        ValueError
            A column of other types in two parts, naming both (as one file refuses it).
        """
        paths = [folder / f"part-{d:05d}.{fmt}" for d in range(len(schemas))]
        schema = unified_schema([(str(p), s) for p, s in zip(paths, schemas, strict=True)])
        client = self.client
        client.gather(
            [
                client.submit(rewrite_parquet, path, schema, key=self.key("conform", d))
                for d, (path, written) in enumerate(zip(paths, schemas, strict=True))
                if written is None or not written.equals(schema)
            ]
        )

    def _unify_headers(
        self, folder: Path, fmt: str, written: list[tuple[int, list[str] | None]]
    ) -> None:
        """Rewrite the CSV parts whose header is not all parts' (on the workers).

        ``written`` holds each part's records and header. A part's header holds its records'
        fields in the order first met (a part of no records, its first input record's); the
        header of one file of all the records holds every part's, in the order first met over
        the parts. The parts that differ (a field some parts lack) are rewritten under it, and a
        part of no records is its header alone, so the parts, their headers but the first left
        out, are that file.
        """
        headers = [header for count, header in written if count]
        names = list(dict.fromkeys(name for header in headers for name in header or ()))
        if not names:  # no record anywhere
            return
        client = self.client
        client.gather(
            [
                client.submit(
                    rewrite_csv if count else _csv_header,
                    folder / f"part-{d:05d}.{fmt}",
                    names,
                    key=self.key("conform", d),
                )
                for d, (count, header) in enumerate(written)
                if header != names
            ]
        )

    def _codes(self, taken: list[Any]) -> np.ndarray:
        """Gather codes taken from partitions, in order."""
        return self._stacked(self.client.gather(taken))

    def _stacked(self, codes: list[np.ndarray]) -> np.ndarray:
        """Stack codes taken from partitions, in order."""
        width = self.settings.bits // 8
        return np.concatenate([np.zeros((0, width), np.uint8), *codes])

    def _ground_truth(self, written: list[Any], n_tasks: int) -> dict[str, Any]:
        """Score removals from label counts summed by label on the workers (`label_task`)."""
        client = self.client
        counts = client.gather(
            [
                client.submit(
                    partitions.truth_counts, *(client.submit(piece, w, 3, t) for w in written)
                )
                for t in range(n_tasks)
            ]
        )
        return removal_figures({key: sum(c[key] for c in counts) for key in counts[0]})

    def _annotations(
        self, clustered: _Clustered, wanted_by: dict[int, np.ndarray], ids_known: bool
    ) -> dict[int, partitions.Annotations]:
        """Each partition's annotations; the ids of the kept documents (one a cluster) first.

        Those ids are read from their partitions, unless they are the rows (``ids_known``).
        """
        client = self.client
        kept_rows = np.unique(clustered.rows[clustered.kept])
        if ids_known:
            kept_ids = dict(zip(kept_rows.tolist(), kept_rows.tolist(), strict=True))
        else:
            read = [
                client.submit(
                    partitions.read_ids, self.files[d], self.read, int(self.offsets[d]), rows
                )
                for d, rows in self._by_partition(kept_rows)
            ]
            ids = itertools.chain(*client.gather(read))
            kept_ids = dict(zip(kept_rows.tolist(), ids, strict=True))
        removed = clustered.removed.tolist()
        kept = clustered.rows[clustered.kept].tolist()
        of = [kept_ids[row] if r else None for row, r in zip(kept, removed, strict=True)]
        similarity = clustered.similarity.tolist()
        to_kept = [value if r else None for value, r in zip(similarity, removed, strict=True)]
        # every partition's, a partition without clustered documents too
        empty = np.zeros(0, np.int64)
        rows = [wanted_by.get(d, empty) for d in range(len(self.paths))]
        bounds = np.cumsum([0, *(r.size for r in rows)]).tolist()
        return {
            d: partitions.Annotations(rows[d], clustered.number[lo:hi], of[lo:hi], to_kept[lo:hi])
            for d, (lo, hi) in enumerate(itertools.pairwise(bounds))
        }

    def _sample(
        self, clustered: _Clustered, clusters: ClusterRows, code_of: np.ndarray
    ) -> dict[str, Any]:
        """Draw the report's sample as the single machine does, codes fetched where they are.

        ``code_of`` holds the codes of the clustered documents, by position.
        """
        client = self.client
        hashes = np.concatenate(
            [
                np.zeros(0, np.uint64),
                *client.gather(
                    [
                        client.submit(
                            partitions.take_hashes, self.parts[d], rows, int(self.offsets[d])
                        )
                        for d, rows in self._by_partition(clustered.rows)
                    ]
                ),
            ]
        )
        found, distances = _found_pairs(clustered, code_of, hashes)
        kept_local = clustered.kept[np.searchsorted(clustered.rows, clusters.firsts)]
        view = report_module.ClusterView(clustered.number, kept_local, clustered.similarity)
        examples = report_module.largest_clusters(view, code_of)  # by position among them
        for example in examples:
            example["kept"] = int(clustered.rows[example["kept"]])
            example["members"] = clustered.rows[example["members"]].tolist()
        return report_module.draw_sample(
            clustered.rows[found].reshape(-1, 2),
            distances,
            examples,
            n=int(self.offsets[-1]),
            bits=self.settings.bits,
            radius=self.radius,
            seed=self.settings.seed,
            codes_of=self._codes_of,
            neighbourhood=self._neighbourhood,
        )

    def _codes_of(self, rows: np.ndarray) -> np.ndarray:
        """Return the codes of some global rows, taken from their partitions."""
        unique, inverse = np.unique(rows, return_inverse=True)
        taken = [
            self.client.submit(
                partitions.take_codes, self.parts[d], part_rows, int(self.offsets[d])
            )
            for d, part_rows in self._by_partition(unique)
        ]
        return self._codes(taken)[inverse]

    def _neighbourhood(self, queries: np.ndarray, limit: int) -> tuple[np.ndarray, ...]:
        """Every (query, row, distance) within ``limit``, in the single machine's order."""
        client = self.client
        [query_codes] = client.scatter([self._codes_of(queries)], broadcast=True, hash=False)
        found = client.gather(
            [
                client.submit(
                    partitions.search_neighbours, part, query_codes, limit, int(self.offsets[d])
                )
                for d, part in enumerate(self.parts)
            ]
        )
        at, rows, distances = (
            np.concatenate([np.zeros(0, np.int64), *pieces]) for pieces in zip(*found, strict=True)
        )
        query = queries[at]
        other = query != rows
        query, rows, distances = query[other], rows[other], distances[other]
        # one scan of CODES_PER_SCAN rows after another, each by query, then row
        order = np.lexsort((rows, query, rows // report_module.CODES_PER_SCAN))
        return query[order], rows[order], distances[order]

    def _report(self, summary: dict[str, Any]) -> None:
        """Write ``report.md`` and its plots (after the summary, which it shows)."""
        report_module.write_report(self.out_dir, summary, **self.report_data)


def _csv_header(path: Path, names: list[str]) -> None:
    """Write a CSV part of no records: the header alone (a task)."""
    with RecordWriter(path, "csv") as writer:
        writer.write_header(names)


def _without_truth(written: partitions.WrittenPart) -> partitions.WrittenPart:
    """Return what a write task wrote and collected, but its label counts (a task)."""
    return written._replace(truth=[])


@dataclass
class _Started:
    """The write stage's tasks submitted before the removals reach the driver (`_start_write`).

    ``written`` is empty until the write tasks are submitted.
    """

    found: Any  # the future of the clustering's `Removals`
    folder: Path  # the parts' folder
    codes: list[Any]  # each partition's clustered documents' codes
    written: list[Any]  # each partition's write task


def _clustered_codes(part: partitions.Part, found: Removals, lo: int, hi: int) -> np.ndarray:
    """Return the codes of a partition's clustered documents (rows ``lo .. hi - 1``; a task)."""
    return partitions.take_codes(part, _within(found.clustered, lo, hi), lo)


def _write_part(
    file: partitions.PartFile,
    found: Removals,
    read: partitions.ReadOptions,
    bounds: tuple[int, int],
    with_ids: bool,
    out_path: Path,
    output_format: str,
    extras: partitions.Extras,
    *,
    schema: Any,
) -> partitions.WrittenPart:
    """Write a partition's part (rows ``bounds``), its rows taken from the removals (a task).

    With ``with_ids``, the ids of its clustered documents are collected
    (`partitions.write_part`).
    """
    lo, hi = bounds
    wanted = _within(found.clustered, lo, hi) if with_ids else found.clustered[:0]
    return partitions.write_part(
        file,
        read,
        lo,
        _within(found.removed, lo, hi),
        wanted,
        out_path,
        output_format,
        extras,
        schema=schema,
    )


def _within(rows: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """Return the ascending rows from ``lo`` up to, not including, ``hi``."""
    a, b = np.searchsorted(rows, [lo, hi])
    return rows[a:b]


@dataclass
class _ReportColumns:
    """The duplicates report by column, every value but the ids (`_report_columns`).

    Arrays, not lists: the records are made a chunk of clusters at a time (`chunks`), so the
    driver never holds the whole report as Python objects.
    """

    bounds: np.ndarray  # cluster c's members are positions bounds[c]:bounds[c + 1]
    member_local: np.ndarray  # each member's position among the clustered documents
    kept_local: np.ndarray  # each cluster's kept document's position among them
    kept_rows: np.ndarray
    member_rows: np.ndarray
    distances: np.ndarray
    similarities: np.ndarray

    def chunks(self, ids: list[Any]) -> Iterator[DuplicatesChunk]:
        """Yield the clusters in the single machine's chunks (`chunk_spans`).

        ``ids`` holds the clustered documents' ids by position.
        """
        for lo, hi in chunk_spans(self.bounds.size - 1):
            first, last = int(self.bounds[lo]), int(self.bounds[hi])
            yield DuplicatesChunk(
                first=lo,
                bounds=(self.bounds[lo : hi + 1] - first).tolist(),
                kept_ids=[ids[k] for k in self.kept_local[lo:hi].tolist()],
                kept_rows=self.kept_rows[lo:hi].tolist(),
                ids=[ids[k] for k in self.member_local[first:last].tolist()],
                rows=self.member_rows[first:last].tolist(),
                distances=self.distances[first:last].tolist(),
                similarities=self.similarities[first:last].tolist(),
            )


@dataclass
class _Clustered:
    """Every document of a cluster of two or more, by position (ascending rows)."""

    rows: np.ndarray  # ascending global rows
    number: np.ndarray  # cluster number (its record's number in the duplicates file)
    kept: np.ndarray  # position of the document kept for it
    similarity: np.ndarray  # similarity to it (1.0 for a kept document)
    removed: np.ndarray  # bool


def _clustered(
    removed: np.ndarray, kept_for: np.ndarray, to_kept: np.ndarray
) -> tuple[ClusterRows, _Clustered]:
    """Return the clusters' rows, and each clustered document's number, kept one, similarity.

    ``removed``, ``kept_for`` and ``to_kept`` hold the removed rows (ascending), their kept
    rows and similarities. The clusters come in report order (`cluster_rows`).
    """
    clusters = cluster_rows(removed, kept_for)
    rows = np.sort(clusters.members)
    at_removed = np.searchsorted(rows, removed)
    similarity = np.ones(rows.size)
    similarity[at_removed] = to_kept
    kept = np.arange(rows.size)
    kept[at_removed] = np.searchsorted(rows, kept_for)
    number = np.empty(rows.size, np.int64)
    number[np.searchsorted(rows, clusters.members)] = np.repeat(
        np.arange(len(clusters)), clusters.sizes
    )
    return clusters, _Clustered(rows, number, kept, similarity, kept != np.arange(rows.size))


@dataclass(frozen=True)
class ClusterRows:
    """The rows of every cluster of two or more documents, one after another, in report order.

    Clusters come by their lowest row, each cluster's rows ascending: the single machine's
    report order. Arrays, not one array per cluster, so that ordering them costs no Python
    object per cluster.

    Attributes
    ----------
    members : ndarray, dtype int64
        Every cluster's rows, a cluster after another.
    bounds : ndarray, dtype int64
        Cluster ``c``'s rows are ``members[bounds[c]:bounds[c + 1]]``.
    """

    members: np.ndarray
    bounds: np.ndarray

    def __len__(self) -> int:
        """Return the number of clusters."""
        return int(self.bounds.size - 1)

    @property
    def sizes(self) -> np.ndarray:
        """Each cluster's documents."""
        return np.diff(self.bounds)

    @property
    def firsts(self) -> np.ndarray:
        """Each cluster's lowest row."""
        return self.members[self.bounds[:-1]]

    def split(self) -> list[np.ndarray]:
        """Return each cluster's rows, an array per cluster."""
        return np.split(self.members, self.bounds[1:-1]) if len(self) else []


def cluster_rows(removed: np.ndarray, kept_for: np.ndarray) -> ClusterRows:
    """Return the rows of each cluster (a kept document and those removed for it), by first row.

    Examples
    --------
    >>> found = cluster_rows(np.array([1, 4, 5]), np.array([3, 0, 3]))
    >>> found.members.tolist(), found.bounds.tolist()
    ([0, 4, 1, 3, 5], [0, 2, 5])
    """
    kept = np.unique(kept_for)
    rows = np.concatenate([removed, kept]).astype(np.int64)
    label = np.concatenate([kept_for, kept])
    order = np.lexsort((rows, label))
    rows, label = rows[order], label[order]
    starts = np.flatnonzero(np.r_[True, label[1:] != label[:-1]]) if rows.size else rows[:0]
    sizes = np.diff(np.r_[starts, rows.size])
    by_first = np.argsort(rows[starts], kind="stable")  # clusters share no row
    bounds = np.r_[0, np.cumsum(sizes[by_first])].astype(np.int64)
    taken = np.repeat(starts[by_first] - bounds[:-1], sizes[by_first]) + np.arange(bounds[-1])
    return ClusterRows(rows[taken], bounds)


def _write_duplicates(path: Path, fmt: str, report: _ReportColumns, ids: list[Any]) -> None:
    """Write the duplicates report, ``ids`` the clustered documents' ids by position."""
    with RecordWriter(path, fmt) as writer:
        for chunk in report.chunks(ids):
            write_chunk(writer, chunk)


def _report_columns(
    clustered: _Clustered, clusters: ClusterRows, code_of: np.ndarray
) -> _ReportColumns:
    """Every value of the duplicates report but the ids, a column at a time.

    ``code_of`` holds the codes of the clustered documents, by position.
    """
    bounds, members = clusters.bounds, clusters.members
    local = np.searchsorted(clustered.rows, members)
    kept_of = clustered.kept
    kept_local = kept_of[local[bounds[:-1]]]
    return _ReportColumns(
        bounds=bounds,
        member_local=local,
        kept_local=kept_local,
        kept_rows=clustered.rows[kept_local],
        member_rows=members,
        distances=hamming(code_of[local], code_of[kept_of[local]]).astype(np.int64),
        similarities=clustered.similarity[local],
    )


def _found_pairs(
    clustered: _Clustered, code_of: np.ndarray, hashes: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Return the pairs the single machine's report samples from (positions), with distances.

    Its units are the documents of one code with identical features (one cluster each): one
    pair per pair of distinct units of a removed document and its kept one, ordered by
    their lowest documents, then one (lowest, second lowest) per unit of several documents
    (`gpusimhash.cluster._documents.Clustering.kept_pairs`). Identical features are told by
    their 64-bit hashes here (the single machine also compares them entry by entry).
    """
    m = clustered.rows.size
    if not m:
        return np.zeros((0, 2), np.int64), np.zeros(0, np.int64)
    key = np.column_stack([clustered.kept.astype(np.uint64), hashes, code_words(code_of)])
    unit = np.unique(key, axis=0, return_inverse=True)[1].reshape(-1)
    order = np.lexsort((np.arange(m), unit))
    starts = np.flatnonzero(np.r_[True, unit[order][1:] != unit[order][:-1]])
    sizes = np.diff(np.r_[starts, m])
    lowest = np.empty(m, np.int64)
    lowest[order] = np.repeat(order[starts], sizes)
    removed = np.flatnonzero(clustered.removed)
    a, b = lowest[removed], lowest[clustered.kept[removed]]
    differ = a != b
    pairs = np.unique(np.stack([np.minimum(a, b), np.maximum(a, b)], axis=1)[differ], axis=0)
    repeated = starts[sizes > 1]
    identical = np.stack([order[repeated], order[repeated + 1]], axis=1)
    identical = identical[np.argsort(identical[:, 0])]
    found = np.concatenate([pairs.reshape(-1, 2), identical]).astype(np.int64)
    distances = hamming(code_of[found[:, 0]], code_of[found[:, 1]]) if len(found) else np.zeros(0)
    return found, np.asarray(distances)

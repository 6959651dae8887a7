"""The whole dedup on a Dask cluster, from partitioned files to kept files.

Stages (task keys ``gpusimhash-<stage>-<run>-...``):

1. ``fingerprint``: each partition (one input file) is read, featurized and fingerprinted on
   a worker and stays there (`Part`); the driver learns only its number of documents.
2. ``collapse``: (row, code, feature hash) of every featured document, 32 bytes at 128 bits,
   shuffled by code; identical codes collapse to one, identical documents to one unit.
3. ``table``: for each of the ``r + 1`` pigeonhole tables, (row, code) of every distinct code,
   24 bytes at 128 bits, shuffled by the table's key; each task joins its buckets and keeps
   the pairs no earlier table found (`gpusimhash.distributed._tables`).
4. ``verify``: candidate pairs of units go to the partition of their first document and are
   verified there on the features (`gpusimhash.distributed._verify`).
5. ``cluster``: the verified pairs (24 bytes each: two rows and the similarity), the members of
   units of two or more documents (16 bytes each) and the keep-policy values of the documents
   in them (8 bytes) are gathered on the driver, which runs the single-machine star clustering
   (or connected components) on them: clustering is sequential, and these are all it needs.
   The similarity of every removed document to its kept one is then measured on the workers.
6. ``write``: each partition writes its kept records to its own output part; the driver writes
   the duplicates report from the ids and codes of the clustered documents only.
"""

from __future__ import annotations

import dataclasses
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gpusimhash.codes import hamming
from gpusimhash.dedup.pipeline import DedupOptions, _has_id_field
from gpusimhash.distributed import _partitions as partitions
from gpusimhash.distributed import _tables as tables
from gpusimhash.distributed._verify import pair_similarities, route_pairs
from gpusimhash.fingerprinting import FingerprintSettings
from gpusimhash.io.inputs import STDIN, input_files
from gpusimhash.io.writers import RecordWriter, write_json
from gpusimhash.search.clusters import cluster_labels, keep_one, star_clusters
from gpusimhash.text import TextFeaturizer

__all__ = ["DistributedResult", "dedup"]

_TASK_DOCUMENTS = 500_000  # documents per collapse or join task at least, beyond two per worker
_UNSUPPORTED = {
    "truth_field": None,
    "recall": None,
    "report": False,
    "annotate": False,
}


@dataclass
class DistributedResult:
    """What a distributed deduplication found and wrote.

    Attributes
    ----------
    summary : dict
        As the single-machine summary (``settings``, ``results``, ``cluster_sizes``,
        ``timings_s``, ``files``), plus ``distributed``: workers, partitions, tables and the
        bytes each shuffle moved.
    removed : ndarray, dtype int64
        Global rows of the removed documents, ascending.
    kept_for : ndarray, dtype int64
        The document kept for each removed one.
    clusters : list of ndarray
        The rows of each cluster of two or more documents, in report order.
    """

    summary: dict[str, Any]
    removed: np.ndarray
    kept_for: np.ndarray
    clusters: list[np.ndarray]


def dedup(
    inputs: str | Path | Sequence[str | Path],
    out_dir: str | Path,
    *,
    client: Any = None,
    bits: int = 256,
    seed: int = 0,
    featurizer: TextFeaturizer | None = None,
    **options: Any,
) -> DistributedResult:
    r"""Remove near-duplicate documents from partitioned files on a Dask cluster.

    The result is the single-machine `gpusimhash.dedup.pipeline.dedup_file` result for one
    file holding every partition in order (documents numbered by global row), whatever the
    number of workers and partitions: the same kept documents, clusters and duplicates report.

    Parameters
    ----------
    inputs : str, Path or sequence of them
        Files, folders and glob patterns (`gpusimhash.io.inputs.input_files`): one partition
        per file. Without an id field, ids come from an ``id`` field when the first record
        has one, else they are global rows (as on one machine).
    out_dir : str or Path
        Output folder: ``kept/part-NNNNN.<fmt>`` (one part per partition, its kept records in
        input order), ``duplicates.<fmt>`` and ``summary.json``.
    client : dask.distributed.Client, optional
        The cluster; default: the current client (``distributed.get_client()``).
    bits, seed, featurizer
        How to fingerprint (a tf-idf featurizer must be fitted beforehand).
    **options
        The fields of `gpusimhash.dedup.pipeline.DedupOptions`, except ``truth_field``,
        ``recall`` (the join is exact), ``report`` and ``annotate``.

    Returns
    -------
    DistributedResult

    Raises
    ------
    InputError
        A problem with an input file (names file, line and field), as on one machine.
    ValueError
        A bad or unsupported option, an unfitted tf-idf featurizer, or no client.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from dask.distributed import Client
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "a.txt").write_text("red fox\nblue sky\n")
    >>> _ = (folder / "b.txt").write_text("red fox\ngreen sea\n")
    >>> with Client(processes=False, n_workers=1, dashboard_address=":0") as client:
    ...     result = dedup(folder, folder / "out", client=client, bits=64)
    >>> result.removed.tolist(), result.kept_for.tolist()
    ([2], [0])
    >>> sorted(p.name for p in (folder / "out" / "kept").iterdir())
    ['part-00000.jsonl', 'part-00001.jsonl']
    """
    for name, default in _UNSUPPORTED.items():
        if options.get(name, default) != default:
            raise ValueError(f"the distributed dedup does not support {name}={options[name]!r}")
    settings = FingerprintSettings(
        bits=bits, seed=seed, featurizer=TextFeaturizer() if featurizer is None else featurizer
    )
    if settings.featurizer.weighting == "tfidf" and not settings.featurizer.is_fitted:
        raise ValueError("fit the tf-idf featurizer on the corpus first (featurizer.fit(...))")
    paths = input_files(inputs)
    if Path(STDIN) in paths:
        raise ValueError("standard input (-) cannot be partitioned: write it to a file first")
    dedup_options = DedupOptions(**options)
    if dedup_options.id_field is None and _has_id_field(paths[0], dedup_options):
        dedup_options = dataclasses.replace(dedup_options, id_field="id")
    run = _Run(
        client=_client(client),
        paths=paths,
        out_dir=Path(out_dir),
        settings=settings,
        options=dedup_options,
    )
    return run.execute()


def _client(client: Any) -> Any:
    """Return the given client, or the current one."""
    if client is not None:
        return client
    from dask.distributed import get_client

    try:
        return get_client()
    except ValueError:
        raise ValueError(
            "no Dask client: pass client=, or start one (dask.distributed.Client(...))"
        ) from None


def _piece(value: Any, *path: int) -> Any:
    """``value[path[0]][path[1]]...`` (a task: pieces are picked where they are)."""
    for key in path:
        value = value[key]
    return value


def _nbytes(value: Any) -> int:
    """Bytes of the arrays in nested lists and tuples."""
    if isinstance(value, np.ndarray):
        return int(value.nbytes)
    if isinstance(value, list | tuple):
        return sum(_nbytes(v) for v in value)
    return 0


def _code_units(*collapsed: tables.Collapsed) -> np.ndarray:
    """Every collapse task's (code, unit) map, sorted."""
    both = np.concatenate([np.zeros((0, 2), np.int64), *(c.code_units for c in collapsed)])
    return both[np.lexsort((both[:, 1], both[:, 0]))]


def _members(collapsed: tables.Collapsed) -> tuple[np.ndarray, int]:
    """Return the members of a collapse task's units, and its number of distinct codes."""
    return collapsed.members, int(collapsed.rows.size)


@dataclass
class _Run:
    """One distributed deduplication: the inputs, the cluster and the futures of each stage."""

    client: Any
    paths: list[Path]
    out_dir: Path
    settings: FingerprintSettings
    options: DedupOptions

    def key(self, stage: str, *index: int) -> str:
        """Return a task key: stage, run and indices."""
        return "-".join(["gpusimhash", stage, self.token, *map(str, index)])

    def execute(self) -> DistributedResult:
        """Run every stage; return the result."""
        self.token = uuid.uuid4().hex[:10]
        options, settings = self.options, self.settings
        self.limit = options.threshold(settings.bits)
        timings: dict[str, float] = {}
        start = time.perf_counter()
        self.out_dir.mkdir(parents=True, exist_ok=True)
        read = partitions.ReadOptions(
            format=options.format,
            text_field=options.text_field,
            id_field=options.id_field,
            batch_size=options.batch_size,
            score_field=options.score_field,
            jaccard=self.limit.measure == "jaccard",
            verify=self.limit.verify,
            device=options.device,
        )
        self.read = read
        clock = time.perf_counter()
        self.parts = [
            self.client.submit(
                partitions.fingerprint_part, path, settings, read, key=self.key("fingerprint", p)
            )
            for p, path in enumerate(self.paths)
        ]
        sizes = self.client.gather(
            [
                self.client.submit(partitions.part_size, part, key=self.key("size", p))
                for p, part in enumerate(self.parts)
            ]
        )
        self.offsets = np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)]).astype(np.int64)
        timings["fingerprint"] = time.perf_counter() - clock
        clock = time.perf_counter()
        pairs, similarity, members, featureless, stats = self._join_and_verify()
        timings["join_verify"] = time.perf_counter() - clock
        clock = time.perf_counter()
        removed, kept_for, clusters = self._cluster(pairs, similarity, members, featureless)
        to_kept = self._similarity_to_kept(removed, kept_for)
        timings["cluster"] = time.perf_counter() - clock
        clock = time.perf_counter()
        files = self._write(removed, kept_for, clusters, to_kept)
        timings["write"] = time.perf_counter() - clock
        timings["total"] = time.perf_counter() - start
        summary = self._summary(removed, to_kept, clusters, stats, files, timings)
        write_json(self.out_dir / "summary.json", summary)
        return DistributedResult(summary, removed, kept_for, clusters)

    # ------------------------------------------------------------ join and verify

    def _join_and_verify(
        self,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Collapse, join every table and verify; gather the verified pairs of units."""
        client, bits = self.client, self.settings.bits
        n_parts = len(self.paths)
        n_workers = max(1, len(client.scheduler_info().get("workers", {})))
        # tasks per shuffle: two per worker, more for a big corpus, never more than partitions
        wanted = max(2 * n_workers, -(-int(self.offsets[-1]) // _TASK_DOCUMENTS))
        n_tasks = max(1, min(n_parts, wanted))
        n_words = -(-bits // 64)
        split = [
            client.submit(
                partitions.collapse_pieces,
                part,
                int(self.offsets[p]),
                n_tasks,
                key=self.key("collapse-split", p),
            )
            for p, part in enumerate(self.parts)
        ]
        collapsed = [
            client.submit(
                tables.collapse,
                [
                    client.submit(_piece, s, 0, b, key=self.key("collapse-piece", p, b))
                    for p, s in enumerate(split)
                ],
                n_words,
                key=self.key("collapse", b),
            )
            for b in range(n_tasks)
        ]
        code_units = client.submit(_code_units, *collapsed, key=self.key("code-units"))
        blocks = tables.pigeonhole_blocks(bits, self.limit.radius)
        pieces = [
            client.submit(tables.table_pieces, c, blocks, n_tasks, key=self.key("table-split", b))
            for b, c in enumerate(collapsed)
        ]
        candidates = [
            client.submit(
                tables.join_table,
                [
                    client.submit(_piece, piece, t, j, key=self.key("table-piece", t, j, b))
                    for b, piece in enumerate(pieces)
                ],
                t,
                blocks,
                bits,
                self.limit.radius,
                code_units,
                key=self.key("table", t, j),
            )
            for t in range(len(blocks))
            for j in range(n_tasks)
        ]
        same_code = [
            client.submit(_piece_attribute, c, "same_code", key=self.key("same-code", b))
            for b, c in enumerate(collapsed)
        ]
        routes = [
            client.submit(route_pairs, c, self.offsets, key=self.key("route", k))
            for k, c in enumerate([*same_code, *candidates])
        ]
        routed = [
            [
                client.submit(_piece, r, d, key=self.key("routed", k, d))
                for k, r in enumerate(routes)
            ]
            for d in range(n_parts)
        ]
        stats = {
            "collapse_bytes": sum(client.gather([client.submit(_nbytes, s) for s in split])),
            "table_bytes": sum(client.gather([client.submit(_nbytes, p) for p in pieces])),
            "tables": len(blocks),
            "blocks": [list(b) for b in blocks],
        }
        if self.limit.verify:
            found = pair_similarities(
                client,
                self.parts,
                self.offsets,
                routed,
                measure=self.limit.measure,
                threshold=self.limit.value,
                name=self.key("verify"),
            )
        else:
            found = [
                client.submit(_unverified, *pieces_, key=self.key("unverified", d))
                for d, pieces_ in enumerate(routed)
            ]
        results = client.gather(found)
        candidate_counts = client.gather(
            [client.submit(len, c, key=self.key("count", k)) for k, c in enumerate(candidates)]
        ) + client.gather([client.submit(len, s) for s in same_code])
        stats["candidate_unit_pairs"] = int(sum(candidate_counts))
        member_parts = client.gather([client.submit(_members, c) for c in collapsed])
        stats["distinct_codes"] = sum(count for _, count in member_parts)
        pairs = np.concatenate([np.zeros((0, 2), np.int64), *(r[0] for r in results)])
        similarity = np.concatenate([np.zeros(0), *(r[1] for r in results)])
        members = np.concatenate([np.zeros((0, 2), np.int64), *(m for m, _ in member_parts)])
        featureless = np.concatenate(
            [np.zeros(0, np.int64), *client.gather([client.submit(_piece, s, 1) for s in split])]
        )
        return pairs, similarity, members, featureless, stats

    # ------------------------------------------------------------ cluster

    def _cluster(
        self,
        pairs: np.ndarray,
        similarity: np.ndarray,
        members: np.ndarray,
        featureless: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
        """Cluster on the driver, over the documents in pairs or units only."""
        options = self.options
        extra = [featureless] if options.empty_as_duplicates and featureless.size > 1 else []
        involved = np.unique(np.concatenate([pairs.reshape(-1), members.reshape(-1), *extra]))
        unit_row = involved.copy()
        unit_row[np.searchsorted(involved, members[:, 0])] = members[:, 1]
        if extra:
            unit_row[np.searchsorted(involved, featureless)] = featureless.min()
        units = np.searchsorted(involved, unit_row)
        unit_pairs = np.searchsorted(involved, pairs)
        lengths, scores = self._policy_values(involved)
        n = involved.size
        if options.cluster == "star":
            stars = star_clusters(
                unit_pairs,
                similarity,
                n,
                units=units,
                policy=options.keep,
                lengths=lengths,
                scores=scores,
            )
            labels, kept_for = stars.labels, stars.kept_for
        else:
            labels = cluster_labels(unit_pairs, n)[units] if n else units
            keep = keep_one(labels, policy=options.keep, lengths=lengths, scores=scores)
            kept_of = np.empty(int(labels.max()) + 1 if n else 0, dtype=np.int64)
            kept_of[labels[keep]] = np.flatnonzero(keep)
            kept_for = kept_of[labels]
        removed = np.flatnonzero(kept_for != np.arange(n))
        sizes = np.bincount(labels, minlength=int(labels.max()) + 1 if n else 0)
        in_big = np.flatnonzero(sizes[labels] > 1)
        by_cluster = in_big[np.lexsort((in_big, labels[in_big]))]
        bounds = np.flatnonzero(np.diff(labels[by_cluster])) + 1
        clusters = [involved[c] for c in np.split(by_cluster, bounds) if c.size]
        clusters.sort(key=lambda rows: int(rows[0]))
        return involved[removed], involved[kept_for[removed]], clusters

    def _policy_values(self, rows: np.ndarray) -> tuple[np.ndarray | None, np.ndarray | None]:
        """Lengths and scores of some documents, when the keep policy needs them."""
        if self.options.keep == "first":
            return None, None
        routed = self._by_partition(rows)
        values = self.client.gather(
            [
                self.client.submit(partitions.take_policy, self.parts[d], r, int(self.offsets[d]))
                for d, r in routed
            ]
        )
        lengths = np.concatenate([np.zeros(0, np.int64), *(v[0] for v in values)])
        if self.options.keep == "score":
            return lengths, np.concatenate([np.zeros(0), *(v[1] for v in values)])
        return lengths, None

    def _by_partition(self, rows: np.ndarray) -> list[tuple[int, np.ndarray]]:
        """Split ascending global rows by partition (nonempty ones only)."""
        bounds = np.searchsorted(rows, self.offsets)
        return [
            (d, rows[bounds[d] : bounds[d + 1]])
            for d in range(len(self.paths))
            if bounds[d + 1] > bounds[d]
        ]

    def _similarity_to_kept(self, removed: np.ndarray, kept_for: np.ndarray) -> np.ndarray:
        """Measure every removed document against its kept one, on the workers."""
        pairs = np.stack([removed, kept_for], axis=1).astype(np.int64)
        routed = [[piece] for piece in route_pairs(pairs, self.offsets)]
        results = self.client.gather(
            pair_similarities(
                self.client,
                self.parts,
                self.offsets,
                routed,
                measure=self.limit.measure,
                threshold=None,
                empty_as_duplicates=self.options.empty_as_duplicates,
                name=self.key("measure"),
            )
        )
        measured = np.concatenate([np.zeros((0, 2), np.int64), *(r[0] for r in results)])
        values = np.concatenate([np.zeros(0), *(r[1] for r in results)])
        order = np.argsort(measured[:, 0])
        return values[order]

    # ------------------------------------------------------------ write

    def _write(
        self,
        removed: np.ndarray,
        kept_for: np.ndarray,
        clusters: list[np.ndarray],
        to_kept: np.ndarray,
    ) -> dict[str, str]:
        """Write each partition's kept part, then the duplicates report."""
        fmt = self.options.output_format
        folder = self.out_dir / "kept"
        folder.mkdir(parents=True, exist_ok=True)
        clustered = np.sort(np.concatenate([np.zeros(0, np.int64), *clusters]))
        removed_by = dict(self._by_partition(removed))
        wanted_by = dict(self._by_partition(clustered))
        empty = np.zeros(0, np.int64)
        written = [
            self.client.submit(
                partitions.write_part,
                part,
                self.read,
                int(self.offsets[d]),
                removed_by.get(d, empty),
                wanted_by.get(d, empty),
                folder / f"part-{d:05d}.{fmt}",
                fmt,
                key=self.key("write", d),
            )
            for d, part in enumerate(self.parts)
        ]
        codes = [
            self.client.submit(partitions.take_codes, self.parts[d], rows, int(self.offsets[d]))
            for d, rows in self._by_partition(clustered)
        ]
        done = self.client.gather(written)
        ids = [i for _, part_ids in done for i in part_ids]
        code_of = np.concatenate(
            [np.zeros((0, self.settings.bits // 8), np.uint8), *self.client.gather(codes)]
        )
        self.kept_count = sum(count for count, _ in done)
        similarity = np.ones(clustered.size)
        similarity[np.searchsorted(clustered, removed)] = to_kept
        kept_of = np.arange(clustered.size)
        kept_of[np.searchsorted(clustered, removed)] = np.searchsorted(clustered, kept_for)
        path = self.out_dir / f"duplicates.{fmt}"
        with RecordWriter(path, fmt) as writer:
            records = []
            for number, rows in enumerate(clusters):
                local = np.searchsorted(clustered, rows)
                kept = int(kept_of[local[0]])
                member_codes = code_of[local]
                distances = hamming(
                    member_codes, np.broadcast_to(code_of[kept], member_codes.shape)
                )
                records.append(
                    {
                        "cluster": number,
                        "size": int(rows.size),
                        "kept_id": ids[kept],
                        "kept_row": int(clustered[kept]),
                        "ids": [ids[k] for k in local.tolist()],
                        "rows": rows.tolist(),
                        "distances": distances.astype(int).tolist(),
                        "similarities": similarity[local].tolist(),
                    }
                )
            writer.write(records)
        return {
            "kept/": f"the {self.kept_count:,} kept documents, one part per input partition",
            path.name: f"{len(clusters):,} clusters of near-duplicates",
            "summary.json": "this summary, as JSON",
        }

    # ------------------------------------------------------------ summary

    def _summary(
        self,
        removed: np.ndarray,
        to_kept: np.ndarray,
        clusters: list[np.ndarray],
        stats: dict[str, Any],
        files: dict[str, str],
        timings: dict[str, float],
    ) -> dict[str, Any]:
        """Describe the run's settings and results."""
        n = int(self.offsets[-1])
        limit, settings = self.limit, self.settings
        sizes = np.array([c.size for c in clusters], dtype=np.int64)
        size_values, size_counts = np.unique(
            np.concatenate([sizes, np.ones(n - int(sizes.sum()), np.int64)]), return_counts=True
        )
        below = int(np.sum(~(to_kept >= limit.value)))
        n_tables = stats["tables"]
        return {
            "input": [str(p) for p in self.paths],
            "settings": {
                "bits": settings.bits,
                "seed": settings.seed,
                "analyzer": settings.featurizer.analyzer,
                "ngram": settings.featurizer.ngram,
                "weighting": settings.featurizer.weighting,
                "max_distance": limit.radius,
                "join": "exact",
                "verify": limit.verify,
                "similarity": limit.measure,
                "threshold": limit.value,
                "cluster": self.options.cluster,
                "empty_as_duplicates": self.options.empty_as_duplicates,
                "keep": self.options.keep,
            },
            "results": {
                "documents": n,
                "kept": n - int(removed.size),
                "removed": int(removed.size),
                "clusters": len(clusters),
                "largest_cluster": int(sizes.max()) if sizes.size else (1 if n else 0),
                "lowest_similarity_to_kept": float(np.nanmin(to_kept)) if to_kept.size else None,
                "removed_below_threshold": below,
                "distinct_codes": stats["distinct_codes"],
                "candidate_unit_pairs": stats["candidate_unit_pairs"],
            },
            "cluster_sizes": {
                str(int(s)): int(c) for s, c in zip(size_values, size_counts, strict=True)
            },
            "distributed": {
                "workers": len(self.client.scheduler_info().get("workers", {})),
                "partitions": len(self.paths),
                "tables": n_tables,
                "blocks": stats["blocks"],
                "collapse_shuffle_bytes": stats["collapse_bytes"],
                "table_shuffle_bytes": stats["table_bytes"],
                "table_shuffle_bytes_per_document_per_table": (
                    round(stats["table_bytes"] / n / n_tables, 2) if n else 0.0
                ),
            },
            "timings_s": {k: round(v, 4) for k, v in timings.items()},
            "files": files,
        }


def _piece_attribute(value: Any, name: str) -> Any:
    """Return an attribute of a task's result (a task)."""
    return getattr(value, name)


def _unverified(*pieces: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Candidate pairs taken as they are, with an undefined similarity."""
    pairs = np.concatenate([np.zeros((0, 2), np.int64), *pieces])
    return pairs, np.full(len(pairs), np.nan)

"""The whole dedup on a Dask cluster, from partitioned files to kept files.

Stages (task keys ``gpusimhash-<stage>-<run>-...``):

1. ``fingerprint``: each partition (one input file) is read, featurized and fingerprinted on
   a worker and stays there (`Part`); the driver learns only its number of documents.
2. ``collapse``: (row, code) of every featured document, 24 bytes at 128 bits, shuffled by
   code; identical codes collapse to one.
3. ``table``: for each of the ``r + 1`` pigeonhole tables, (row, code) of every distinct code,
   24 bytes at 128 bits, shuffled by the table's key; each task joins its buckets and keeps
   the pairs of distinct codes no earlier table found (`gpusimhash.distributed._tables`).
   A crowded bucket (over `_tables.SPLIT_CODES` codes) is joined apart, by ``share`` tasks.
4. ``cluster``: the components of the candidate graph of distinct codes are labelled on the
   workers by large-star / small-star label propagation over node shards
   (`gpusimhash.distributed._components`: each component named by its lowest code, the same
   for any partitioning); each shard names its documents in components and labels its pairs,
   the work of each component is summed where its label lives, and components are dealt to
   groups (the heavy ones one by one, the rest by a hash of the label); each partition takes
   the features, lengths and scores of its share of a group, and one task per group runs the
   single-machine clustering on them: candidates verified lazily inside the star loop
   (`gpusimhash.distributed._groups`). The driver sees a few numbers per shard and the heavy
   components; only (row, kept row, similarity) of the removed documents come back.
5. ``write``: each partition writes its kept records to its own output part; the driver writes
   the duplicates report from the ids and codes of the clustered documents only.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import itertools
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gpusimhash.codes import hamming
from gpusimhash.dedup.pipeline import DedupOptions, _has_id_field
from gpusimhash.distributed import _components as components
from gpusimhash.distributed import _groups as groups
from gpusimhash.distributed import _partitions as partitions
from gpusimhash.distributed import _tables as tables
from gpusimhash.fingerprinting import FingerprintSettings
from gpusimhash.io.inputs import STDIN, input_files
from gpusimhash.io.writers import RecordWriter, write_json
from gpusimhash.text import TextFeaturizer

__all__ = ["DistributedResult", "dedup"]

# documents per collapse or join task at least, beyond two per worker: each shuffle is
# n_tasks ** 2 piece tasks of about 0.7 ms of the scheduler's time each (measured on 2 local
# workers), so 1B documents make 63 tasks (about 3 s of scheduler time per shuffle), while a task
# holds at most 16M codes (384 MB of rows and codes at 128 bits)
_TASK_DOCUMENTS = 16_000_000
_GROUPS_PER_WORKER = 2  # clustering tasks per worker
_MAX_ROUNDS = 256  # label propagation needs O(log^2 n) rounds: more means a bug
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
        self.files = self.client.gather(
            [
                self.client.submit(partitions.part_file, part, key=self.key("file", p))
                for p, part in enumerate(self.parts)
            ]
        )
        sizes = [file.n_docs for file in self.files]
        self.offsets = np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)]).astype(np.int64)
        timings["fingerprint"] = time.perf_counter() - clock
        clock = time.perf_counter()
        stats = self._join()
        timings["join"] = time.perf_counter() - clock
        clock = time.perf_counter()
        removed, kept_for, to_kept, clusters = self._cluster(stats)
        timings["cluster"] = time.perf_counter() - clock
        clock = time.perf_counter()
        files = self._write(removed, kept_for, clusters, to_kept)
        timings["write"] = time.perf_counter() - clock
        timings["total"] = time.perf_counter() - start
        summary = self._summary(removed, to_kept, clusters, stats, files, timings)
        write_json(self.out_dir / "summary.json", summary)
        return DistributedResult(summary, removed, kept_for, clusters)

    # ------------------------------------------------------------ join

    def _join(self) -> dict[str, Any]:
        """Collapse identical codes and join every table; keep the futures of both."""
        client, bits = self.client, self.settings.bits
        n_parts = len(self.paths)
        self.n_workers = max(1, len(client.scheduler_info().get("workers", {})))
        # tasks per shuffle: two per worker, more for a big corpus, never more than partitions
        wanted = max(2 * self.n_workers, -(-int(self.offsets[-1]) // _TASK_DOCUMENTS))
        n_tasks = max(1, min(n_parts, wanted))
        self.n_tasks = n_tasks
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
        self.collapsed = [
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
        # what the clustering gathers besides the pairs, ready by the time they are
        self.members = [client.submit(_members, c) for c in self.collapsed]
        blocks = tables.pigeonhole_blocks(bits, self.limit.radius)
        pieces = [
            client.submit(tables.table_pieces, c, blocks, n_tasks, key=self.key("table-split", b))
            for b, c in enumerate(self.collapsed)
        ]
        sorted_codes = {
            (t, j): client.submit(
                tables.bucket_table,
                [
                    client.submit(_piece, piece, t, j, key=self.key("table-piece", t, j, b))
                    for b, piece in enumerate(pieces)
                ],
                t,
                blocks,
                bits,
                self.limit.radius,
                key=self.key("table-sort", t, j),
            )
            for t in range(len(blocks))
            for j in range(n_tasks)
        }
        self.candidates = [
            client.submit(
                tables.join_table,
                codes,
                t,
                blocks,
                bits,
                self.limit.radius,
                key=self.key("table", t, j),
            )
            for (t, j), codes in sorted_codes.items()
        ]
        crowded = self._split_crowded(sorted_codes, blocks)
        self.featureless = np.concatenate(
            [np.zeros(0, np.int64), *client.gather([client.submit(_piece, s, 1) for s in split])]
        )
        return {
            **crowded,
            "collapse_bytes": sum(client.gather([client.submit(_nbytes, s) for s in split])),
            "table_bytes": sum(client.gather([client.submit(_nbytes, p) for p in pieces])),
            "tables": len(blocks),
            "blocks": [list(b) for b in blocks],
            "distinct_codes": sum(
                client.gather([client.submit(_distinct, c) for c in self.collapsed])
            ),
        }

    def _split_crowded(
        self, sorted_codes: dict[tuple[int, int], Any], blocks: tuple[tuple[int, int], ...]
    ) -> dict[str, int]:
        """Join each crowded bucket by share tasks; add their futures to the candidates.

        The driver learns only the crowded buckets' sizes and estimated seconds, from each
        table task as soon as it has sorted its codes; each bucket is selected on the worker
        holding them, and its shares, ahead of the table tasks still waiting (the longest work
        first), run wherever Dask puts them. The candidates stay in (table, task, bucket) order.
        """
        from dask.distributed import as_completed

        client, bits, radius = self.client, self.settings.bits, self.limit.radius
        asked = {
            client.submit(tables.crowded_work, codes): task for task, codes in sorted_codes.items()
        }
        found: dict[tuple[int, int, int], list[Any]] = {}
        for future, buckets in as_completed(asked, with_results=True):  # type: ignore[no-untyped-call]
            t, j = asked[future]
            for i, (_, seconds) in enumerate(buckets):
                bucket = client.submit(
                    tables.crowded_bucket,
                    sorted_codes[t, j],
                    i,
                    key=self.key("bucket", t, j, i),
                    priority=1,
                )
                shares = tables.share_count(seconds, self.n_workers)
                found[t, j, i] = [
                    client.submit(
                        tables.join_share,
                        bucket,
                        share,
                        shares,
                        t,
                        blocks,
                        bits,
                        radius,
                        key=self.key("share", t, j, i, share),
                        priority=1,
                    )
                    for share in range(shares)
                ]
        for index in sorted(found):
            self.candidates += found[index]
        return {
            "crowded_buckets": len(found),
            "split_buckets": sum(len(shares) > 1 for shares in found.values()),
            "share_tasks": sum(map(len, found.values())),
        }

    # ------------------------------------------------------------ cluster

    def _cluster(
        self, stats: dict[str, Any]
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[np.ndarray]]:
        """Label the components on the workers, deal them to groups, cluster each group.

        Each stage's futures are dropped once the next stage is submitted, so that the workers
        let their results go as soon as they are used.
        """
        client, options = self.client, self.options
        documents, labelled = self._shard_components(self._label_components(stats))
        work = self._component_work(documents, labelled)
        totals = np.array(
            client.gather(
                [client.submit(_totals, w, p) for w, p in zip(work, labelled, strict=True)]
            ),
            dtype=np.int64,
        ).reshape(-1, 3)
        # the featureless documents share one code of their own: a component alone
        featureless = np.zeros((0, 2), np.int64)
        if options.empty_as_duplicates and self.featureless.size > 1:
            code = np.full_like(self.featureless, self.featureless.min())
            featureless = np.stack([self.featureless, code], axis=1)
        n_components = int(totals[:, 1].sum()) + bool(featureless.size)
        n_groups = max(1, min(_GROUPS_PER_WORKER * self.n_workers, n_components))
        stats["candidate_code_pairs"] = int(totals[:, 2].sum())
        stats["components"] = n_components
        stats["cluster_groups"] = n_groups
        stats["pairs_verified"] = 0
        if not n_components:
            empty = np.zeros(0, np.int64)
            return empty, empty, np.zeros(0), []
        threshold = (totals[:, 0].sum() + len(featureless)) / (n_groups * groups.HEAVY_PER_GROUP)
        found = client.gather(
            [client.submit(groups.heavy_components, w, threshold, n_groups) for w in work]
        )
        del work
        heavy = np.concatenate([np.zeros((0, 2), np.int64), *(f[0] for f in found)])
        if featureless.size:
            heavy = np.concatenate([heavy, [[featureless[0, 1], len(featureless)]]])
        dealt = groups.deal_heavy(heavy, np.sum([f[1] for f in found], axis=0))
        routed = [
            client.submit(
                groups.route_groups, d, p, dealt, n_groups, self.offsets, key=self.key("route", j)
            )
            for j, (d, p) in enumerate(zip(documents, labelled, strict=True))
        ]
        del documents, labelled
        clustered = client.gather(self._cluster_groups(routed, n_groups, dealt, featureless))
        stats["pairs_verified"] = int(sum(c[3] for c in clustered))
        removed = np.concatenate([c[0] for c in clustered])
        kept_for = np.concatenate([c[1] for c in clustered])
        similarity = np.concatenate([c[2] for c in clustered])
        order = np.argsort(removed)
        removed, kept_for, similarity = removed[order], kept_for[order], similarity[order]
        return removed, kept_for, similarity, _clusters(removed, kept_for)

    def _shard_components(self, labels: list[Any]) -> tuple[list[Any], list[Any]]:
        """Name each node shard's documents in components and label its pairs (futures)."""
        client = self.client
        pairs = self._shuffled(self.candidates, 0, "pairs")
        members = self._shuffled(self.members, 1, "members")
        self.candidates, self.members = [], []
        documents = [
            client.submit(groups.shard_documents, lj, mj, key=self.key("documents", j))
            for j, (lj, mj) in enumerate(zip(labels, members, strict=True))
        ]
        labelled = [
            client.submit(groups.shard_pairs, lj, pj, key=self.key("labelled", j))
            for j, (lj, pj) in enumerate(zip(labels, pairs, strict=True))
        ]
        return documents, labelled

    def _component_work(self, documents: list[Any], labelled: list[Any]) -> list[Any]:
        """Sum each component's work in the node shard of its label (futures)."""
        client, n_shards = self.client, self.n_tasks
        pieces = [
            client.submit(groups.work_pieces, d, p, n_shards)
            for d, p in zip(documents, labelled, strict=True)
        ]
        return [
            client.submit(
                groups.component_work,
                [client.submit(_piece, w, j) for w in pieces],
                key=self.key("component-work", j),
            )
            for j in range(n_shards)
        ]

    def _cluster_groups(
        self,
        routed: list[Any],
        n_groups: int,
        dealt: tuple[np.ndarray, np.ndarray],
        featureless: np.ndarray,
    ) -> list[Any]:
        """Gather each group's documents and pairs, take their features, cluster (futures)."""
        client = self.client
        counts = np.sum(client.gather([client.submit(_piece, r, 2) for r in routed]), axis=0)
        extra: dict[int, list[Any]] = {}
        if featureless.size:
            g = int(groups.group_of(featureless[:1, 1], dealt, n_groups)[0])
            extra[g] = client.scatter([featureless], hash=False)
            counts[g] += np.bincount(
                np.searchsorted(self.offsets, featureless[:, 0], side="right") - 1,
                minlength=len(self.paths),
            )
        results = []
        for g in range(n_groups):
            inputs = client.submit(
                groups.group_inputs,
                [client.submit(_piece, r, 0, g) for r in routed] + extra.get(g, []),
                [client.submit(_piece, r, 1, g) for r in routed],
                key=self.key("group", g),
            )
            # each partition's share of the group, taken where the partition is
            taken = [
                client.submit(
                    partitions.take_documents,
                    part,
                    client.submit(
                        groups.rows_between,
                        inputs,
                        int(self.offsets[d]),
                        int(self.offsets[d + 1]),
                    ),
                    int(self.offsets[d]),
                    key=self.key("group-take", g, d),
                )
                for d, part in enumerate(self.parts)
                if counts[g, d]
            ]
            results.append(
                client.submit(
                    _cluster_group,
                    inputs,
                    self.limit,
                    self.options.cluster,
                    self.options.keep,
                    self.options.empty_as_duplicates,
                    *taken,
                    key=self.key("cluster", g),
                )
            )
        return results

    def _shuffled(self, futures: list[Any], column: int, name: str) -> list[list[Any]]:
        """Route the rows of each future's array by the node shard of a column: ``[shard][source]``."""
        client, n_shards = self.client, self.n_tasks
        split = [
            client.submit(components.by_node, f, column, n_shards, key=self.key(name, i))
            for i, f in enumerate(futures)
        ]
        return [[client.submit(_piece, s, j) for s in split] for j in range(n_shards)]

    def _label_components(self, stats: dict[str, Any]) -> list[Any]:
        """Label the components of the candidate graph by large-star / small-star rounds.

        Returns each node shard's (codes, components) future
        (`gpusimhash.distributed._components`); the driver sees only whether a step changed
        anything.
        """
        client, n_shards = self.client, self.n_tasks
        edges = [
            client.submit(components.local_edges, c, n_shards, key=self.key("edges", i))
            for i, c in enumerate(self.candidates)
        ]
        moved = sum(client.gather([client.submit(_nbytes, e) for e in edges]))
        current = self._star_round(
            [[client.submit(_piece, e, j) for e in edges] for j in range(n_shards)], 1
        )
        for rounds in range(1, _MAX_ROUNDS + 1):
            # the next round runs while the driver reads this one's reports
            following = self._star_round(current[1], rounds + 1)
            reports = client.gather(current[0])
            moved += sum(nbytes for _, nbytes in reports)
            if not any(changed for changed, _ in reports):
                break
            current = following
        else:
            raise RuntimeError(f"the component labels did not settle in {_MAX_ROUNDS} rounds")
        del following  # a round past the last: every component was a star already
        stats["label_rounds"] = rounds
        stats["label_bytes"] = moved
        return [
            client.submit(components.shard_labels, current[1][j], key=self.key("labels", j))
            for j in range(n_shards)
        ]

    def _star_round(
        self, shards: list[list[Any]], number: int
    ) -> tuple[list[Any], list[list[Any]]]:
        """Submit a large-star and a small-star step over every node shard.

        Returns the futures of each step's (changed, bytes emitted) and, for each shard, of the
        pieces it receives.
        """
        client, n_shards = self.client, self.n_tasks
        reports = []
        for large in (True, False):
            steps = [
                client.submit(
                    components.star_step,
                    shards[j],
                    n_shards,
                    large,
                    key=self.key("star", number, int(large), j),
                )
                for j in range(n_shards)
            ]
            shards = [[client.submit(_piece, s, 1, j) for s in steps] for j in range(n_shards)]
            reports += [client.submit(_step_report, s) for s in steps]
        return reports, shards

    def _by_partition(self, rows: np.ndarray) -> list[tuple[int, np.ndarray]]:
        """Split ascending global rows by partition (nonempty ones only)."""
        bounds = np.searchsorted(rows, self.offsets)
        return [
            (d, rows[bounds[d] : bounds[d + 1]])
            for d in range(len(self.paths))
            if bounds[d + 1] > bounds[d]
        ]

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
        # the codes first (small tasks), so the report's arrays are ready while parts are written
        codes = [
            self.client.submit(partitions.take_codes, self.parts[d], rows, int(self.offsets[d]))
            for d, rows in wanted_by.items()
        ]
        written = [
            self.client.submit(
                partitions.write_part,
                file,
                self.read,
                int(self.offsets[d]),
                removed_by.get(d, empty),
                wanted_by.get(d, empty),
                folder / f"part-{d:05d}.{fmt}",
                fmt,
                key=self.key("write", d),
            )
            for d, file in enumerate(self.files)
        ]
        code_of = np.concatenate(
            [np.zeros((0, self.settings.bits // 8), np.uint8), *self.client.gather(codes)]
        )
        report = _report_columns(clustered, removed, kept_for, to_kept, clusters, code_of)
        done = self.client.gather(written)
        self.kept_count = sum(count for count, _ in done)
        ids = [i for _, part_ids in done for i in part_ids]
        path = self.out_dir / f"duplicates.{fmt}"
        with RecordWriter(path, fmt) as writer:
            writer.write(report.records(ids))
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
                "candidate_code_pairs": stats["candidate_code_pairs"],
                "pairs_verified": stats["pairs_verified"],
            },
            "cluster_sizes": {
                str(int(s)): int(c) for s, c in zip(size_values, size_counts, strict=True)
            },
            "distributed": {
                "workers": len(self.client.scheduler_info().get("workers", {})),
                "partitions": len(self.paths),
                "tables": n_tables,
                "blocks": stats["blocks"],
                "components": stats["components"],
                "cluster_groups": stats["cluster_groups"],
                "label_rounds": stats["label_rounds"],
                "label_shuffle_bytes": stats["label_bytes"],
                "collapse_shuffle_bytes": stats["collapse_bytes"],
                "table_shuffle_bytes": stats["table_bytes"],
                "table_shuffle_bytes_per_document_per_table": (
                    round(stats["table_bytes"] / n / n_tables, 2) if n else 0.0
                ),
                "crowded_buckets": stats["crowded_buckets"],
                "split_buckets": stats["split_buckets"],
                "share_tasks": stats["share_tasks"],
            },
            "timings_s": {k: round(v, 4) for k, v in timings.items()},
            "files": files,
        }


def _distinct(collapsed: tables.Collapsed) -> int:
    """Return a collapse task's number of distinct codes (a task)."""
    return int(collapsed.rows.size)


def _step_report(step: tuple[bool, list[np.ndarray]]) -> tuple[bool, int]:
    """Return whether a label propagation step changed an edge, and the bytes it emitted."""
    return step[0], _nbytes(step[1])


def _totals(work: np.ndarray, pairs: tuple[np.ndarray, np.ndarray]) -> tuple[int, int, int]:
    """Return a node shard's work, components and pairs (a task)."""
    return int(work[:, 1].sum()), len(work), len(pairs[0])


def _members(collapsed: tables.Collapsed) -> np.ndarray:
    """Return a collapse task's documents of codes of two or more documents (a task)."""
    return collapsed.members


def _cluster_group(
    group: tuple[np.ndarray, np.ndarray],
    limit: Any,
    method: str,
    policy: str,
    empty_as_duplicates: bool,
    *taken: tuple[Any, np.ndarray, np.ndarray | None],
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Cluster one group, given its documents and pairs (`groups.group_inputs`; a task)."""
    documents, pairs = group
    return groups.cluster_group(
        documents, pairs, limit, method, policy, empty_as_duplicates, *taken
    )


@dataclass
class _ReportColumns:
    """The duplicates report by column, every value but the ids (`_report_columns`)."""

    bounds: list[int]  # cluster c's members are positions bounds[c]:bounds[c + 1]
    member_local: list[int]  # each member's position among the clustered documents
    kept_local: list[int]  # each cluster's kept document's position among them
    kept_rows: list[int]
    member_rows: list[int]
    distances: list[int]
    similarities: list[float]

    def records(self, ids: list[Any]) -> list[dict[str, Any]]:
        """One record per cluster, as the single machine writes them; ``ids`` by position."""
        member_ids = [ids[k] for k in self.member_local]
        kept_ids = [ids[k] for k in self.kept_local]
        # a record is 5 new containers: the cyclic collector would otherwise run over the
        # driver's whole heap every few hundred records (measured: 0.75 s of 0.8 s at 2M docs)
        with _collector_paused():
            return self._records(member_ids, kept_ids)

    def _records(self, member_ids: list[Any], kept_ids: list[Any]) -> list[dict[str, Any]]:
        """Return the records, given each member's and each kept document's id."""
        return [
            {
                "cluster": number,
                "size": hi - lo,
                "kept_id": kept_ids[number],
                "kept_row": self.kept_rows[number],
                "ids": member_ids[lo:hi],
                "rows": self.member_rows[lo:hi],
                "distances": self.distances[lo:hi],
                "similarities": self.similarities[lo:hi],
            }
            for number, (lo, hi) in enumerate(itertools.pairwise(self.bounds))
        ]


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector (if it runs) inside the block."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _report_columns(
    clustered: np.ndarray,
    removed: np.ndarray,
    kept_for: np.ndarray,
    to_kept: np.ndarray,
    clusters: list[np.ndarray],
    code_of: np.ndarray,
) -> _ReportColumns:
    """Every value of the duplicates report but the ids, a column at a time.

    ``clustered`` holds the ascending rows of every cluster's members and ``code_of`` their
    codes; ``removed``, ``kept_for`` and ``to_kept`` the removed rows, their kept rows and
    similarities.
    """
    at_removed = np.searchsorted(clustered, removed)
    similarity = np.ones(clustered.size)
    similarity[at_removed] = to_kept
    kept_of = np.arange(clustered.size)
    kept_of[at_removed] = np.searchsorted(clustered, kept_for)
    bounds = np.cumsum([0, *(rows.size for rows in clusters)])
    members = np.concatenate([np.zeros(0, np.int64), *clusters])
    local = np.searchsorted(clustered, members)
    kept_local = kept_of[local[bounds[:-1]]]
    return _ReportColumns(
        bounds=bounds.tolist(),
        member_local=local.tolist(),
        kept_local=kept_local.tolist(),
        kept_rows=clustered[kept_local].tolist(),
        member_rows=members.tolist(),
        distances=hamming(code_of[local], code_of[kept_of[local]]).astype(int).tolist(),
        similarities=similarity[local].tolist(),
    )


def _clusters(removed: np.ndarray, kept_for: np.ndarray) -> list[np.ndarray]:
    """Return the rows of each cluster (a kept document and those removed for it), by first row."""
    kept = np.unique(kept_for)
    rows = np.concatenate([removed, kept])
    label = np.concatenate([kept_for, kept])
    order = np.lexsort((rows, label))
    bounds = np.flatnonzero(np.diff(label[order])) + 1
    clusters = [c for c in np.split(rows[order], bounds) if c.size]
    clusters.sort(key=lambda c: int(c[0]))
    return clusters

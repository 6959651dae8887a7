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
5. ``write``: each partition writes its kept records (or every record, annotated) to its own
   output part; the driver writes the duplicates report from the ids and codes of the
   clustered documents only. With a truth field, the write tasks count each label's documents
   and kept ones, and tasks split by label sum them. With ``report``, the sample is drawn
   first from the clustered documents' codes and feature hashes (its neighbourhood searched
   on the partitions), and the write tasks collect the sampled documents' texts.
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

from gpusimhash.codes import code_words, hamming
from gpusimhash.dedup import report as report_module
from gpusimhash.dedup.pipeline import DedupOptions, _has_id_field
from gpusimhash.distributed import _components as components
from gpusimhash.distributed import _groups as groups
from gpusimhash.distributed import _partitions as partitions
from gpusimhash.distributed import _tables as tables
from gpusimhash.evaluation import removal_figures
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
_UNSUPPORTED = {"recall": None}  # the join is exact


@dataclass
class DistributedResult:
    """What a distributed deduplication found and wrote.

    Attributes
    ----------
    summary : dict
        As the single-machine summary (``settings``, ``results``, ``ground_truth``,
        ``cluster_sizes``, ``timings_s``, ``files``), plus ``distributed``: workers,
        partitions, tables and the bytes each shuffle moved.
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
        input order; with ``annotate``, ``annotated/part-NNNNN.<fmt>``: every record, with the
        single machine's ``cluster``, ``duplicate_of`` and ``similarity``),
        ``duplicates.<fmt>``, ``summary.json`` and, with ``report``, ``report.md`` and its
        plots.
    client : dask.distributed.Client, optional
        The cluster; default: the current client (``distributed.get_client()``).
    bits, seed, featurizer
        How to fingerprint (a tf-idf featurizer must be fitted beforehand).
    **options
        The fields of `gpusimhash.dedup.pipeline.DedupOptions`, except ``recall`` (the join
        is exact), ``against`` and ``pairs``. ``truth_field`` adds the single machine's
        removal scores (not its pair scores); ``report`` needs verification.

    Returns
    -------
    DistributedResult

    Raises
    ------
    InputError
        A problem with an input file (names file, line and field), as on one machine; with
        ``annotate``, a record with a field annotating would overwrite, with ``truth_field``,
        a record without a scalar label (names file and global row).
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
    if options.get("report") and not options.get("verify", True):
        raise ValueError(
            "the distributed dedup writes report.md only with verification: report=True needs "
            "verify=True (its sample is drawn from every candidate pair without)"
        )
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
        if self.options.report:
            self._report(summary)
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
        """Write each partition's kept (or annotated) part, then the duplicates report.

        With ``report``, the report's sample is drawn first (its texts are collected while
        the parts are written); with ``truth_field``, the ground-truth scores are counted.
        """
        client, options = self.client, self.options
        fmt = options.output_format
        name = "annotated" if options.annotate else "kept"
        folder = self.out_dir / name
        folder.mkdir(parents=True, exist_ok=True)
        clustered = _clustered(removed, kept_for, to_kept, clusters)
        removed_by = dict(self._by_partition(removed))
        wanted_by = dict(self._by_partition(clustered.rows))
        empty = np.zeros(0, np.int64)
        # the codes first (small tasks), so the report's arrays are ready while parts are written
        codes = [
            client.submit(partitions.take_codes, self.parts[d], rows, int(self.offsets[d]))
            for d, rows in wanted_by.items()
        ]
        code_of = self._codes(codes) if options.report else None  # the sample needs them now
        sample = None if code_of is None else self._sample(clustered, clusters, code_of)
        texts_by = dict(self._by_partition(empty if sample is None else sample["rows"]))
        annotations = self._annotations(clustered, wanted_by) if options.annotate else {}
        truth_tasks = max(1, min(len(self.paths), 2 * self.n_workers))
        written = [
            client.submit(
                partitions.write_part,
                file,
                self.read,
                int(self.offsets[d]),
                removed_by.get(d, empty),
                wanted_by.get(d, empty),
                folder / f"part-{d:05d}.{fmt}",
                fmt,
                partitions.Extras(
                    annotations=annotations.get(d),
                    texts_of=texts_by.get(d, empty),
                    truth_field=options.truth_field,
                    truth_tasks=truth_tasks,
                ),
                key=self.key("write", d),
            )
            for d, file in enumerate(self.files)
        ]
        code_of = self._codes(codes) if code_of is None else code_of
        report = _report_columns(clustered, clusters, code_of)
        done = client.gather([client.submit(_written, w) for w in written])
        self.ground_truth = (
            None if options.truth_field is None else self._ground_truth(written, truth_tasks)
        )
        self.kept_count = sum(count for count, _, _ in done)
        ids = [i for _, part_ids, _ in done for i in part_ids]
        path = self.out_dir / f"duplicates.{fmt}"
        with RecordWriter(path, fmt) as writer:
            writer.write(report.records(ids))
        files = {
            f"{name}/": (
                f"the {self.kept_count:,} kept documents, one part per input partition"
                if not options.annotate
                else f"all {self.kept_count:,} documents, one part per input partition, with "
                "cluster, duplicate_of (the id of the document kept for it) and similarity"
            ),
            path.name: f"{len(clusters):,} clusters of near-duplicates",
            "summary.json": "this summary, as JSON",
        }
        if sample is not None:
            texts = {row: text for _, _, part_texts in done for row, text in part_texts.items()}
            shown = np.unique([r for e in sample["examples"] for r in (e["kept"], *e["members"])])
            at = np.searchsorted(clustered.rows, shown).tolist()
            example_ids = dict(zip(clustered.rows[at].tolist(), [ids[k] for k in at], strict=True))
            self.report_data = report_module.sampled_cosines(
                sample, texts, self.settings.featurizer, example_ids
            )
            self.report_data["cluster_sizes"] = np.array([c.size for c in clusters], np.int64)
            files["report.md"] = "the report, with plots (PNG)"
        return files

    def _codes(self, taken: list[Any]) -> np.ndarray:
        """Gather codes taken from partitions, in order."""
        width = self.settings.bits // 8
        return np.concatenate([np.zeros((0, width), np.uint8), *self.client.gather(taken)])

    def _ground_truth(self, written: list[Any], n_tasks: int) -> dict[str, Any]:
        """Score removals from label counts summed by label on the workers (`label_task`)."""
        client = self.client
        counts = client.gather(
            [
                client.submit(
                    partitions.truth_counts, *(client.submit(_piece, w, 3, t) for w in written)
                )
                for t in range(n_tasks)
            ]
        )
        return removal_figures({key: sum(c[key] for c in counts) for key in counts[0]})

    def _annotations(
        self, clustered: _Clustered, wanted_by: dict[int, np.ndarray]
    ) -> dict[int, partitions.Annotations]:
        """Each partition's annotations; the ids of the kept documents (one a cluster) first."""
        client = self.client
        kept_rows = np.unique(clustered.rows[clustered.kept])
        read = [
            client.submit(partitions.read_ids, self.files[d], self.read, int(self.offsets[d]), rows)
            for d, rows in self._by_partition(kept_rows)
        ]
        kept_ids = dict(zip(kept_rows.tolist(), itertools.chain(*client.gather(read)), strict=True))
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

    # ------------------------------------------------------------ report

    def _sample(
        self, clustered: _Clustered, clusters: list[np.ndarray], code_of: np.ndarray
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
        kept_local = clustered.kept[[np.searchsorted(clustered.rows, c[0]) for c in clusters]]
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
            radius=self.limit.radius,
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
                "min_estimated_cosine": float(np.cos(np.pi * limit.radius / settings.bits)),
                "verify": limit.verify,
                "similarity": limit.measure,
                "threshold": limit.value,
                "candidate_recall": (
                    self.options.candidate_recall
                    if limit.verify and self.options.max_distance is None
                    else None
                ),
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
            "ground_truth": self.ground_truth,
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


def _written(written: tuple[Any, ...]) -> tuple[Any, ...]:
    """Return a write task's records written, ids and texts: not its label counts (a task)."""
    return written[:3]


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


@dataclass
class _Clustered:
    """Every document of a cluster of two or more, by position (ascending rows)."""

    rows: np.ndarray  # ascending global rows
    number: np.ndarray  # cluster number (its record's number in the duplicates file)
    kept: np.ndarray  # position of the document kept for it
    similarity: np.ndarray  # similarity to it (1.0 for a kept document)
    removed: np.ndarray  # bool


def _clustered(
    removed: np.ndarray, kept_for: np.ndarray, to_kept: np.ndarray, clusters: list[np.ndarray]
) -> _Clustered:
    """Return the number, kept document and similarity of every clustered document.

    ``removed``, ``kept_for`` and ``to_kept`` hold the removed rows, their kept rows and
    similarities; ``clusters`` the rows of each cluster, in report order.
    """
    rows = np.sort(np.concatenate([np.zeros(0, np.int64), *clusters]))
    at_removed = np.searchsorted(rows, removed)
    similarity = np.ones(rows.size)
    similarity[at_removed] = to_kept
    kept = np.arange(rows.size)
    kept[at_removed] = np.searchsorted(rows, kept_for)
    number = np.empty(rows.size, np.int64)
    members = np.concatenate([np.zeros(0, np.int64), *clusters])
    number[np.searchsorted(rows, members)] = np.repeat(
        np.arange(len(clusters)), [c.size for c in clusters]
    )
    return _Clustered(rows, number, kept, similarity, kept != np.arange(rows.size))


def _report_columns(
    clustered: _Clustered, clusters: list[np.ndarray], code_of: np.ndarray
) -> _ReportColumns:
    """Every value of the duplicates report but the ids, a column at a time.

    ``code_of`` holds the codes of the clustered documents, by position.
    """
    bounds = np.cumsum([0, *(rows.size for rows in clusters)])
    members = np.concatenate([np.zeros(0, np.int64), *clusters])
    local = np.searchsorted(clustered.rows, members)
    kept_of = clustered.kept
    kept_local = kept_of[local[bounds[:-1]]]
    return _ReportColumns(
        bounds=bounds.tolist(),
        member_local=local.tolist(),
        kept_local=kept_local.tolist(),
        kept_rows=clustered.rows[kept_local].tolist(),
        member_rows=members.tolist(),
        distances=hamming(code_of[local], code_of[kept_of[local]]).astype(int).tolist(),
        similarities=clustered.similarity[local].tolist(),
    )


def _found_pairs(
    clustered: _Clustered, code_of: np.ndarray, hashes: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Return the pairs the single machine's report samples from (positions), with distances.

    Its units are the documents of one code with identical features (one cluster each): one
    pair per pair of distinct units of a removed document and its kept one, ordered by
    their lowest documents, then one (lowest, second lowest) per unit of several documents
    (`gpusimhash.dedup.verification.Clustering.kept_pairs`). Identical features are told by
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

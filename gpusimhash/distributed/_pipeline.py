"""The whole dedup on a Dask cluster, from partitioned files to kept files.

Stages (task keys ``gpusimhash-<stage>-<run>-...``), each a mixin of the run over
`gpusimhash.distributed._run.RunState` (``_join_stage``, ``_cluster_stage``, ``_write_stage``).
Input files of at most `DRIVER_INPUT_BYTES` in all, or any input beside a local cluster of at
most half the driver's threads (`runs_on_driver`), run every stage in the driver's process
instead, each task a call (`gpusimhash.distributed._inline`): the same outputs, without the
stages' fixed costs on the cluster. Two local workers or more still fingerprint the partitions
of such a run, each reading its own (`_fingerprinting`).

1. ``fingerprint``: each partition (one input file) is read, featurized and fingerprinted on
   a worker and stays there (`Part`); the driver learns only its number of documents.
2. ``feature``, where the single machine takes its candidates from the features (the
   defaults): every partition's featured documents go to an index task on each worker, which
   collapses identical codes and indexes one document per code and feature set, submitted with
   the fingerprints (it counts global rows itself, so it is built while the driver learns the
   partitions' sizes); each worker probes its shares of the index on its own copy
   (`gpusimhash.distributed._features`), and the driver waits once, for the shares' counts.
3. Otherwise, ``collapse``: (row, code) of every featured document, 24 bytes at 128 bits,
   shuffled by code, identical codes collapsed to one; then ``table`` or ``tile``: the join the
   single machine's cost model prices cheapest, from a sample of the distinct codes
   (`gpusimhash.distributed._join_plan`; a join estimated far above the single machine's
   warns first, with the estimates). The tables (small radii): for each of the ``r + 1``
   pigeonhole tables, (row, code) of every distinct code, 24 bytes at 128 bits, shuffled by
   the table's key; each task joins its buckets and keeps the pairs of distinct codes no
   earlier table found (`gpusimhash.distributed._tables`). A crowded bucket (over
   `_tables.SPLIT_CODES` codes) is joined apart, by ``share`` tasks. The tiles (large radii,
   where brute force wins): the distinct codes in ``k`` pieces, one task per pair of pieces
   comparing every pair by FAISS's range search (`gpusimhash.distributed._tiles`).
4. ``cluster``: a candidate graph of at most `_cluster_stage.ONE_GROUP_WORK` pairs and
   documents sharing a code (and `_cluster_stage.ONE_GROUP_BYTES` of their features, by
   estimate) is gathered by one task (`gpusimhash.distributed._groups.whole_group`,
   which keeps each pair once where two feature shares may have found one), each partition
   takes the features, lengths and scores of its documents in it, and one task runs the
   single-machine clustering on them, the driver waiting once. A larger graph is split by its
   components (its pairs first shuffled by pair to keep each once, where they may repeat),
   labelled on the workers by large-star / small-star label propagation over node shards
   (`gpusimhash.distributed._components`: each component named by its lowest code, the same
   for any partitioning); each shard names its documents in components and labels its pairs,
   the work of each component is summed where its label lives, and components are dealt to
   groups (the heavy ones one by one, the rest by a hash of the label); each partition takes
   the features, lengths and scores of its share of a group, and one task per group runs the
   single-machine clustering on them. Either way the candidates are verified lazily inside the
   star loop (`gpusimhash.distributed._groups`); the driver sees a few numbers per shard and
   the heavy components, and only (row, kept row, similarity) of the removed documents come
   back.
5. ``write``: each partition writes its kept records (or every record, annotated) to its own
   output part as the clustering ends (each task takes its rows from the clustering's result,
   submitted before that result reaches the driver); the driver writes the duplicates report
   from the ids and codes of the clustered documents only, while the parts are written where
   the ids are the rows (no id field), after them otherwise (the write tasks collect the ids).
   With a truth field, the write tasks count each label's documents and kept ones, and tasks
   split by label sum them. With ``report``, the sample is drawn first from the clustered
   documents' codes and feature hashes (its neighbourhood searched on the partitions), and
   the write tasks collect the sampled documents' texts.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gpusimhash._choices import DRIVER_INPUT_BYTES
from gpusimhash._cpu._threads import threads
from gpusimhash._output_names import written_by_cluster_dedup
from gpusimhash.dedup.options import DedupOptions
from gpusimhash.dedup.outputs import kept_schema
from gpusimhash.dedup.summary import removal_results, settings_summary
from gpusimhash.distributed import _partitions as partitions
from gpusimhash.distributed._cluster_stage import ClusterStage
from gpusimhash.distributed._inline import InlineClient, taken
from gpusimhash.distributed._join_stage import JoinStage
from gpusimhash.distributed._write_stage import ClusterRows, WriteStage
from gpusimhash.fingerprinting import FingerprintSettings, resolve_device
from gpusimhash.io._output_folder import replacing_folder
from gpusimhash.io.inputs import STDIN, input_files
from gpusimhash.io.skipped import Skipped
from gpusimhash.io.sources import Source, has_id_field
from gpusimhash.io.writers import write_json
from gpusimhash.text import TextFeaturizer

__all__ = ["DistributedResult", "dedup", "outnumbers", "runs_on_driver", "whole_index"]

# the join is exact; no index is read or written, and no pairs file
_UNSUPPORTED = {
    "recall": None,
    "against": None,
    "add_kept": False,
    "pairs": False,
}
# seconds a run waits for the first worker of a cluster that has none
WAIT_FOR_WORKERS = 60


@dataclass
class DistributedResult:
    """What a distributed deduplication found and wrote.

    Attributes
    ----------
    summary : dict
        As the single-machine summary (``settings``, ``results``, ``ground_truth``,
        ``cluster_sizes``, ``timings_s``, ``files``), plus ``distributed``: workers,
        whether the driver ran the stages (``on_driver``) and whether the workers
        fingerprinted the partitions (``fingerprinted_on_workers``), partitions, the join
        chosen (``join``: every join's estimate), tables or tiles and the bytes each shuffle
        moved.
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
    driver_input_bytes: int | None = None,
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
        plots. The outputs replace an earlier run's as a set (`gpusimhash.io._output_folder`):
        a run that fails leaves them as they were, and a folder holding anything no earlier
        run wrote (input files, say) is refused before any work.
    client : dask.distributed.Client, optional
        The cluster; default: the current client (``distributed.get_client()``), none for an
        input the driver deduplicates itself (``driver_input_bytes``).
    bits, seed, featurizer
        How to fingerprint (a tf-idf featurizer must be fitted beforehand).
    driver_input_bytes : int, optional
        Input files of at most this many bytes in all (as stored) are deduplicated by this
        process, not the cluster: the same stages and outputs, each task a call here
        (`gpusimhash.distributed._inline`), the compiled loops on this process's threads, but
        the partitions' fingerprints, which two local workers or more take; default
        `DRIVER_INPUT_BYTES`. Any input is, where the cluster is local and this process has as
        many threads as its workers' compiled loops in all (the feature join, which builds the
        whole index on every worker), or twice as many (the codes' joins; `runs_on_driver`).
        ``-1``: always the cluster.
    **options
        The fields of `gpusimhash.dedup.pipeline.DedupOptions`, except ``recall`` (the join
        is exact), ``against``, ``add_kept`` and ``pairs``. ``truth_field`` adds the single
        machine's removal scores (not its pair scores); ``report`` needs verification. With
        ``skip_invalid``, each partition's invalid records are skipped in every read of it, and
        the summary counts them and lists the first few, partitions in order, as one machine.

    Returns
    -------
    DistributedResult

    Raises
    ------
    InputError
        A problem with an input file (names file, line and field), as on one machine; with
        ``annotate``, a record with a field annotating would overwrite, with ``truth_field``,
        a record without a scalar label (names the file and its document there).
    ValueError
        A bad or unsupported option, an unfitted tf-idf featurizer, an output folder holding
        what no earlier run wrote, or no running client where the cluster runs the stages.
    RuntimeError
        A cluster without workers, where none joined in `WAIT_FOR_WORKERS` seconds.

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
    if dedup_options.id_field is None and has_id_field(paths, dedup_options.reading):
        dedup_options = dataclasses.replace(dedup_options, id_field="id")
    source = Source(tuple(paths), dedup_options.reading, dedup_options.id_field)
    # before any work: Parquet inputs of different schemas
    schema = kept_schema(source, dedup_options.output_format, dedup_options.annotate)
    on_driver = runs_on_driver(paths, driver_input_bytes)
    if not on_driver or client is not None:
        client = _client(client)
        whole = whole_index(dedup_options, settings.bits)
        on_driver = runs_on_driver(paths, driver_input_bytes, client, whole_index=whole)
    if not on_driver:
        _wait_for_workers(client)
    with replacing_folder(out_dir, owned=written_by_cluster_dedup) as stage:
        state: dict[str, Any] = {
            "paths": paths,
            "out_dir": stage,
            "settings": settings,
            "options": dedup_options,
            "kept_schema": schema,
            "cluster_workers": 0 if client is None else _worker_count(client),
        }
        if on_driver:  # every task a call, here (local workers take the fingerprints)
            fingerprinting = _fingerprinting(client, paths)
            return _Run(
                client=InlineClient(), on_driver=True, fingerprinting=fingerprinting, **state
            ).execute()
        return _Run(client=client, on_driver=False, **state).execute()


def runs_on_driver(
    paths: Sequence[Path],
    driver_input_bytes: int | None = None,
    client: Any = None,
    *,
    whole_index: bool = False,
) -> bool:
    """Whether the driver deduplicates these input files itself (`dedup`).

    It does where they hold few bytes in all, or where the cluster is local (every worker on
    this machine: in this process or at a loopback address) and this process has as many
    threads as its workers' compiled loops in all (`outnumbers`): where every worker builds the
    whole feature index (``whole_index``), at least as many; otherwise at least twice as many.
    This process then does the same work on those threads without the stages' fixed costs,
    two local workers or more fingerprinting the partitions. Beside a 2-core driver, at the
    defaults (the feature join), the driver was 0.97x to 1.37x as fast as the stages of 2
    one-core local workers on 50,000 to 800,000 PyPI summaries (0.97x at 800,000); at 128 bits
    radius 3 the driver was faster up to 400,000 (1.76 s against 1.85 s there) and the stages
    at 800,000 (3.44 s against 3.70 s; medians of 3, ``bench/results/distributed_real.json``).

    Parameters
    ----------
    paths : sequence of Path
        The input files (`gpusimhash.io.inputs.input_files`).
    driver_input_bytes : int, optional
        The most bytes in all (as stored) the driver takes; default `DRIVER_INPUT_BYTES`;
        ``-1``: none, whatever the cluster.
    client : dask.distributed.Client, optional
        The cluster; none: decide by the bytes alone.
    whole_index : bool, default False
        Whether the run's join builds the whole feature index on every worker (`whole_index`).

    Returns
    -------
    bool

    Raises
    ------
    TypeError, ValueError
        ``driver_input_bytes`` not an int of at least -1.
    """
    limit = DRIVER_INPUT_BYTES if driver_input_bytes is None else driver_input_bytes
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise TypeError(
            f"driver_input_bytes must be an int (-1: always the cluster), got "
            f"{type(limit).__name__} {limit!r}"
        )
    if limit < -1:
        raise ValueError(f"driver_input_bytes must be -1 or more, got {limit}")
    if limit < 0:
        return False
    if sum(path.stat().st_size for path in paths) <= limit:
        return True
    return client is not None and _outnumbered(client, whole_index)


def whole_index(options: DedupOptions, bits: int) -> bool:
    """Whether a run with these options builds the whole feature index on every worker.

    The feature join does (`gpusimhash.distributed._features`); the codes' joins split their
    work between the workers.
    """
    device = resolve_device(options.device, uses=("fingerprint", "join"))
    return options.candidate_source(options.threshold(bits), device) == "features"


def outnumbers(worker_threads: int, whole_index: bool) -> bool:
    """Whether this process's threads outnumber local workers' enough to do their work itself.

    Parameters
    ----------
    worker_threads : int
        The local workers' compiled loops' threads, in all.
    whole_index : bool
        Whether every worker would build the whole feature index: then as many threads as the
        workers' suffice, else twice as many.

    Returns
    -------
    bool
    """
    return (1 if whole_index else 2) * worker_threads <= threads()


def _outnumbered(client: Any, whole_index: bool) -> bool:
    """Whether the cluster is local and this process's threads outnumber its loops' (`outnumbers`)."""
    return bool(_local_workers(client)) and outnumbers(
        sum(client.run(threads).values()), whole_index
    )


def _local_workers(client: Any) -> int:
    """Return the cluster's workers where every one is local (`_local`), else 0."""
    workers = client.scheduler_info().get("workers", {})
    return len(workers) if all(_local(address, info) for address, info in workers.items()) else 0


def _fingerprinting(client: Any, paths: Sequence[Path]) -> Any:
    """Return the cluster whose workers fingerprint a run on the driver, or None: the driver.

    Two local workers or more fingerprint two partitions or more: each reads and fingerprints
    its partitions in its own process, where the driver would read one after another, its
    text parsing holding one core; the driver does the rest on its threads. On 200,000 PyPI
    summaries in 16 partitions beside 2 one-core local workers, by hand, 5 runs each in
    turns: 1.93 to 2.02 s (median 1.98) against 2.02 to 2.42 s (median 2.13) with the driver
    fingerprinting. Remote workers would send every partition's features over the network.
    """
    if client is None or len(paths) < 2 or _local_workers(client) < 2:
        return None
    return client


def _local(address: str, info: dict[str, Any]) -> bool:
    """Whether a worker is on this machine: in this process, or at a loopback host.

    ``info`` is the worker's entry in the scheduler's information (its ``host``).

    Examples
    --------
    >>> _local("inproc://192.0.2.2/15291/4", {}), _local("tcp://[::1]:4000", {"host": "::1"})
    (True, True)
    >>> _local("tcp://10.0.0.7:4000", {"host": "10.0.0.7"}), _local("tcp://a:1", {"host": "a"})
    (False, False)
    """
    if address.startswith("inproc://"):
        return True
    host = str(info.get("host", ""))
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name, or none
        return False


def _client(client: Any) -> Any:
    """Return the given client, or the current one; refuse one that is not running."""
    if client is None:
        from dask.distributed import get_client

        try:
            client = get_client()
        except ValueError:
            raise ValueError(
                "no Dask client: pass client=, or start one (dask.distributed.Client(...))"
            ) from None
    if client.status != "running":
        raise ValueError(f"the Dask client is {client.status}: pass a running client")
    return client


def _worker_count(client: Any) -> int:
    """Return the workers of the client's cluster now."""
    return len(client.scheduler_info().get("workers", {}))


def _wait_for_workers(client: Any) -> None:
    """Wait up to `WAIT_FOR_WORKERS` seconds for a worker where the cluster has none.

    Raises
    ------
    RuntimeError
        No worker joined in that time: the run's tasks would wait for one forever.
    """
    if _worker_count(client):
        return
    try:
        client.wait_for_workers(1, timeout=WAIT_FOR_WORKERS)
    except TimeoutError:
        address = getattr(client.scheduler, "address", None) or "the scheduler"
        raise RuntimeError(
            f"the Dask cluster at {address} has no workers, and none joined in "
            f"{WAIT_FOR_WORKERS} s: start workers (an adaptive cluster: a minimum of 1)"
        ) from None


class _Run(JoinStage, ClusterStage, WriteStage):
    """One distributed deduplication: its stages, run in order."""

    def execute(self) -> DistributedResult:
        """Run every stage; return the result."""
        self.token = uuid.uuid4().hex[:10]
        options, settings = self.options, self.settings
        self.limit = options.threshold(settings.bits)
        self.source = options.candidate_source(
            self.limit, resolve_device(options.device, uses=("fingerprint", "join"))
        )
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
            skip_invalid=options.skip_invalid,
        )
        self.read = read
        clock = time.perf_counter()
        self.parts = self._fingerprint(read)
        sizes_known = [
            self.client.submit(partitions.part_file, part, key=self.key("file", p))
            for p, part in enumerate(self.parts)
        ]
        index = self._start_join()
        self.files = self.client.gather(sizes_known)
        self.holders = self._holders(self.parts)
        sizes = [file.n_docs for file in self.files]
        self.offsets = np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)]).astype(np.int64)
        self.featureless = np.concatenate(
            [np.zeros(0, np.int64)]
            + [file.featureless + self.offsets[p] for p, file in enumerate(self.files)]
        )
        timings["fingerprint"] = time.perf_counter() - clock
        clock = time.perf_counter()
        stats = self._join(index)
        del index  # each worker lets its copy of the feature index go
        timings["join"] = time.perf_counter() - clock
        clock = time.perf_counter()
        future = self._cluster(stats)
        started = self._start_write(future)  # the parts are written as the clustering ends
        found = future.result()
        stats |= found.counts
        timings["cluster"] = time.perf_counter() - clock
        clock = time.perf_counter()
        files, clusters = self._write(started, found)
        timings["write"] = time.perf_counter() - clock
        timings["total"] = time.perf_counter() - start
        summary = self._summary(found.removed, found.similarity, clusters, stats, files, timings)
        if self.options.report:
            self._report(summary)
        write_json(self.out_dir / "summary.json", summary)
        return DistributedResult(summary, found.removed, found.kept_for, clusters.split())

    def _fingerprint(self, read: partitions.ReadOptions) -> list[Any]:
        """Submit each partition's fingerprinting; return the futures of their `Part`.

        A run on the driver beside local workers (`fingerprinting`) has them fingerprint the
        partitions at once, where the driver would read them one by one, and takes each
        `Part` as it is done (`gpusimhash.distributed._inline.taken`).
        """
        client = self.client if self.fingerprinting is None else self.fingerprinting
        futures = [
            client.submit(
                partitions.fingerprint_part,
                path,
                self.settings,
                read,
                key=self.key("fingerprint", p),
            )
            for p, path in enumerate(self.paths)
        ]
        return futures if self.fingerprinting is None else taken(client, futures)

    def _summary(
        self,
        removed: np.ndarray,
        to_kept: np.ndarray,
        clusters: ClusterRows,
        stats: dict[str, Any],
        files: dict[str, str],
        timings: dict[str, float],
    ) -> dict[str, Any]:
        """Describe the run's settings and results."""
        n = int(self.offsets[-1])
        limit, settings = self.limit, self.settings
        sizes = clusters.sizes
        size_values, size_counts = np.unique(
            np.concatenate([sizes, np.ones(n - int(sizes.sum()), np.int64)]), return_counts=True
        )
        below = int(np.sum(~(to_kept >= limit.value)))
        n_tables = stats["tables"]
        # as one machine: featureless documents share one code, or each has its own
        empty = self.featureless.size
        empty_codes = min(empty, 1) if self.options.empty_as_duplicates else empty
        return {
            "input": [str(p) for p in self.paths],
            "settings": settings_summary(settings, self.options, limit),
            "results": {
                **removal_results(
                    documents=n,
                    removed=int(removed.size),
                    clusters=len(clusters),
                    largest_cluster=int(sizes.max()) if sizes.size else (1 if n else 0),
                    lowest_similarity=float(np.nanmin(to_kept)) if to_kept.size else None,
                    below_threshold=below,
                    distinct_codes=stats["distinct_codes"] + empty_codes,
                ),
                "skipped_invalid": sum(f.skipped.count for f in self.files if f.skipped),
                "candidate_code_pairs": stats["candidate_code_pairs"],
                "pairs_verified": stats["pairs_verified"],
            },
            "skipped": [e for f in self.files if f.skipped for e in f.skipped.examples][
                : Skipped.LIMIT
            ],
            "ground_truth": self.ground_truth,
            "cluster_sizes": {
                str(int(s)): int(c) for s, c in zip(size_values, size_counts, strict=True)
            },
            "distributed": {
                "workers": self.cluster_workers,
                "on_driver": self.on_driver,
                "fingerprinted_on_workers": not self.on_driver or self.fingerprinting is not None,
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
                    round(stats["table_bytes"] / n / n_tables, 2) if n and n_tables else 0.0
                ),
                "crowded_buckets": stats["crowded_buckets"],
                "split_buckets": stats["split_buckets"],
                "share_tasks": stats["share_tasks"],
                "join": stats["join"],
                "tile_tasks": stats["tile_tasks"],
                "tile_shuffle_bytes": stats["tile_bytes"],
                "feature_shuffle_bytes": stats["feature_bytes"],
            },
            "timings_s": {k: round(v, 4) for k, v in timings.items()},
            "files": files,
        }

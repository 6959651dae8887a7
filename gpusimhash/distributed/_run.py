"""What every stage of a distributed deduplication shares: its inputs, cluster and futures.

`RunState` holds a run's inputs and what each stage leaves for the next (futures of data on the
workers, and the few arrays the driver keeps). Each stage is a mixin over it
(`gpusimhash.distributed._join_stage.JoinStage`, `_cluster_stage.ClusterStage`,
`_write_stage.WriteStage`), and `gpusimhash.distributed._pipeline` runs them in order. `piece`
and `nbytes` are the small tasks of every shuffle.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from gpusimhash.dedup.options import DedupOptions
from gpusimhash.distributed._inline import InlineClient
from gpusimhash.distributed._partitions import PartFile, ReadOptions
from gpusimhash.fingerprinting import FingerprintSettings
from gpusimhash.verify._threshold import Threshold

__all__ = ["IndexTasks", "RunState", "nbytes", "on_worker", "piece", "worker_names"]


def piece(value: Any, *path: int) -> Any:
    """Return ``value[path[0]][path[1]]...`` (a task: pieces are picked where they are)."""
    for key in path:
        value = value[key]
    return value


def nbytes(value: Any) -> int:
    """Return the bytes of the arrays in nested lists and tuples."""
    if isinstance(value, np.ndarray):
        return int(value.nbytes)
    if isinstance(value, list | tuple):
        return sum(nbytes(v) for v in value)
    return 0


def on_worker(worker: str | None) -> dict[str, Any]:
    """Return the arguments of ``client.submit`` that run a task on ``worker`` while it lives.

    A task so placed goes to its worker as soon as its inputs are ready. Dask's scheduler
    holds back a large group of tasks that need few others' results (root tasks), each until
    a worker is free; a `dask.distributed.LocalCluster`'s scheduler runs in the driver's
    process, where it answers late while the driver computes.
    """
    return {} if worker is None else {"workers": [worker], "allow_other_workers": True}


def worker_names(client: Any) -> list[str | None]:
    """Return the addresses of the cluster's workers, sorted; ``[None]`` where it lists none."""
    return sorted(client.scheduler_info().get("workers", {})) or [None]


@dataclass(frozen=True)
class IndexTasks:
    """The feature index's tasks: one copy per worker, and the shares that probe them.

    Attributes
    ----------
    replicas : list of Future
        Each worker's copy of the index (`gpusimhash.distributed._features.index_documents`).
    workers : list of str or None
        The worker of each copy (None: any).
    shares : int
        Shares of the index's blocks to probe.
    """

    replicas: list[Any]
    workers: list[str | None]
    shares: int


@dataclass
class RunState:
    """One distributed deduplication: the inputs, the cluster and what each stage leaves."""

    client: Any
    paths: list[Path]
    out_dir: Path
    settings: FingerprintSettings
    options: DedupOptions
    # the cluster's workers, and whether the driver runs every task itself (`_inline`)
    cluster_workers: int
    on_driver: bool
    # the kept parts' schema where it is fixed before any work (Parquet output of Parquet
    # inputs: `gpusimhash.dedup.outputs.kept_schema`); None: inferred from the records
    kept_schema: Any = None
    # a run on the driver beside local workers: the cluster whose workers fingerprint the
    # partitions (`gpusimhash.distributed._pipeline`); None: the run's own client does
    fingerprinting: Any = None
    # set by the stages as they run: the task names' token, the threshold, where the
    # candidates come from ("features" or "codes", as on one machine), how partitions are
    # read, futures of each partition's fingerprinted `Part`, their files, the global row of
    # each partition's first document (then n), workers, tasks per shuffle (and node shards),
    # futures of the documents of codes of several and of the candidate pairs of distinct
    # codes, whether one pair may be in two of them, the pairs and documents they hold (pairs
    # counted as often as they repeat), the rows of the documents without features, and what
    # the write stage found
    token: str = field(init=False, repr=False)
    limit: Threshold = field(init=False, repr=False)
    source: str = field(init=False, repr=False)
    read: ReadOptions = field(init=False, repr=False)
    parts: list[Any] = field(init=False, repr=False)
    files: list[PartFile] = field(init=False, repr=False)
    offsets: np.ndarray = field(init=False, repr=False)
    n_workers: int = field(init=False, repr=False)
    n_tasks: int = field(init=False, repr=False)
    members: list[Any] = field(init=False, repr=False)
    candidates: list[Any] = field(init=False, repr=False)
    repeated_pairs: bool = field(init=False, repr=False)
    work: int = field(init=False, repr=False)
    featureless: np.ndarray = field(init=False, repr=False)
    holders: list[str | None] = field(init=False, repr=False)
    ground_truth: dict[str, Any] | None = field(init=False, repr=False)
    report_data: dict[str, Any] = field(init=False, repr=False)

    @property
    def radius(self) -> int:
        """The candidates' Hamming radius: the code length for the feature candidates."""
        return self.limit.radius if self.source == "codes" else self.settings.bits

    def key(self, stage: str, *index: int) -> str:
        """Return a task key: stage, run and indices."""
        return "-".join(["gpusimhash", stage, self.token, *map(str, index)])

    def _holders(self, futures: list[Any]) -> list[str | None]:
        """Return the worker holding each future's result (None where none, or on the driver).

        A task of a partition's `Part` placed where it is (`on_worker`) starts as soon as its
        inputs are ready and moves no `Part`; unplaced, it waits in the scheduler's queue
        behind the tasks already placed on the workers.
        """
        if isinstance(self.client, InlineClient):
            return [None] * len(futures)
        held = self.client.who_has(futures)
        return [min(held.get(f.key, ()), default=None) for f in futures]

    def _settle(self, futures: list[Any]) -> None:
        """Wait until the futures' tasks are done where they run, fetching nothing."""
        if isinstance(self.client, InlineClient):
            return  # done as submitted
        from dask.distributed import wait

        wait(futures)  # type: ignore[no-untyped-call]

    def _completed(self, futures: list[Any]) -> Iterator[tuple[Any, Any]]:
        """Yield each future with its result as its task finishes (in order, where run at once)."""
        if isinstance(self.client, InlineClient):
            return ((future, future.result()) for future in futures)
        from dask.distributed import as_completed

        completed: Iterator[tuple[Any, Any]] = as_completed(  # type: ignore[no-untyped-call]
            futures, loop=self.client.loop, with_results=True
        )
        return completed

    def _by_partition(self, rows: np.ndarray) -> list[tuple[int, np.ndarray]]:
        """Split ascending global rows by partition (nonempty ones only)."""
        bounds = np.searchsorted(rows, self.offsets)
        return [
            (d, rows[bounds[d] : bounds[d + 1]])
            for d in range(len(self.paths))
            if bounds[d + 1] > bounds[d]
        ]

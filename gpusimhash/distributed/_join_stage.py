"""The join stage of a distributed deduplication: identical codes collapsed, then the join.

Where the single machine takes its candidates from the features, `JoinStage._join` runs the
exact feature join (`gpusimhash.distributed._features`), whose index tasks collapse the
identical codes themselves. Otherwise it shuffles (row, code) of every featured document by
code to the collapse tasks, then chooses the join from a sample of the distinct codes by the
single machine's cost model (`gpusimhash.distributed._join_plan`), warning first when it is far
costlier than the single machine's. The pigeonhole tables (small radii) shuffle (row, code) of
every distinct code by each table's block key to the table tasks
(`gpusimhash.distributed._tables`), a crowded bucket joined apart, by share tasks
(`JoinStage._split_crowded`); the tiled exhaustive join (large radii, few codes) shuffles them
into pieces, one task per pair of pieces (`gpusimhash.distributed._tiles`). All leave the same
futures: the documents sharing a code and every task's candidate pairs of distinct codes, each
pair once.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from gpusimhash.distributed import _features as features
from gpusimhash.distributed import _join_plan as join_plan
from gpusimhash.distributed import _partitions as partitions
from gpusimhash.distributed import _tables as tables
from gpusimhash.distributed import _tiles as tiles
from gpusimhash.distributed._inline import InlineClient
from gpusimhash.distributed._join_plan import JoinPlan, choose_join
from gpusimhash.distributed._run import (
    IndexTasks,
    RunState,
    nbytes,
    on_worker,
    piece,
    worker_names,
)
from gpusimhash.join import _budget as budget
from gpusimhash.join import _mih as mih

__all__ = ["JoinStage"]

# documents per collapse or join task at least, beyond two per worker: each shuffle is
# n_tasks ** 2 piece tasks of 0.7 to 1 ms of the scheduler's time each (`bench_distributed.py`,
# 2 local workers), so 1B documents make 63 tasks (3 to 4 s of scheduler time per shuffle),
# while a task holds at most 16M codes (384 MB of rows and codes at 128 bits)
TASK_DOCUMENTS = 16_000_000
# feature shares per worker, and the shares a worker holds at once (`_probe_shares`): each one it
# finishes hands it the next, so that a worker slowed by other jobs probes fewer
_SHARES_PER_WORKER = 4
_QUEUED_SHARES = 2
# what a run of the tiled join (or the feature join) reports of the tables
_NO_TABLES = {
    "tables": 0,
    "blocks": [],
    "table_bytes": 0,
    "crowded_buckets": 0,
    "split_buckets": 0,
    "share_tasks": 0,
}


class JoinStage(RunState):
    """Join on the features, or on the codes by tables, tiles or one task (a mixin of the run)."""

    def _start_join(self) -> IndexTasks | None:
        """Submit what needs no partition's size: the feature index, built on every worker.

        Each worker builds the same index from every partition's featured documents, its global
        rows counted from the partitions' sizes in the task (`features.index_documents`), so
        the index is built while the driver learns the sizes. Returns its tasks, for `_join`;
        none where the candidates come from the codes, whose join starts once the sizes are
        known.
        """
        client = self.client
        self.n_workers = max(1, len(client.scheduler_info().get("workers", {})))
        if self.source != "features":
            return None
        featured = [
            client.submit(features.featured_documents, part, key=self.key("featured", p))
            for p, part in enumerate(self.parts)
        ]
        shares = _SHARES_PER_WORKER * self.n_workers
        workers = worker_names(client)
        replicas = [
            client.submit(
                features.index_documents,
                featured,
                self.limit,
                shares,
                key=self.key("feature-index", w),
                **on_worker(worker),
            )
            for w, worker in enumerate(workers)
        ]
        return IndexTasks(replicas, workers, shares)

    def _join(self, index: IndexTasks | None) -> dict[str, Any]:
        """Join the documents; keep the futures of the pairs and of the documents sharing a code.

        The feature join collapses identical codes in its index tasks; the joins of the codes
        collapse them first, by a shuffle. Every future of an intermediate result is dropped as
        soon as the tasks that use it are submitted (its size first asked for), so that each
        worker lets it go once used.
        """
        # tasks per shuffle: two per worker, more for a big corpus, never more than partitions
        wanted = max(2 * self.n_workers, -(-int(self.offsets[-1]) // TASK_DOCUMENTS))
        self.n_tasks = max(1, min(len(self.paths), wanted))
        if index is not None:
            return self._join_features(index) | {"collapse_bytes": 0}
        return self._join_codes()

    def _join_codes(self) -> dict[str, Any]:
        """Collapse identical codes by a shuffle, then join them by the tables or the tiles."""
        client, n_tasks = self.client, self.n_tasks
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
        collapse_bytes = [client.submit(nbytes, s) for s in split]
        collapsed = [
            client.submit(
                tables.collapse,
                [
                    client.submit(piece, s, b, key=self.key("collapse-piece", p, b))
                    for p, s in enumerate(split)
                ],
                -(-self.settings.bits // 64),
                key=self.key("collapse", b),
            )
            for b in range(n_tasks)
        ]
        del split
        # what the clustering gathers besides the pairs, ready by the time they are
        self.members = [client.submit(_members, c) for c in collapsed]
        chosen, estimate = self._plan_join(collapsed)
        if chosen.method == "tables":
            stats = self._join_tables(collapsed)
        elif chosen.method == "tiles":
            stats = self._join_tiles(collapsed, chosen.pieces)
        else:  # one task, one piece, joined as the single machine joins it
            stats = self._join_tiles(collapsed, 1, chosen.single_machine)
        del collapsed
        sizes = [client.submit(len, f) for f in self.candidates + self.members]
        moved, sizes = client.gather([collapse_bytes, sizes])
        self.repeated_pairs = False  # each table, tile or share keeps the pairs no other finds
        self.work = sum(sizes)
        return stats | {
            "distinct_codes": chosen.distinct_codes,
            "join": chosen.summary() | {"estimated_candidate_pairs": round(estimate)},
            "feature_bytes": 0,
            "collapse_bytes": sum(moved),
        }

    def _join_features(self, index: IndexTasks) -> dict[str, Any]:
        """Join on the features, as one machine: one index per worker, probed in shares.

        `gpusimhash.distributed._features`: every worker builds the same index from every
        partition's featured documents, all at once, and probes its shares of it: no worker
        waits for another's index, and no index crosses the network (the features it is built
        from are smaller). An index whose probes would read too many postings, or more passing
        pairs of documents than the budget, are refused, as on one machine. Where some code has
        two representatives, two shares may find one pair of codes (``repeated_pairs``): the
        clustering keeps each once.
        """
        client, options = self.client, self.options
        replicas, shares = index.replicas, index.shares
        budget = None if options.force else options.max_candidate_pairs
        summary = client.submit(features.index_summary, replicas[0])
        self.members = [client.submit(features.index_members, replicas[0])]
        self.candidates, counts = self._probe_shares(index, budget)
        distinct, documents, entries, shared, sent, n_members = summary.result()
        passing = sum(p for _, p in counts)
        features.check_passing(passing, self.limit, budget)
        self.repeated_pairs = bool(shared)  # a pair of codes may come from two shares
        self.work = n_members + sum(n for n, _ in counts)
        return {
            **_NO_TABLES,
            "tile_tasks": 0,
            "tile_bytes": 0,
            "feature_bytes": sent,
            "distinct_codes": distinct,
            "join": {
                "method": "features",
                "shares": shares,
                "indexed_documents": documents,
                "indexed_entries": entries,
                "passing_document_pairs": passing,
                "pairs_repeat": bool(shared),
            },
        }

    def _probe_shares(
        self, index: IndexTasks, budget: int | None
    ) -> tuple[list[Any], list[tuple[int, int]]]:
        """Probe every share of the index on a worker's own copy.

        Each worker takes `_QUEUED_SHARES` shares at first, and each share it finishes hands it
        the next share not yet begun, so that a worker slowed by other jobs probes fewer. A
        share never moves to another worker: its copy of the index would have to. Each share's
        pairs and counts are taken from it where it ran, submitted with it, so that the counts
        of the last shares follow them at once. Once a share fails (a refusal, a lost worker)
        no other is begun; its failure is raised where the counts are gathered.

        Returns the futures of the shares' pairs of codes and the shares' counts (pairs of
        codes, passing pairs of documents), in share order.
        """
        client, replicas, workers = self.client, index.replicas, index.workers
        waiting = iter(range(index.shares))
        pairs: dict[int, Any] = {}
        counted: dict[int, Any] = {}

        def hand(w: int) -> Any:
            """Submit the next share to worker ``w``; return its future (None: every share begun)."""
            s = next(waiting, None)
            if s is None:
                return None
            placed = on_worker(workers[w])
            found = client.submit(
                features.probe_share,
                replicas[w],
                s,
                budget,
                key=self.key("feature-share", s),
                **placed,
            )
            pairs[s] = client.submit(piece, found, 0, key=self.key("share-pairs", s), **placed)
            counted[s] = client.submit(
                features.share_counts, found, key=self.key("share-counts", s), **placed
            )
            return found

        if isinstance(client, InlineClient):  # each done as submitted, on the driver
            while hand(0) is not None:
                pass
        else:
            _hand_out(hand, len(workers))
        order = sorted(pairs)
        return [pairs[s] for s in order], client.gather([counted[s] for s in order])

    def _plan_join(self, collapsed: list[Any]) -> tuple[JoinPlan, float]:
        """Choose the join from a sample of the distinct codes; refuse or warn before a costly one.

        The candidate pairs are estimated as one machine's guard rail estimates them
        (`gpusimhash.join._budget.check_budget`: the first `DEFAULT_SAMPLE_SIZE` sampled codes
        range-searched against every distinct code, on the collapse tasks), and refused over
        the budget without ``force``. Returns the plan and the estimate.
        """
        client, bits, radius = self.client, self.settings.bits, self.limit.radius
        samples = client.gather(
            [client.submit(join_plan.code_sample, c, join_plan.SAMPLE_CODES) for c in collapsed]
        )
        n, sample = join_plan.merge_samples(samples, join_plan.SAMPLE_CODES, -(-bits // 64))
        queries = sample[: budget.DEFAULT_SAMPLE_SIZE]
        hits = [client.submit(join_plan.sample_hits, c, queries, bits, radius) for c in collapsed]
        # the workers count while the driver plans
        chosen = choose_join(sample, n, bits, radius, self.n_workers, self.n_tasks)
        found = sum(client.gather(hits))
        estimate = budget.scaled_pairs(found, queries.shape[0], n) if n > 1 else 0.0
        if not self.options.force:
            budget.refuse_over_budget(estimate, radius, bits, self.options.max_candidate_pairs)
        message = chosen.warning()
        if message is not None:
            warnings.warn(message, join_plan.JoinWorkWarning, stacklevel=5)
        return chosen, estimate

    def _join_tiles(
        self, collapsed: list[Any], pieces: int, alone: mih.Plan | None = None
    ) -> dict[str, Any]:
        """Join every pair of pieces of the distinct codes (`gpusimhash.distributed._tiles`).

        ``alone``: how a piece is joined with itself (default brute force).
        """
        client, bits, radius = self.client, self.settings.bits, self.limit.radius
        split = [
            client.submit(tiles.tile_pieces, c, pieces, key=self.key("tile-split", b))
            for b, c in enumerate(collapsed)
        ]
        tile_bytes = [client.submit(nbytes, s) for s in split]
        gathered = [
            client.submit(
                tiles.gather_piece,
                [
                    client.submit(piece, s, i, key=self.key("tile-part", i, b))
                    for b, s in enumerate(split)
                ],
                -(-bits // 64),
                key=self.key("tile-piece", i),
            )
            for i in range(pieces)
        ]
        del split
        self.candidates = [
            client.submit(
                tiles.join_tile,
                gathered[i],
                None if i == j else gathered[j],
                bits,
                radius,
                alone,
                key=self.key("tile", i, j),
            )
            for i in range(pieces)
            for j in range(i, pieces)
        ]
        return {
            **_NO_TABLES,
            "tile_tasks": len(self.candidates),
            "tile_bytes": sum(client.gather(tile_bytes)),
        }

    def _join_tables(self, collapsed: list[Any]) -> dict[str, Any]:
        """Route the distinct codes to the pigeonhole tables and join each table's buckets."""
        client, bits, n_tasks = self.client, self.settings.bits, self.n_tasks
        blocks = tables.pigeonhole_blocks(bits, self.limit.radius)
        pieces = [
            client.submit(tables.table_pieces, c, blocks, n_tasks, key=self.key("table-split", b))
            for b, c in enumerate(collapsed)
        ]
        table_bytes = [client.submit(nbytes, p) for p in pieces]
        # each table task's join submitted right after its sort: a worker joins a task's
        # sorted codes before it sorts the next ones
        sorted_codes, self.candidates = {}, []
        for t in range(len(blocks)):
            for j in range(n_tasks):
                sorted_codes[t, j] = client.submit(
                    tables.bucket_table,
                    [
                        client.submit(
                            piece, table_piece, t, j, key=self.key("table-piece", t, j, b)
                        )
                        for b, table_piece in enumerate(pieces)
                    ],
                    t,
                    blocks,
                    bits,
                    self.limit.radius,
                    key=self.key("table-sort", t, j),
                )
                self.candidates.append(
                    client.submit(
                        tables.join_table,
                        sorted_codes[t, j],
                        t,
                        blocks,
                        bits,
                        self.limit.radius,
                        key=self.key("table", t, j),
                    )
                )
        del pieces
        crowded = self._split_crowded(sorted_codes, blocks)
        return {
            **crowded,
            "table_bytes": sum(client.gather(table_bytes)),
            "tables": len(blocks),
            "blocks": [list(b) for b in blocks],
            "tile_tasks": 0,
            "tile_bytes": 0,
        }

    def _split_crowded(
        self, sorted_codes: dict[tuple[int, int], Any], blocks: tuple[tuple[int, int], ...]
    ) -> dict[str, int]:
        """Join each crowded bucket by share tasks; add their futures to the candidates.

        Empties ``sorted_codes`` as each table task's crowded buckets are submitted.

        The driver learns only the crowded buckets' sizes and estimated seconds, from each
        table task as soon as it has sorted its codes; each bucket is selected on the worker
        holding them, and its shares, ahead of the table tasks still waiting (the longest work
        first), run wherever Dask puts them. The candidates stay in (table, task, bucket) order.
        """
        client, bits, radius = self.client, self.settings.bits, self.limit.radius
        asked = {
            client.submit(tables.crowded_work, codes): task for task, codes in sorted_codes.items()
        }
        found: dict[tuple[int, int, int], list[Any]] = {}
        for future, buckets in self._completed(list(asked)):
            t, j = asked.pop(future)
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
            del sorted_codes[t, j]  # its join and buckets hold it while they need it
        for index in sorted(found):
            self.candidates += found[index]
        return {
            "crowded_buckets": len(found),
            "split_buckets": sum(len(shares) > 1 for shares in found.values()),
            "share_tasks": sum(map(len, found.values())),
        }


def _members(collapsed: tables.Collapsed) -> np.ndarray:
    """Return a collapse task's documents of codes of two or more documents (a task)."""
    return collapsed.members


def _hand_out(hand: Callable[[int], Any], n_workers: int) -> None:
    """Hand each worker `_QUEUED_SHARES` shares, then one more as each of its shares ends.

    ``hand(w)`` submits the next share to worker ``w`` and returns its future (None once every
    share is begun). Returns once every share has ended, or once one has failed.
    """
    from dask.distributed import as_completed

    held = {}  # the worker of each share begun
    begun = []
    for _ in range(_QUEUED_SHARES):
        for w in range(n_workers):
            if (future := hand(w)) is not None:
                held[future.key] = w
                begun.append(future)
    finished = as_completed(begun)  # type: ignore[no-untyped-call]
    for future in finished:
        if future.status != "finished":
            return
        w = held.pop(future.key)
        if (following := hand(w)) is not None:
            held[following.key] = w
            finished.add(following)  # type: ignore[no-untyped-call]

"""The join stage of a distributed deduplication: identical codes collapsed, then the tables.

`JoinStage._join` shuffles (row, code) of every featured document by code to the collapse
tasks, then (row, code) of every distinct code by each pigeonhole table's block key to the
table tasks (`gpusimhash.distributed._tables`); a crowded bucket is joined apart, by share tasks
(`JoinStage._split_crowded`). It leaves futures: the collapse tasks' members and every task's
candidate pairs of distinct codes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpusimhash.distributed import _partitions as partitions
from gpusimhash.distributed import _tables as tables
from gpusimhash.distributed._run import RunState, nbytes, piece

__all__ = ["JoinStage"]

# documents per collapse or join task at least, beyond two per worker: each shuffle is
# n_tasks ** 2 piece tasks of 0.7 to 1 ms of the scheduler's time each (`bench_distributed.py`,
# 2 local workers), so 1B documents make 63 tasks (3 to 4 s of scheduler time per shuffle),
# while a task holds at most 16M codes (384 MB of rows and codes at 128 bits)
TASK_DOCUMENTS = 16_000_000


class JoinStage(RunState):
    """Collapse identical codes and join the pigeonhole tables (a mixin of the run)."""

    def _join(self) -> dict[str, Any]:
        """Collapse identical codes and join every table; keep the futures of the pairs.

        Every future of an intermediate result is dropped as soon as the tasks that use it are
        submitted (its size first asked for), so that each worker lets it go once used.
        """
        client, bits = self.client, self.settings.bits
        n_parts = len(self.paths)
        self.n_workers = max(1, len(client.scheduler_info().get("workers", {})))
        # tasks per shuffle: two per worker, more for a big corpus, never more than partitions
        wanted = max(2 * self.n_workers, -(-int(self.offsets[-1]) // TASK_DOCUMENTS))
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
        collapse_bytes = [client.submit(nbytes, s) for s in split]
        featureless = [client.submit(piece, s, 1) for s in split]
        collapsed = [
            client.submit(
                tables.collapse,
                [
                    client.submit(piece, s, 0, b, key=self.key("collapse-piece", p, b))
                    for p, s in enumerate(split)
                ],
                n_words,
                key=self.key("collapse", b),
            )
            for b in range(n_tasks)
        ]
        del split
        # what the clustering gathers besides the pairs, ready by the time they are
        self.members = [client.submit(_members, c) for c in collapsed]
        distinct = [client.submit(_distinct, c) for c in collapsed]
        blocks = tables.pigeonhole_blocks(bits, self.limit.radius)
        pieces = [
            client.submit(tables.table_pieces, c, blocks, n_tasks, key=self.key("table-split", b))
            for b, c in enumerate(collapsed)
        ]
        del collapsed
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
        self.featureless = np.concatenate([np.zeros(0, np.int64), *client.gather(featureless)])
        return {
            **crowded,
            "collapse_bytes": sum(client.gather(collapse_bytes)),
            "table_bytes": sum(client.gather(table_bytes)),
            "tables": len(blocks),
            "blocks": [list(b) for b in blocks],
            "distinct_codes": sum(client.gather(distinct)),
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
        from dask.distributed import as_completed

        client, bits, radius = self.client, self.settings.bits, self.limit.radius
        asked = {
            client.submit(tables.crowded_work, codes): task for task, codes in sorted_codes.items()
        }
        found: dict[tuple[int, int, int], list[Any]] = {}
        for future, buckets in as_completed(asked, with_results=True):  # type: ignore[no-untyped-call]
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


def _distinct(collapsed: tables.Collapsed) -> int:
    """Return a collapse task's number of distinct codes (a task)."""
    return int(collapsed.rows.size)


def _members(collapsed: tables.Collapsed) -> np.ndarray:
    """Return a collapse task's documents of codes of two or more documents (a task)."""
    return collapsed.members

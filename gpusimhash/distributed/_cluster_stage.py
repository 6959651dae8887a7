"""The clustering stage of a distributed deduplication, on the workers.

`ClusterStage._cluster` clusters a small candidate graph (`ONE_GROUP_WORK`) in one task, with
the features of its documents taken where each partition is. A larger one is split by its
connected components, labelled by label propagation over node shards
(`gpusimhash.distributed._components`): each shard names its documents in components, the work
of each component is summed, the components are dealt to groups and the single-machine
clustering runs on each group where its documents' features are gathered
(`gpusimhash.distributed._groups`). One task joins the groups' removals (`Removals`), from
which the write stage's tasks take their rows where it is made; only (row, kept row,
similarity) of the removed documents come back to the driver.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from gpusimhash.distributed import _components as components
from gpusimhash.distributed import _groups as groups
from gpusimhash.distributed import _partitions as partitions
from gpusimhash.distributed._pairs import distinct_pairs, route_pairs
from gpusimhash.distributed._run import RunState, nbytes, on_worker, piece

__all__ = ["ClusterStage", "Removals", "removals"]

_GROUPS_PER_WORKER = 2  # clustering tasks per worker
_MAX_ROUNDS = 256  # label propagation needs O(log^2 n) rounds: more means a bug
# candidate pairs plus documents sharing a code up to which one task clusters the whole graph:
# on the first 800,000 PyPI summaries at the defaults (1,507,250 pairs of codes) the stage took
# 0.47 s so, 1.22 s by components, on 2 workers (`bench/results/cluster_stage_cpu.json`: the
# components' dozen stages cost more than they split); the one task's pairs stay within 64 MiB
# (16 bytes each)
ONE_GROUP_WORK = 1 << 22
# estimated bytes of the features of the whole graph's documents up to which one task holds them
# (`ClusterStage._group_bytes`): 800,000 PyPI summaries, 126 bytes each on average, 101 MB
ONE_GROUP_BYTES = 1 << 30
# partitions up to which each sends its share of the whole group unasked, an empty one too:
# more small tasks (0.7 to 1 ms of the scheduler's time each, `_join_stage.TASK_DOCUMENTS`)
# than a wait of the driver for the partitions holding some of its documents costs
TAKE_EVERY_PARTITION = 32


class ClusterStage(RunState):
    """Label the components and cluster each group of them (a mixin of the run)."""

    def _cluster(self, stats: dict[str, Any]) -> Any:
        """Cluster the candidate graph on the workers; return a future of its `Removals`.

        A graph of at most `ONE_GROUP_WORK` pairs (each counted as often as the join found it)
        and documents sharing a code, whose documents' features take at most `ONE_GROUP_BYTES`
        by estimate (`_group_bytes`), is clustered by one task (`_cluster_whole`); a larger one
        is split by its components into groups (`_cluster_components`), its pairs first kept
        once each where the join may have found one twice. The driver does not wait for the
        clustering: the tasks that need only its removals (the kept parts) are submitted first
        (`gpusimhash.distributed._write_stage`).
        """
        options = self.options
        # the featureless documents share one code of their own: a component alone
        featureless = np.zeros((0, 2), np.int64)
        if options.empty_as_duplicates and self.featureless.size > 1:
            code = np.full_like(self.featureless, self.featureless.min())
            featureless = np.stack([self.featureless, code], axis=1)
        if self.work <= ONE_GROUP_WORK and self._group_bytes() <= ONE_GROUP_BYTES:
            return self._cluster_whole(featureless)
        if self.repeated_pairs:
            self.candidates = self._distinct_candidates()
        clustered = self._cluster_components(stats, featureless)
        return self.client.submit(removals, clustered, {}, key=self.key("removals"))

    def _group_bytes(self) -> float:
        """Estimate the bytes of the whole graph's documents' features, on one worker.

        At most two documents per pair and one per document sharing a code (`work`), and at
        most every document, at the corpus's mean bytes of features per document.
        """
        n = int(self.offsets[-1])
        if not n:
            return 0.0
        mean = sum(file.feature_bytes for file in self.files) / n
        return min(n, 2 * self.work) * mean

    def _cluster_whole(self, featureless: np.ndarray) -> Any:
        """Cluster the whole graph in one task, with the features of its documents.

        The graph is gathered as one group (`groups.whole_group`, each pair once), its
        documents' features are taken where each partition is, and one task clusters it, where
        the components take a dozen waits of the driver. Every partition sends its share, or,
        beyond `TAKE_EVERY_PARTITION` partitions, those holding some of the group's documents,
        which takes a wait. Returns a future of the `Removals`, with the graph's pairs and
        components among their counts.
        """
        client = self.client
        group = client.submit(
            groups.whole_group,
            self.candidates,
            self.members,
            featureless,
            self.repeated_pairs,
            key=self.key("group", 0),
        )
        self.candidates, self.members = [], []
        holding = np.arange(len(self.parts))
        if len(self.parts) > TAKE_EVERY_PARTITION:  # those holding none of its documents: none
            holding = np.flatnonzero(client.submit(_group_counts, group, self.offsets).result())
        taken = [
            client.submit(
                _take_share,
                self.parts[d],
                group,
                int(self.offsets[d]),
                key=self.key("group-take", 0, d),
                **on_worker(self.holders[d]),
            )
            for d in holding.tolist()
        ]
        return client.submit(
            _cluster_whole_group,
            group,
            self.limit,
            self.options.cluster,
            self.options.keep,
            self.options.empty_as_duplicates,
            *taken,
            key=self.key("cluster", 0),
        )

    def _distinct_candidates(self) -> list[Any]:
        """Keep each candidate pair once: shuffled by a hash of the pair (`_pairs`; futures)."""
        client, n_tasks = self.client, self.n_tasks
        routed = [client.submit(route_pairs, f, n_tasks) for f in self.candidates]
        return [
            client.submit(
                distinct_pairs,
                [client.submit(piece, r, j) for r in routed],
                key=self.key("distinct-pairs", j),
            )
            for j in range(n_tasks)
        ]

    def _cluster_components(self, stats: dict[str, Any], featureless: np.ndarray) -> list[Any]:
        """Label the components on the workers, deal them to groups, cluster each group.

        Each stage's futures are dropped once the next stage is submitted, so that the workers
        let their results go as soon as they are used. Returns the futures of each group's
        clustering (none for an empty graph).
        """
        client = self.client
        documents, labelled = self._shard_components(self._label_components(stats))
        work = self._component_work(documents, labelled)
        totals = np.array(
            client.gather(
                [client.submit(_totals, w, p) for w, p in zip(work, labelled, strict=True)]
            ),
            dtype=np.int64,
        ).reshape(-1, 3)
        n_components = int(totals[:, 1].sum()) + bool(featureless.size)
        n_groups = max(1, min(_GROUPS_PER_WORKER * self.n_workers, n_components))
        stats["candidate_code_pairs"] = int(totals[:, 2].sum())
        stats["components"] = n_components
        stats["cluster_groups"] = n_groups if n_components else 0
        if not n_components:
            return []
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
        return self._cluster_groups(routed, n_groups, dealt, featureless)

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
                [client.submit(piece, w, j) for w in pieces],
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
        counts = np.sum(client.gather([client.submit(piece, r, 2) for r in routed]), axis=0)
        extra: dict[int, list[Any]] = {}
        if featureless.size:
            g = int(groups.group_of(featureless[:1, 1], dealt, n_groups)[0])
            extra[g] = client.scatter([featureless], hash=False)
            counts[g] += np.bincount(
                np.searchsorted(self.offsets, featureless[:, 0], side="right") - 1,
                minlength=len(self.paths),
            )
        inputs, taken = [], []
        for g in range(n_groups):
            inputs.append(
                client.submit(
                    groups.group_inputs,
                    [client.submit(piece, r, 0, g) for r in routed] + extra.get(g, []),
                    [client.submit(piece, r, 1, g) for r in routed],
                    key=self.key("group", g),
                )
            )
            # each partition's share of the group, taken where the partition is
            taken.append(
                [
                    client.submit(
                        partitions.take_documents,
                        part,
                        client.submit(
                            groups.rows_between,
                            inputs[g],
                            int(self.offsets[d]),
                            int(self.offsets[d + 1]),
                        ),
                        int(self.offsets[d]),
                        key=self.key("group-take", g, d),
                    )
                    for d, part in enumerate(self.parts)
                    if counts[g, d]
                ]
            )
        # every group's documents taken before any group is clustered: a worker (one task at a
        # time) would otherwise make the next groups' shares wait behind a clustering
        self._settle([t for group in taken for t in group])
        return [
            client.submit(
                _cluster_group,
                inputs[g],
                self.limit,
                self.options.cluster,
                self.options.keep,
                self.options.empty_as_duplicates,
                *taken[g],
                key=self.key("cluster", g),
            )
            for g in range(n_groups)
        ]

    def _shuffled(self, futures: list[Any], column: int, name: str) -> list[list[Any]]:
        """Route the rows of each future's array by the node shard of a column: ``[shard][source]``."""
        client, n_shards = self.client, self.n_tasks
        split = [
            client.submit(components.by_node, f, column, n_shards, key=self.key(name, i))
            for i, f in enumerate(futures)
        ]
        return [[client.submit(piece, s, j) for s in split] for j in range(n_shards)]

    def _label_components(self, stats: dict[str, Any]) -> list[Any]:
        """Label the components of the candidate graph by large-star / small-star rounds.

        A graph whose star edges are few (`components.ONE_TASK_BYTES`) is labelled by one task
        (`components.whole_stars`), with no rounds.

        Returns each node shard's (codes, components) future
        (`gpusimhash.distributed._components`); the driver sees only whether a step changed
        anything.
        """
        client, n_shards = self.client, self.n_tasks
        edges = [
            client.submit(components.local_edges, c, n_shards, key=self.key("edges", i))
            for i, c in enumerate(self.candidates)
        ]
        moved = sum(client.gather([client.submit(nbytes, e) for e in edges]))
        if moved <= components.ONE_TASK_BYTES:
            stars = client.submit(components.whole_stars, edges, n_shards, key=self.key("stars"))
            stats["label_rounds"] = 0
            stats["label_bytes"] = moved
            return [
                client.submit(
                    components.shard_labels,
                    [client.submit(piece, stars, j)],
                    key=self.key("labels", j),
                )
                for j in range(n_shards)
            ]
        current = self._star_round(
            [[client.submit(piece, e, j) for e in edges] for j in range(n_shards)], 1
        )
        for rounds in range(1, _MAX_ROUNDS + 1):
            # the next round runs while the driver reads this one's reports
            following = self._star_round(current[1], rounds + 1)
            reports = client.gather(current[0])
            moved += sum(emitted for _, emitted in reports)
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
            shards = [[client.submit(piece, s, 1, j) for s in steps] for j in range(n_shards)]
            reports += [client.submit(_step_report, s) for s in steps]
        return reports, shards


def _step_report(step: tuple[bool, list[np.ndarray]]) -> tuple[bool, int]:
    """Return whether a label propagation step changed an edge, and the bytes it emitted."""
    return step[0], nbytes(step[1])


def _group_counts(group: tuple[np.ndarray, ...], offsets: np.ndarray) -> np.ndarray:
    """Return the whole group's documents in each partition (a task)."""
    partition = np.searchsorted(offsets, group[0][:, 0], side="right") - 1
    return np.bincount(partition, minlength=offsets.size - 1)


def _take_share(
    part: Any, group: tuple[np.ndarray, ...], offset: int
) -> tuple[Any, np.ndarray, np.ndarray | None]:
    """Take the features, lengths and scores of a partition's documents in a group (a task)."""
    return partitions.take_documents(part, group[0][:, 0], offset)


def _totals(work: np.ndarray, pairs: tuple[np.ndarray, np.ndarray]) -> tuple[int, int, int]:
    """Return a node shard's work, components and pairs (a task)."""
    return int(work[:, 1].sum()), len(work), len(pairs[0])


def _cluster_group(
    group: tuple[Any, ...],
    limit: Any,
    method: str,
    policy: str,
    empty_as_duplicates: bool,
    *taken: tuple[Any, np.ndarray, np.ndarray | None],
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Cluster one group: its documents and pairs come first (`groups.group_inputs`; a task)."""
    documents, pairs = group[0], group[1]
    return groups.cluster_group(
        documents, pairs, limit, method, policy, empty_as_duplicates, *taken
    )


def _cluster_whole_group(
    group: tuple[np.ndarray, np.ndarray, int],
    limit: Any,
    method: str,
    policy: str,
    empty_as_duplicates: bool,
    *taken: tuple[Any, np.ndarray, np.ndarray | None],
) -> Removals:
    """Cluster the whole group (`groups.whole_group`; a task).

    Returns its `Removals`, counting the graph's pairs and components too (nothing removed
    nor verified for an empty graph).
    """
    documents, pairs, components = group
    counts = {
        "candidate_code_pairs": len(pairs),
        "components": components,
        "cluster_groups": min(1, components),  # none for an empty graph, as by components
        "label_rounds": 0,
        "label_bytes": 0,
    }
    if not components:
        return removals([], counts)
    clustered = groups.cluster_group(
        documents, pairs, limit, method, policy, empty_as_duplicates, *taken
    )
    return removals([clustered], counts)


class Removals(NamedTuple):
    """What the clustering removed, and what the driver counts of it (`removals`).

    Attributes
    ----------
    removed : ndarray, dtype int64
        The removed rows, ascending.
    kept_for : ndarray, dtype int64
        The row kept for each.
    similarity : ndarray, dtype float64
        Each one's similarity to it.
    clustered : ndarray, dtype int64
        Every document of a cluster of two or more (removed or kept), ascending.
    counts : dict
        The run's statistics the clustering counted: ``pairs_verified``, and the graph's
        pairs and components where one task clustered it.
    """

    removed: np.ndarray
    kept_for: np.ndarray
    similarity: np.ndarray
    clustered: np.ndarray
    counts: dict[str, int]


def removals(
    clustered: list[tuple[np.ndarray, np.ndarray, np.ndarray, int]], counts: dict[str, int]
) -> Removals:
    """Join the groups' clusterings into the run's `Removals` (a task).

    ``clustered`` holds each group's `groups.cluster_group` result; ``counts`` the statistics
    counted so far, to which the pairs verified are added.

    Examples
    --------
    >>> found = removals(
    ...     [(np.array([7]), np.array([2]), np.array([0.9]), 3),
    ...      (np.array([4]), np.array([1]), np.array([0.8]), 1)],
    ...     {},
    ... )
    >>> found.removed.tolist(), found.kept_for.tolist(), found.clustered.tolist()
    ([4, 7], [1, 2], [1, 2, 4, 7])
    >>> found.counts
    {'pairs_verified': 4}
    """
    empty = np.zeros(0, np.int64)
    removed = np.concatenate([empty, *(c[0] for c in clustered)])
    kept_for = np.concatenate([empty, *(c[1] for c in clustered)])
    similarity = np.concatenate([np.zeros(0), *(c[2] for c in clustered)])
    order = np.argsort(removed)
    removed, kept_for = removed[order], kept_for[order]
    return Removals(
        removed,
        kept_for,
        similarity[order],
        np.union1d(removed, kept_for),
        counts | {"pairs_verified": int(sum(c[3] for c in clustered))},
    )

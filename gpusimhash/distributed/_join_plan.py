"""Which join the cluster runs, chosen by the single machine's cost model.

After the collapse, each collapse task hands the driver its number of distinct codes and the
codes of lowest hash among them (`code_sample`); the merged sample (`merge_samples`: the
lowest hashes overall, a uniform sample whatever the partitioning) is what the single
machine's planner measures (`gpusimhash.join._mih.plan_for_sample`: random pairs of codes, and
in how many bits of each block they differ). `choose_join` prices every join the cluster can
run, in the same one-core seconds:

* ``"tables"``: the pigeonhole tables (`gpusimhash.distributed._tables`): ``r + 1`` tables,
  each routing and sorting every distinct code, then comparing the pairs of codes that share
  its key and a sub-block key (each against the earlier sub-blocks), or, in buckets too
  crowded for sub-blocks, every pair of the bucket;
* ``"tiles"``: the exhaustive join in tiles (`gpusimhash.distributed._tiles`): the brute
  force's pairs, and each piece shipped to the tiles it is in;
* ``"one"``: every distinct code shipped to one task, which runs the single machine's own
  join on one core (MIH or brute force; at most `ONE_TASK_CODES` codes);

each with its tasks' scheduler time, and runs the one that ends first: the tables and the
tiles spread their work over the workers, the one task does not. Where a join on the features
(the exact candidates of a prefix filter) is priced, it is one more entry of `METHODS`.

The estimate of the join chosen is compared with the single machine's own plan on one core
(MIH or brute force): a run whose join would cost far more says so, with both estimates,
before its join starts (`JoinPlan.warning`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpusimhash.distributed import _tables as tables
from gpusimhash.distributed import _tiles as tiles
from gpusimhash.distributed._routing import mix_words
from gpusimhash.join import _budget as budget
from gpusimhash.join import _mih as mih

__all__ = [
    "METHODS",
    "ONE_TASK_CODES",
    "SAMPLE_CODES",
    "JoinPlan",
    "JoinWorkWarning",
    "choose_join",
    "code_sample",
    "merge_samples",
    "sample_hits",
    "wall_seconds",
]

METHODS = ("tables", "tiles", "one")
# distinct codes one task joins at most: 160 MB of rows and codes at 256 bits, a few hundred
# MB with the MIH tables of the single machine's join
ONE_TASK_CODES = 1 << 22
SAMPLE_CODES = 1 << 14  # distinct codes the driver samples (512 KB at 256 bits)
_SAMPLE_PAIRS = 1 << 17  # random pairs of them measured, as the single machine's planner
# One-core seconds, calibrated on 2 local workers (`bench/bench_distributed.py`; only ratios
# matter, and the brute force's and candidates' costs are the single machine's):
_TASK_SECONDS = 1e-3  # the scheduler's time per task, shuffle pieces included
_TABLE_CODE_SECONDS = 0.5e-6  # per distinct code per table: route, ship, sort, pick buckets
_SUB_CODE_SECONDS = 0.1e-6  # per code per sub-block of a table: its key and sort
_SUB_PAIR_SECONDS = 5e-9  # per pair sharing a sub-block key, per sub-block it is checked on
_SHIP_CODE_SECONDS = 0.05e-6  # per code per tile it is shipped to
_WARN_RATIO = 4.0  # a join estimated at more than this times the single machine's warns
_WARN_SECONDS = 60.0  # ... when it is estimated at more than this above it too


class JoinWorkWarning(UserWarning):
    """The cluster's join is estimated to cost far more than the single machine's."""


@dataclass(frozen=True)
class JoinPlan:
    """The join a cluster runs, and what every join would cost.

    Attributes
    ----------
    method : {"tables", "tiles", "one"}
        The join chosen: the one estimated to end first (`choose_join`).
    estimates : dict of str to float
        Estimated one-core seconds of every join of `METHODS` the cluster can run.
    single_machine : Plan
        The single machine's plan of the same join on one core
        (`gpusimhash.join._mih.plan_for_sample`).
    distinct_codes : int
        Distinct codes joined.
    pieces : int
        The pieces of the codes in the tiles (`gpusimhash.distributed._tiles.tile_count`).

    Examples
    --------
    >>> plan = JoinPlan("tiles", {"tables": 9.0, "tiles": 3.0}, mih.Plan("brute", (), 2.5), 10, 4)
    >>> plan.seconds, plan.warning() is None
    (3.0, True)
    """

    method: str
    estimates: dict[str, float]
    single_machine: mih.Plan
    distinct_codes: int
    pieces: int

    @property
    def seconds(self) -> float:
        """Estimated one-core seconds of the join chosen."""
        return self.estimates[self.method]

    def warning(self) -> str | None:
        """Return what to tell before a join far above the single machine's, or None.

        Far above: more than four times the single machine's estimate, and more than a minute
        of one core above it.
        """
        single = self.single_machine.seconds
        if self.seconds <= max(_WARN_RATIO * single, single + _WARN_SECONDS):
            return None
        return (
            f"the cluster's join ({self.method}) over {self.distinct_codes:,} distinct codes is "
            f"estimated at {self.seconds:,.0f} s of one core, {self.seconds / single:,.1f} "
            f"times the single machine's ({self.single_machine.method}, {single:,.1f} s): "
            f"{', '.join(f'{m} {s:,.0f} s' for m, s in self.estimates.items())}"
        )

    def summary(self) -> dict[str, object]:
        """Describe the plan for the run's summary."""
        return {
            "method": self.method,
            "estimates_s": {m: round(s, 3) for m, s in self.estimates.items()},
            "single_machine": {
                "method": self.single_machine.method,
                "estimate_s": round(self.single_machine.seconds, 3),
            },
            "pieces": {"tiles": self.pieces, "one": 1}.get(self.method, 0),
        }


def code_sample(collapsed: tables.Collapsed, size: int) -> tuple[int, np.ndarray, np.ndarray]:
    """Return a collapse task's distinct codes, and the ``size`` of lowest hash among them (a task).

    Parameters
    ----------
    collapsed : Collapsed
        The task's distinct codes.
    size : int
        Codes to sample at most.

    Returns
    -------
    count : int
        Distinct codes.
    hashes : ndarray, dtype uint64
        The sampled codes' hashes, ascending.
    words : ndarray, dtype uint64
        The sampled codes.
    """
    hashes = mix_words(collapsed.words, salt=1)
    lowest = np.argsort(hashes, kind="stable")[:size]
    return int(collapsed.rows.size), hashes[lowest], collapsed.words[lowest]


def sample_hits(collapsed: tables.Collapsed, queries: np.ndarray, bits: int, radius: int) -> int:
    """Count a collapse task's codes within the radius of each sampled code (a task).

    The guard rail's estimate (`gpusimhash.join._budget.range_hits`), split by collapse task:
    summed over the tasks, the hits of the sampled codes among every distinct code.

    Parameters
    ----------
    collapsed : Collapsed
        The task's distinct codes.
    queries : ndarray, shape (s, w), dtype uint64
        The sampled codes, as words.
    bits, radius : int
        Code length and Hamming radius.
    """
    width = bits // 8
    codes = np.ascontiguousarray(collapsed.words).view(np.uint8)[:, :width]
    return budget.range_hits(codes, np.ascontiguousarray(queries).view(np.uint8)[:, :width], radius)


def merge_samples(
    samples: list[tuple[int, np.ndarray, np.ndarray]], size: int, n_words: int
) -> tuple[int, np.ndarray]:
    """Merge the collapse tasks' samples: distinct codes, and the ``size`` of lowest hash.

    A code's hash does not depend on where it is, so the sample is the same for any
    partitioning, and uniform over the distinct codes.

    Parameters
    ----------
    samples : list of (count, hashes, words)
        Of every collapse task (`code_sample`).
    size : int
        Codes to keep at most.
    n_words : int
        uint64 words per code.

    Returns
    -------
    count : int
        Distinct codes in all.
    words : ndarray, shape (min(size, count), n_words), dtype uint64
    """
    hashes = np.concatenate([np.zeros(0, np.uint64), *(s[1] for s in samples)])
    words = np.concatenate([np.zeros((0, n_words), np.uint64), *(s[2] for s in samples)])
    lowest = np.lexsort((*words.T[::-1], hashes))[:size]
    return sum(s[0] for s in samples), words[lowest]


def choose_join(
    sample: np.ndarray, n: int, bits: int, radius: int, workers: int, shuffle_tasks: int
) -> JoinPlan:
    """Price every join the cluster can run on a sample of the codes; choose the first to end.

    The tables and the tiles spread their one-core seconds over the workers; the one task
    (up to `ONE_TASK_CODES` codes) runs on one core.

    Parameters
    ----------
    sample : ndarray, shape (s, w), dtype uint64
        Distinct codes drawn uniformly from the ``n`` (`merge_samples`).
    n : int
        Distinct codes.
    bits, radius : int
        Code length and Hamming radius.
    workers : int
        Workers of the cluster.
    shuffle_tasks : int
        Collapse tasks, and table tasks per table.

    Returns
    -------
    JoinPlan

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> sample = rng.integers(0, 2**63, (4096, 2), dtype=np.uint64)
    >>> choose_join(sample, 10**8, 128, 3, 2, 4).method
    'tables'
    >>> choose_join(sample, 10**6, 128, 40, 2, 4).method
    'tiles'
    >>> choose_join(sample, 10**6, 128, 3, 2, 4).method
    'one'
    """
    single = mih.plan_for_sample(sample, n, bits, radius, workers=1)
    pieces = tiles.tile_count(n, workers)
    xor = None
    if sample.shape[0] > 1:
        xor = mih.sample_xor(sample, int(min(_SAMPLE_PAIRS, n * (n - 1) // 2)))
    estimates = {
        "tables": _tables_seconds(xor, n, bits, radius, shuffle_tasks),
        "tiles": _tiles_seconds(n, sample.shape[1], pieces, shuffle_tasks),
    }
    if n <= ONE_TASK_CODES:
        estimates["one"] = _one_seconds(single, n, shuffle_tasks)
    method = min(estimates, key=lambda m: (wall_seconds(m, estimates[m], workers), m))
    return JoinPlan(method, estimates, single, n, pieces)


def wall_seconds(method: str, seconds: float, workers: int) -> float:
    """Return the wall seconds of a join of ``seconds`` one-core seconds on ``workers``.

    Examples
    --------
    >>> wall_seconds("tiles", 8.0, 4), wall_seconds("one", 8.0, 4)
    (2.0, 8.0)
    """
    return seconds if method == "one" else seconds / max(1, workers)


def _one_seconds(single: mih.Plan, n: int, shuffle_tasks: int) -> float:
    """Estimate the one task: the single machine's join, shipping every code once, the tasks."""
    tasks = 2 * shuffle_tasks + 2  # split, pieces, the gathering and the join
    return single.seconds + n * _SHIP_CODE_SECONDS + tasks * _TASK_SECONDS


def _tiles_seconds(n: int, n_words: int, pieces: int, shuffle_tasks: int) -> float:
    """Estimate the tiled exhaustive join: the brute force, shipping the pieces, the tasks."""
    tasks = shuffle_tasks * (pieces + 1) + pieces + pieces * (pieces + 1) // 2
    return mih.brute_seconds(n, n_words) + n * pieces * _SHIP_CODE_SECONDS + tasks * _TASK_SECONDS


def _tables_seconds(
    xor: np.ndarray | None, n: int, bits: int, radius: int, shuffle_tasks: int
) -> float:
    """Estimate the tables: each routes and sorts every code, then compares its candidates.

    A table's bucket is compared by sub-blocks when it is small (pairs sharing the table's key
    and a sub-block key, each checked against the earlier sub-blocks), and pair by pair when
    its codes crowd it (`gpusimhash.distributed._tables.BUCKET_CAP`): a random pair shares the
    table's key with probability ``share``, so a random code's bucket holds about ``n * share``.
    """
    blocks = tables.pigeonhole_blocks(bits, radius)
    pairs = n * (n - 1) / 2
    tasks = shuffle_tasks * (shuffle_tasks + 4)  # pieces, split, sort, join, crowded work
    total = len(blocks) * (n * _TABLE_CODE_SECONDS + tasks * _TASK_SECONDS)
    if xor is None:
        return total
    n_words = xor.shape[1]
    for lo, width in blocks:
        same = tables.block_keys(xor, lo, width) == 0
        share = float(same.mean())
        if n * share > tables.BUCKET_CAP:
            total += mih.candidate_seconds(pairs * share, n_words)
            continue
        subs = tables.sub_blocks(bits, radius, lo, width)
        inside = xor[same]
        checks = 0.0
        for i, sub in enumerate(subs if inside.size else ()):
            checks += (1 + i) * float(np.mean(tables.block_keys(inside, *sub) == 0))
        total += n * len(subs) * _SUB_CODE_SECONDS + pairs * share * checks * _SUB_PAIR_SECONDS
    return total

"""Distinct values without hashing against ``np.unique``, pairs by one key against a lexsort.

On ``--size`` random int64 values and as many random pairs of rows below 200,000 (a twentieth
repeated), each against its NumPy peer:

- ``np.unique(values)`` against `gpusimhash._unique.distinct_values`, on values below ``2**40``
  (sorted) and on the pairs' rows (a dense range: marked in a table);
- the lexsort of the pairs' two columns against `gpusimhash.distributed._pairs.distinct` (one
  packed int64 key per pair), on random pairs and on four sorted runs of them (``sorted_runs``:
  merged);
- ``np.searchsorted`` of the pairs' rows among the distinct ones against
  `gpusimhash._unique.value_positions` (a table over the dense range).

Best of ``--repeats``, after a warm-up; both sides give the same arrays (checked). Prints a
table and writes bench/results/unique_cpu.json.

    python bench/bench_unique.py [--size 536000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import print_table, write_json

from gpusimhash._unique import distinct_values, value_positions
from gpusimhash.distributed._pairs import distinct


def _lexsorted(pairs: np.ndarray) -> np.ndarray:
    """The distinct rows of pairs by a lexsort of the two columns (the packed key's peer)."""
    pairs = pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]
    fresh = np.ones(len(pairs), dtype=bool)
    fresh[1:] = (pairs[1:] != pairs[:-1]).any(axis=1)
    return pairs[fresh]


def best(repeats: int, run) -> tuple[float, np.ndarray]:
    """Best seconds of ``repeats`` calls after one warm-up; the last result."""
    result = run()
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = run()
        seconds.append(time.perf_counter() - start)
    return min(seconds), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=536_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    values = rng.integers(0, 2**40, args.size)
    a, b = rng.integers(0, 200_000, (2, args.size))
    pairs = np.stack([np.minimum(a, b), np.maximum(a, b)], axis=1)
    pairs = np.concatenate([pairs, pairs[: args.size // 20]])
    runs = np.concatenate([distinct(p) for p in np.array_split(pairs, 4)])
    nodes = np.unique(pairs)
    rows = []
    for name, peer, ours in (
        ("distinct values", lambda: np.unique(values), lambda: distinct_values(values)),
        ("distinct rows (dense)", lambda: np.unique(pairs), lambda: distinct_values(pairs)),
        ("distinct pairs", lambda: _lexsorted(pairs), lambda: distinct(pairs)),
        (
            "distinct pairs, 4 sorted runs",
            lambda: _lexsorted(runs),
            lambda: distinct(runs, sorted_runs=True),
        ),
        (
            "positions of rows (dense)",
            lambda: np.searchsorted(nodes, pairs),
            lambda: value_positions(nodes, pairs),
        ),
    ):
        peer_s, expected = best(args.repeats, peer)
        ours_s, found = best(args.repeats, ours)
        rows.append(
            {
                "what": name,
                "NumPy seconds": round(peer_s, 4),
                "ours seconds": round(ours_s, 4),
                "ours / NumPy": round(ours_s / peer_s, 2),
                "same": bool(np.array_equal(found, expected)),
            }
        )
    print_table(rows, list(rows[0]))
    path = write_json(
        "unique_cpu.json",
        {"size": args.size, "repeats": args.repeats, "numpy": np.__version__, "table": rows},
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

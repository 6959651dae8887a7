"""Distinct values without hashing against ``np.unique``, pairs by one key against a lexsort.

On ``--size`` random int64 values and as many random pairs of rows below 200,000 (a twentieth
repeated), each against its NumPy peer:

- ``np.unique(values)`` against `gpusimhash._unique.distinct_values`, on values below ``2**40``
  (sorted) and on the pairs' rows (a dense range: marked in a table);
- the lexsort of the pairs' two columns against `gpusimhash.distributed._pairs.distinct` (one
  packed int64 key per pair), on random pairs and on four sorted runs of them (``sorted_runs``:
  merged);
- ``np.searchsorted`` of the pairs' rows among the distinct ones against
  `gpusimhash._unique.value_positions` (a table over the dense range);
- a lexsort of 256-bit codes by all their words against `gpusimhash.join._groups.collapse`
  (sorted by the first word, then the rows sharing one), on random codes, a quarter of them
  one bit from another in their last word and a tenth repeated;
- a lexsort of documents by code, feature hash and position against
  `gpusimhash.verify._units._by_code_and_hash` (one packed key);
- ``np.unique`` of feature states with inverse and counts against
  `gpusimhash.verify._product_join._distinct_states` (two radix passes), on 8 times as many
  uint32 states drawn from as many distinct ones, Zipf-distributed like words.

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
from gpusimhash.join._groups import collapse
from gpusimhash.verify._product_join import _distinct_states
from gpusimhash.verify._units import _by_code_and_hash


def _lexsorted(pairs: np.ndarray) -> np.ndarray:
    """The distinct rows of pairs by a lexsort of the two columns (the packed key's peer)."""
    pairs = pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]
    fresh = np.ones(len(pairs), dtype=bool)
    fresh[1:] = (pairs[1:] != pairs[:-1]).any(axis=1)
    return pairs[fresh]


def _lexsorted_rows(words: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows and inverse by a lexsort of every word (the first-word sort's peer)."""
    order = np.lexsort(words.T[::-1])
    ordered = words[order]
    first = np.ones(len(words), dtype=bool)
    first[1:] = (ordered[1:] != ordered[:-1]).any(axis=1)
    inverse = np.empty(len(words), dtype=np.int64)
    inverse[order] = np.cumsum(first) - 1
    return ordered[first], inverse


def _codes(rng: np.random.Generator, size: int) -> np.ndarray:
    """Random 256-bit codes: a quarter one bit from another in the last word, a tenth repeated."""
    codes = rng.integers(0, 2**63, (size, 4), dtype=np.uint64)
    near = rng.choice(size, size // 4, replace=False)
    codes[near] = codes[rng.integers(0, size, near.size)]
    codes[near, 3] ^= np.uint64(1)
    repeated = rng.choice(size, size // 10, replace=False)
    codes[repeated] = codes[rng.integers(0, size, repeated.size)]
    return codes


def _unique_states(states: np.ndarray) -> tuple[np.ndarray, ...]:
    """``np.unique`` of the states with inverse and counts (the radix passes' peer)."""
    distinct, inverse, counts = np.unique(states, return_inverse=True, return_counts=True)
    return distinct, inverse.reshape(-1), counts


def _same(found, expected) -> bool:
    """Whether two results (arrays or tuples of arrays) are equal."""
    if isinstance(found, tuple):
        return all(np.array_equal(f, e) for f, e in zip(found, expected, strict=True))
    return bool(np.array_equal(found, expected))


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
    codes = _codes(rng, args.size)
    code, hashes = rng.integers(0, args.size // 2, args.size), rng.integers(0, 2**63, args.size)
    hashes = hashes.astype(np.uint64)
    positions = np.arange(args.size)
    vocabulary = rng.integers(0, 2**32, args.size, dtype=np.uint64).astype(np.uint32)
    states = vocabulary[np.minimum(rng.zipf(1.3, 8 * args.size), args.size) - 1]
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
        ("distinct 256-bit codes", lambda: _lexsorted_rows(codes), lambda: collapse(codes)),
        (
            "documents by code and hash",
            lambda: np.lexsort((positions, hashes, code)),
            lambda: _by_code_and_hash(code, hashes),
        ),
        (
            "feature states, inverse and counts",
            lambda: _unique_states(states),
            lambda: _distinct_states(states),
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
                "same": _same(found, expected),
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

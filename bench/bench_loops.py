"""The compiled loops against those of another revision (the Numba loops they replaced), side by side.

Each round runs `_loops_probe.py` once in this checkout and once with the baseline checkout
first on ``PYTHONPATH``, in turns, on the same documents (the corpus's first ``--docs`` lines):
tokenizing, fingerprinting (word counts and TF-IDF weights), merging features, a million pair
similarities, finding identical feature sets, and the exact feature join's index and probe at
cosine and Jaccard 0.8. Every figure is warm (one call first: for Numba, its compilation or
cache load is not in it; a fresh process's start is measured by ``bench_startup.py``) and the
best of ``--repeats`` calls, then of the rounds. Prints a table and writes
bench/results/loops_cpu.json.

    python bench/bench_loops.py [CORPUS] --baseline TREE [--docs 300000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DEFAULT_CORPUS, ROOT, print_table, write_json

PROBE = Path(__file__).resolve().parent / "_loops_probe.py"


def probe(tree: Path, corpus: Path, docs: int, repeats: int) -> dict[str, float]:
    """Run the probe with ``tree``'s package first on the path; its seconds per job."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run(
        [sys.executable, str(PROBE), str(corpus), str(docs), str(repeats)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    seconds: dict[str, float] = json.loads(done.stdout.splitlines()[-1])
    return seconds


def revision(tree: Path) -> str:
    """The commit a checkout is at."""
    return subprocess.run(
        ["git", "-C", str(tree), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", nargs="?", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--baseline", type=Path, required=True, help="a checkout to compare")
    parser.add_argument("--docs", type=int, default=300_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    runs: dict[str, list[dict[str, float]]] = {"this": [], "baseline": []}
    for round_ in range(args.rounds):
        for label, tree in (("baseline", args.baseline.resolve()), ("this", ROOT)):
            print(f"round {round_ + 1}/{args.rounds}: {label}", flush=True)
            runs[label].append(probe(tree, args.corpus, args.docs, args.repeats))
    table = []
    for job in runs["this"][0]:
        this = min(run[job] for run in runs["this"])
        baseline = min(run[job] for run in runs["baseline"])
        table.append(
            {
                "job": job,
                "this_s": round(this, 4),
                "baseline_s": round(baseline, 4),
                "this_over_baseline": round(this / baseline, 2),
            }
        )
    print_table(table, list(table[0]))
    path = write_json(
        "loops_cpu.json",
        {
            "corpus": str(args.corpus),
            "docs": args.docs,
            "repeats": args.repeats,
            "rounds": args.rounds,
            "this_revision": revision(ROOT),
            "baseline": {"tree": str(args.baseline), "revision": revision(args.baseline)},
            "timing": "warm (one call first), best of the repeats and the rounds; each round "
            "runs the baseline then this checkout, in fresh processes",
            "table": table,
            "runs": runs,
        },
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

"""What the command's report costs: ``gpusimhash dedup`` with and without it, time and memory.

Each round runs the command in a fresh process on the corpus's first ``--docs`` lines, as one
JSONL file and as one plain-text file, at the defaults (the candidates from the features), with
its report (the default) and with ``--no-report``, in turns; with ``--baseline TREE``, the same runs of another checkout
(its compiled loops built: ``python -c "import hatch_build; hatch_build.build_loops('.')"`` in
it) follow, with that tree first on ``PYTHONPATH``. Records each run's wall seconds (the whole
process: imports, reading, writing) and its peak resident memory; the table gives the best of
the rounds. Prints it and writes bench/results/report_cpu.json.

    python bench/bench_report.py [CORPUS] [--docs 200000] [--rounds 3] [--baseline TREE]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DEFAULT_CORPUS, load_lines, print_table, write_json

RUNS = {"with report": [], "--no-report": ["--no-report"]}


def run_command(corpus: Path, out: Path, flags: list[str], tree: Path | None) -> dict[str, float]:
    """Run ``gpusimhash dedup`` in a fresh process; its wall seconds and peak memory (GiB)."""
    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tree), env.get("PYTHONPATH")]))
    command = [sys.executable, "-m", "gpusimhash", "dedup", str(corpus), "--out", str(out)]
    with tempfile.TemporaryFile() as errors:  # a file, not a pipe: it never fills and blocks
        start = time.perf_counter()
        process = subprocess.Popen(
            [*command, "--overwrite", "-q", *flags],
            env=env,
            cwd=out.parent,  # not a checkout: the package comes from the environment or the tree
            stdout=subprocess.DEVNULL,
            stderr=errors,
        )
        _, status, usage = os.wait4(process.pid, 0)  # this child's own peak memory
        seconds = time.perf_counter() - start
        process.returncode = os.waitstatus_to_exitcode(status)
        if process.returncode:
            errors.seek(0)
            raise RuntimeError(f"{command} failed: {errors.read().decode()}")
    return {"seconds": seconds, "peak_gib": usage.ru_maxrss / 2**20}  # ru_maxrss: KiB


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", nargs="?", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--docs", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--baseline", type=Path, help="another checkout, its loops built")
    args = parser.parse_args()
    lines = load_lines(args.corpus, args.docs)
    trees = {"this tree": None} | ({"baseline": args.baseline.resolve()} if args.baseline else {})
    runs: dict[str, list[dict[str, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="gpusimhash-report-") as scratch:
        inputs = {"JSONL": Path(scratch) / "corpus.jsonl", "text": Path(scratch) / "corpus.txt"}
        inputs["JSONL"].write_text("".join(json.dumps({"text": line}) + "\n" for line in lines))
        inputs["text"].write_text("".join(line + "\n" for line in lines))
        for _ in range(args.rounds):
            for tree_name, tree in trees.items():
                for input_name, corpus in inputs.items():
                    for run_name, flags in RUNS.items():
                        out = Path(scratch) / "out"
                        found = run_command(corpus, out, flags, tree)
                        name = f"{tree_name}, {input_name}, {run_name}"
                        runs.setdefault(name, []).append(found)
                        print(name, found, flush=True)
    table = [
        {
            "run": name,
            "seconds": round(min(r["seconds"] for r in found), 2),
            "peak GiB": round(min(r["peak_gib"] for r in found), 2),
        }
        for name, found in runs.items()
    ]
    print_table(table, list(table[0]))
    path = write_json(
        "report_cpu.json",
        {
            "corpus": str(args.corpus),
            "docs": len(lines),
            "rounds": args.rounds,
            "baseline": str(args.baseline) if args.baseline else None,
            "runs": runs,
            "table": table,
        },
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

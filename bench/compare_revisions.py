"""Run one bench script at two revisions of the project, in turns, on the same machine.

A change that must keep the speed (a re-housing, a refactor) is measured against the revision
before it side by side: each round runs the script once in a clean checkout of the base revision
(``git worktree``, its own package, compiled loops and Numba cache) and once in this checkout,
alternating, so that machine load falls on both. The script's own JSON result of every run is collected into
one file, with each row's figure at both revisions.

    python bench/compare_revisions.py --base c49a79e --result join_cpu.json \\
        --output rehousing_join.json -- bench/bench_join.py --settings pypi:64:3

``--result`` names the file the script writes under its checkout's bench/results/; it is read
back after every run (and this checkout's copy restored at the end). Give the script its corpus
path: the base checkout lives in a temporary folder. Writes bench/results/<--output>.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, write_json


def worktree(revision: str, folder: Path) -> Path:
    """Check the revision out into a fresh worktree (detached), its loops compiled; return it.

    The compiled loops are built in place by the revision's own build hook (`hatch_build`),
    so that the base runs its own loops, not this checkout's.
    """
    subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(folder), revision],
        check=True,
        capture_output=True,
    )
    build = "import pathlib, hatch_build; hatch_build.build_loops(pathlib.Path.cwd())"
    built = subprocess.run(
        [sys.executable, "-c", build], cwd=folder, capture_output=True, text=True, check=False
    )
    if built.returncode:  # hatch_build imports hatchling and Cython: install them here
        raise SystemExit(
            f"building the compiled loops of {revision} failed:\n{built.stderr[-2000:]}"
        )
    return folder


def run_once(tree: Path, script: list[str], result: str) -> dict:
    """Run the bench script in a checkout, its package first on the path; return its JSON."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    subprocess.run([sys.executable, *script], cwd=tree, env=env, check=True)
    return json.loads((tree / "bench" / "results" / result).read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="the revision compared with this checkout")
    parser.add_argument("--result", required=True, help="the JSON the script writes")
    parser.add_argument("--output", required=True, help="file under bench/results/")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("script", nargs=argparse.REMAINDER, help="-- SCRIPT [ARGS...]")
    args = parser.parse_args()
    script = args.script[1:] if args.script[:1] == ["--"] else args.script
    base_revision = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", args.base], capture_output=True, text=True, check=True
    ).stdout.strip()
    head_revision = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    runs: dict[str, list[dict]] = {"base": [], "head": []}
    ours = ROOT / "bench" / "results" / args.result
    kept = ours.read_bytes() if ours.exists() else None  # this checkout's file, restored after
    with tempfile.TemporaryDirectory(prefix="gpusimhash-base-") as scratch:
        base = worktree(base_revision, Path(scratch) / "base")
        try:
            for round_ in range(args.rounds):
                for label, tree in (("base", base), ("head", ROOT)):
                    print(f"round {round_ + 1}/{args.rounds}: {label}", flush=True)
                    runs[label].append(run_once(tree, script, args.result))
        finally:
            if kept is None:
                ours.unlink(missing_ok=True)
            else:
                ours.write_bytes(kept)
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base)],
                check=False,
                capture_output=True,
            )
    path = write_json(
        args.output,
        {
            "script": script,
            "base": base_revision,
            "head": head_revision,
            "rounds": args.rounds,
            "runs": runs,
        },
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

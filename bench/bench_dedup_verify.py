"""What verification costs and changes in dedup: old defaults, no verification, verified, side by side.

Runs `dedup_file` (the CLI's pipeline, CPU) on the first ``--docs`` lines of the corpus for five
settings in one run: the old defaults (128 bits, estimated cosine 0.9, connected components),
256 bits without verification at estimated cosine 0.8, the new defaults (verified exact cosine
0.8, candidate recall 0.99, star clusters), the same with candidate recall 0.5 (the estimate's
radius), and verified cosine 0.9. Records stage timings, removals, the largest cluster and the
removed documents below the threshold against their kept one.

    python bench/bench_dedup_verify.py [CORPUS] [--docs 100000] [--settings 1 3]

``--docs 0`` reads the whole corpus; ``--settings`` picks settings by number (0 to 4). Writes
``bench/results/dedup_verify_cpu.json`` (``dedup_verify_cpu_<docs>.json`` for other sizes).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DEFAULT_CORPUS, load_lines, print_table, write_json

from gpusimhash.dedup.pipeline import dedup_file

SETTINGS = {
    "old defaults: 128 bits, estimated cosine 0.9, components": {
        "bits": 128,
        "verify": False,
        "cluster": "components",
        "min_cosine": 0.9,
    },
    "256 bits, estimated cosine 0.8, components": {
        "bits": 256,
        "verify": False,
        "cluster": "components",
        "min_cosine": 0.8,
    },
    "new defaults: 256 bits, verified cosine 0.8, stars": {"bits": 256},
    "verified cosine 0.8, candidate recall 0.5": {"bits": 256, "candidate_recall": 0.5},
    "verified cosine 0.9": {"bits": 256, "min_cosine": 0.9},
}
RESULTS = (
    "removed",
    "largest_cluster",
    "removed_below_threshold",
    "lowest_similarity_to_kept",
    "candidate_pairs",
    "near_duplicate_pairs",
    "featureless_documents",
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", nargs="?", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--docs", type=int, default=100_000, help="first lines read (0: all)")
    parser.add_argument(
        "--settings", type=int, nargs="+", default=list(range(len(SETTINGS))), help="by number"
    )
    args = parser.parse_args()
    lines = load_lines(args.corpus, args.docs or None)
    chosen = [list(SETTINGS.items())[k] for k in args.settings]
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "corpus.txt"
        path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        dedup_file(path, Path(folder) / "warmup", bits=64, device="cpu", max_distance=0)
        for k, (name, options) in enumerate(chosen):
            begin = time.perf_counter()
            result = dedup_file(path, Path(folder) / str(k), device="cpu", **options)
            seconds = time.perf_counter() - begin
            summary = result.summary
            rows.append(
                {
                    "setting": name,
                    "radius": summary["settings"]["max_distance"],
                    "seconds": round(seconds, 2),
                    "join_s": summary["timings_s"]["join"],
                    "verify_s": summary["timings_s"]["verify"],
                    **{key: summary["results"][key] for key in RESULTS},
                }
            )
    print_table(
        rows,
        [
            "setting",
            "radius",
            "seconds",
            "join_s",
            "verify_s",
            "removed",
            "largest_cluster",
            "removed_below_threshold",
        ],
    )
    name = (
        "dedup_verify_cpu.json" if args.docs == 100_000 else f"dedup_verify_cpu_{len(lines)}.json"
    )
    write_json(name, {"docs": len(lines), "results": rows})


if __name__ == "__main__":
    main()

"""The distributed clustering stage: the whole candidate graph in one task, or split by components.

`gpusimhash.distributed._cluster_stage.ONE_GROUP_WORK` decides which: a graph of at most that
many candidate pairs plus documents sharing a code is clustered by one task (while its
documents' features stay within ``ONE_GROUP_BYTES``, which 800,000 summaries are far below), a
larger one by connected components over node shards (a dozen stages that wait on each other). On the
corpus's first ``--docs`` lines in ``--parts`` JSONL partitions at the defaults, on 2 local
worker processes of one core each (`local_cluster`), after a warm-up: each round runs the dedup
with the bound set so that the graph takes each path in turn; the table gives the medians of
the cluster stage and of the whole run, and whether both paths wrote the same bytes.

    python bench/bench_cluster_stage.py [CORPUS] [--docs 800000] [--parts 16] [--rounds 3]

Writes bench/results/cluster_stage_cpu.json.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DEFAULT_CORPUS, load_lines, print_table, write_json
from bench_distributed import write_lines

from gpusimhash.distributed import _cluster_stage, dedup, local_cluster

# the bound each path needs: every graph fits the first, none the second
PATHS = {"whole graph": 1 << 62, "components": 0}


def _outputs(out: Path) -> bytes:
    """The kept parts and the duplicates report, as bytes."""
    kept = b"".join(p.read_bytes() for p in sorted((out / "kept").iterdir()))
    return kept + (out / "duplicates.jsonl").read_bytes()


def main() -> None:
    from dask.distributed import Client

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", nargs="?", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--docs", type=int, default=800_000)
    parser.add_argument("--parts", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        lines = load_lines(args.corpus, args.docs)
        folder = write_lines(Path(tmp) / "corpus", lines, args.parts)
        warm = write_lines(Path(tmp) / "warm", lines[:2000], 2)
        with local_cluster(2, 1, dashboard_address=":0") as cluster, Client(cluster) as client:
            dedup(warm / "parts", Path(tmp) / "out-warm", client=client, driver_input_bytes=-1)
            for round_ in range(args.rounds):
                for name, bound in PATHS.items():
                    _cluster_stage.ONE_GROUP_WORK = bound
                    out = Path(tmp) / f"out-{round_}-{name.replace(' ', '-')}"
                    start = time.perf_counter()
                    result = dedup(folder / "parts", out, client=client, driver_input_bytes=-1)
                    seconds = time.perf_counter() - start
                    summary = result.summary
                    runs.append(
                        {
                            "path": name,
                            "round": round_,
                            "seconds": round(seconds, 3),
                            "timings_s": summary["timings_s"],
                            "candidate_code_pairs": summary["results"]["candidate_code_pairs"],
                            "components": summary["distributed"]["components"],
                            "cluster_groups": summary["distributed"]["cluster_groups"],
                            "outputs": _outputs(out),
                        }
                    )
                    print(name, runs[-1]["seconds"], summary["timings_s"]["cluster"], flush=True)
    same = len({r.pop("outputs") for r in runs}) == 1
    table = [
        {
            "path": name,
            "candidate pairs": runs[0]["candidate_code_pairs"],
            "cluster stage s": round(
                float(np.median([r["timings_s"]["cluster"] for r in runs if r["path"] == name])),
                2,
            ),
            "whole run s": round(
                float(np.median([r["seconds"] for r in runs if r["path"] == name])), 2
            ),
            "same outputs": same,
        }
        for name in PATHS
    ]
    print_table(table, list(table[0]))
    path = write_json(
        "cluster_stage_cpu.json",
        {
            "corpus": str(args.corpus),
            "docs": args.docs,
            "parts": args.parts,
            "rounds": args.rounds,
            "workers": "2 local worker processes of one core each",
            "runs": runs,
            "table": table,
        },
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

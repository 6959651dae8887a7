"""What annotate, truth_field and report.md cost on a cluster, and that they match one machine.

Generates ``--docs`` synthetic documents (`gpusimhash.datasets.synth`, default spec, seed 1,
with their ground-truth group) into ``--parts`` JSONL partitions and one file, starts a local
cluster of 2 worker processes (`gpusimhash.distributed.local_cluster`, one thread each), and
runs `gpusimhash.distributed.dedup` (128 bits, radius 3) plain, with each option and with all
three, after a warm-up run; then `dedup_file` with the same options on the one file (both
cores); ``--repeat N`` runs all of it N times, in turns, and compares the medians. Records
each wall time, the time an option adds to the plain distributed run, and whether the outputs
match: the kept or annotated parts concatenated byte for byte, the
duplicates file, the removal scores, and ``report.md`` (every section but Settings, Results,
Files and the ground truth's, which show each run's own summary) with its three plots.

    flock /work/scratch/bench.lock python bench/bench_distributed_options.py [--docs 200000]

The documents have an ``id`` field, read as their ids; with ``--ids rows`` they have none, and
their ids are their rows, which the driver knows without reading a partition again.

Writes ``bench/results/distributed_options.json`` (``distributed_options_rows.json`` with
``--ids rows``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import print_table, write_json

from gpusimhash._output_names import PLOTS
from gpusimhash.datasets.synth import CorpusSpec, generate
from gpusimhash.dedup.pipeline import dedup_file
from gpusimhash.distributed import dedup, local_cluster

SETTINGS = {"bits": 128, "max_distance": 3}
OPTIONS = {
    "plain": {},
    "annotate": {"annotate": True},
    "truth_field": {"truth_field": "group"},
    "report": {"report": True},
    "all three": {"annotate": True, "truth_field": "group", "report": True},
}
OWN_SECTIONS = ("Settings", "Results", "Files", "Against the ground truth")


def write_corpus(folder: Path, n_docs: int, n_parts: int, with_ids: bool) -> None:
    """Write the corpus as ``n_parts`` JSONL files under ``parts/`` and as ``all.jsonl``.

    Each record has its text and group, and, ``with_ids``, an ``id`` field.
    """
    lines = [
        json.dumps(
            {"id": d.id, "text": d.text, "group": d.group}
            if with_ids
            else {"text": d.text, "group": d.group}
        )
        + "\n"
        for d in generate(CorpusSpec(n_docs=n_docs, seed=1))
    ]
    (folder / "parts").mkdir()
    (folder / "all.jsonl").write_text("".join(lines))
    for p in range(n_parts):
        part = lines[n_docs * p // n_parts : n_docs * (p + 1) // n_parts]
        (folder / "parts" / f"part-{p:03d}.jsonl").write_text("".join(part))


def sections(report: Path) -> list[str]:
    """The sections of a report that do not show the run's own summary."""
    return [s for s in report.read_text().split("\n## ")[1:] if not s.startswith(OWN_SECTIONS)]


def same_outputs(ours: Path, theirs: Path, options: dict) -> bool:
    """Whether a distributed run wrote what the single machine wrote."""
    name = "annotated" if options.get("annotate") else "kept"
    parts = b"".join(p.read_bytes() for p in sorted((ours / name).iterdir()))
    same = parts == (theirs / f"{name}.jsonl").read_bytes()
    same &= (ours / "duplicates.jsonl").read_bytes() == (theirs / "duplicates.jsonl").read_bytes()
    if options.get("truth_field"):
        truth = json.loads((ours / "summary.json").read_text())["ground_truth"]
        expected = json.loads((theirs / "summary.json").read_text())["ground_truth"]
        same &= truth == {k: expected[k] for k in truth}
    if options.get("report"):
        same &= sections(ours / "report.md") == sections(theirs / "report.md")
        same &= all((ours / n).read_bytes() == (theirs / n).read_bytes() for n in PLOTS.values())
    return bool(same)


def main() -> None:
    """Run the bench."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--docs", type=int, default=200_000)
    parser.add_argument("--parts", type=int, default=8)
    parser.add_argument("--ids", choices=("field", "rows"), default="field")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    settings = SETTINGS | ({"id_field": "id"} if args.ids == "field" else {})
    load = os.getloadavg()
    times: dict[str, dict[str, list[float]]] = {
        label: {"distributed_s": [], "one_machine_s": []} for label in OPTIONS
    }
    same: dict[str, bool] = dict.fromkeys(OPTIONS, True)
    with tempfile.TemporaryDirectory(prefix="gpusimhash-bench-") as scratch:
        root = Path(scratch)
        write_corpus(root, args.docs, args.parts, with_ids=args.ids == "field")
        with local_cluster(2, threads=1, dashboard_address=":0") as cluster:
            from dask.distributed import Client

            with Client(cluster) as client:
                # the stages on the workers, whatever the input's size (not the driver)
                on_workers = {"client": client, "driver_input_bytes": -1}
                dedup(root / "parts", root / "warm-up", **on_workers, **settings, report=True)
                for _ in range(args.repeat):
                    for label, options in OPTIONS.items():
                        start = time.perf_counter()
                        dedup(root / "parts", root / label, **on_workers, **settings, **options)
                        times[label]["distributed_s"].append(time.perf_counter() - start)
                        start = time.perf_counter()
                        dedup_file(root / "all.jsonl", root / f"one-{label}", **settings, **options)
                        times[label]["one_machine_s"].append(time.perf_counter() - start)
                        same[label] &= same_outputs(root / label, root / f"one-{label}", options)
    rows = [
        {
            "options": label,
            **{name: round(float(np.median(runs)), 2) for name, runs in measured.items()},
            **{f"{name}_runs": [round(t, 2) for t in runs] for name, runs in measured.items()},
            "identical": same[label],
        }
        for label, measured in times.items()
    ]
    plain = rows[0]["distributed_s"]
    for row in rows:
        row["added_s"] = round(row["distributed_s"] - plain, 2)
    print(
        f"{args.docs:,} documents ({args.ids} ids), {args.parts} partitions, 2 workers, "
        f"medians of {args.repeat}; load average {load}"
    )
    print_table(rows, ["options", "distributed_s", "added_s", "one_machine_s", "identical"])
    path = write_json(
        "distributed_options.json" if args.ids == "field" else "distributed_options_rows.json",
        {
            "docs": args.docs,
            "parts": args.parts,
            "workers": 2,
            "ids": args.ids,
            "repeat": args.repeat,
            "settings": settings,
            "load_average_before": load,
            "runs": rows,
        },
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

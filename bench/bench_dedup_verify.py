"""What verification costs and changes in dedup: settings without and with verification, side by side.

Runs `dedup_file` (the CLI's pipeline, CPU) on the first ``--docs`` lines of the corpus for five
settings in one run: 128 bits without verification at estimated cosine 0.9 with connected
components, 256 bits without verification at estimated cosine 0.8, the defaults (verified
exact cosine 0.8, candidate recall 0.99, star clusters), the same with candidate recall 0.5
(the estimate's radius), and verified cosine 0.9. Records stage timings, removals, the largest cluster and the
removed documents below the threshold against their kept one.

    python bench/bench_dedup_verify.py [CORPUS] [--docs 100000] [--settings 1 3]
    python bench/bench_dedup_verify.py --synthetic 1000000 3000000 [--repeats 2]

``--docs 0`` reads the whole corpus; ``--settings`` picks settings by number (0 to 4). Writes
``bench/results/dedup_verify_cpu.json`` (``dedup_verify_cpu_<docs>.json`` for other sizes, or
the name ``--result`` gives).

``--synthetic N ...`` instead runs the CLI (``python -m gpusimhash dedup``, one process per run)
on the first N documents of the generator's default corpus (``gpusimhash.datasets.synth``, one
JSONL line each) at 64 bits and radius 3, verified (star clusters) and not (components, and
star clusters: the time verification adds to the same clustering), and
on its first 1,000 documents for the floor; each process reports its own peak resident memory
(``getrusage``), so bytes per document are ``(peak - floor) / (N - 1000)``. Writes
``bench/results/dedup_verify_synth.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DEFAULT_CORPUS, load_lines, print_table, run_command_line, write_json

from gpusimhash.datasets.synth import CorpusSpec, generate
from gpusimhash.dedup.pipeline import dedup_file

SETTINGS = {
    "128 bits, estimated cosine 0.9, components": {
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
    "defaults: 256 bits, verified cosine 0.8, stars": {"bits": 256},
    "verified cosine 0.8, candidate recall 0.5": {"bits": 256, "candidate_recall": 0.5},
    "verified cosine 0.9": {"bits": 256, "min_cosine": 0.9},
    "verified cosine 0.8, candidates from the codes (radius of recall 0.99)": {
        "bits": 256,
        "candidates": "codes",
    },
}
SYNTHETIC = {
    "64 bits radius 3, verified cosine 0.8, stars": ["--bits", "64", "--max-distance", "3"],
    "64 bits radius 3, not verified, components": [
        *("--bits", "64", "--max-distance", "3", "--no-verify", "--cluster", "components")
    ],
    "64 bits radius 3, not verified, stars": ["--bits", "64", "--max-distance", "3", "--no-verify"],
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


def write_synthetic(path: Path, n: int) -> None:
    """Write the first ``n`` documents of the default synthetic corpus as JSONL."""
    with open(path, "w", encoding="utf-8") as handle:
        handle.writelines(
            json.dumps({"id": doc.id, "text": doc.text}) + "\n"
            for doc in generate(CorpusSpec(n_docs=n))
        )


def run_cli(path: Path, out: Path, options: list[str]) -> tuple[float, int, dict]:
    """Run ``dedup`` in a fresh process: wall seconds, peak resident KiB, the summary."""
    arguments = ["dedup", str(path), "--out", str(out)]
    arguments += [*options, "--force", "--no-report", "-q", "--json"]
    seconds, peak, summary = run_command_line(arguments)
    return seconds, peak, json.loads(summary)


def synthetic(sizes: list[int], repeats: int, result: str | None = None) -> None:
    """Time and peak memory of verified and unverified dedup on synthetic corpora.

    Each setting runs ``repeats`` times, the settings taking turns; a row keeps the fastest run's
    times and the highest peak of all its runs.
    """
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        floor_path = Path(folder) / "floor.jsonl"
        write_synthetic(floor_path, 1000)
        for n in sizes:
            path = Path(folder) / f"synth{n}.jsonl"
            write_synthetic(path, n)
            runs: dict[str, list[tuple[float, int, dict]]] = {name: [] for name in SYNTHETIC}
            floors = {}
            for r in range(repeats):
                for k, (name, options) in enumerate(SYNTHETIC.items()):
                    if name not in floors:
                        floors[name] = run_cli(floor_path, Path(folder) / f"fl{n}-{k}", options)[1]
                    out = Path(folder) / f"out{n}-{k}-{r}"
                    runs[name].append(run_cli(path, out, options))
                    shutil.rmtree(out)
                    print(name, f"{runs[name][-1][0]:.1f} s", flush=True)
            for name, done in runs.items():
                seconds, _, summary = min(done, key=lambda run: run[0])
                peak = max(run[1] for run in done)
                results, timings = summary["results"], summary["timings_s"]
                rows.append(
                    {
                        "docs": n,
                        "setting": name,
                        "seconds": round(seconds, 1),
                        "every_run_s": [round(run[0], 1) for run in done],
                        "fingerprint_s": timings["fingerprint"],
                        "join_s": timings["join"],
                        "verify_s": timings["verify"],
                        "write_s": timings["write"],
                        "peak_kib": peak,
                        "floor_kib": floors[name],
                        "bytes_per_doc": round((peak - floors[name]) * 1024 / (n - 1000)),
                        "estimated_candidate_pairs": summary["settings"][
                            "estimated_candidate_pairs"
                        ],
                        "candidate_code_pairs": results["candidate_code_pairs"],
                        "pairs_verified": results["pairs_verified"],
                        "load_average": os.getloadavg()[0],
                        **{key: results[key] for key in RESULTS},
                    }
                )
                print(rows[-1], flush=True)
    print_table(
        rows,
        [
            "docs",
            "setting",
            "seconds",
            "join_s",
            "verify_s",
            "bytes_per_doc",
            "candidate_code_pairs",
            "pairs_verified",
            "removed",
        ],
    )
    verified = [r for r in rows if "not verified" not in r["setting"]]
    for row in verified:
        for other in rows:
            if other["docs"] == row["docs"] and "not verified" in other["setting"]:
                ratio = row["seconds"] / other["seconds"]
                print(f"{row['docs']:,} documents: verified / {other['setting']}: {ratio:.2f}")
    write_json(result or "dedup_verify_synth.json", {"results": rows})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", nargs="?", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--docs", type=int, default=100_000, help="first lines read (0: all)")
    parser.add_argument(
        "--settings", type=int, nargs="+", default=list(range(len(SETTINGS))), help="by number"
    )
    parser.add_argument(
        "--repeats", type=int, default=1, help="runs of each synthetic setting (fastest kept)"
    )
    parser.add_argument(
        "--result",
        help="result file under bench/results/ (default by --docs; synthetic: dedup_verify_synth.json)",
    )
    parser.add_argument(
        "--synthetic", type=int, nargs="+", help="synthetic corpora of these sizes, via the CLI"
    )
    args = parser.parse_args()
    if args.synthetic:
        synthetic(args.synthetic, args.repeats, args.result)
        return
    lines = load_lines(args.corpus, args.docs or None)
    chosen = [list(SETTINGS.items())[k] for k in args.settings]
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "corpus.txt"
        path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        small = Path(folder) / "small.txt"
        small.write_text("".join(line + "\n" for line in lines[:3000]), encoding="utf-8")
        dedup_file(path, Path(folder) / "warmup", bits=64, device="cpu", max_distance=0)
        for k, (_, options) in enumerate(chosen):  # compiles every loop a setting uses
            dedup_file(small, Path(folder) / f"warmup{k}", device="cpu", **options)
        for k, (name, options) in enumerate(chosen):
            begin = time.perf_counter()
            result = dedup_file(path, Path(folder) / str(k), device="cpu", **options)
            seconds = time.perf_counter() - begin
            summary = result.summary
            rows.append(
                {
                    "setting": name,
                    "candidates": summary["settings"]["candidates"],
                    "radius": summary["settings"]["max_distance"],
                    "seconds": round(seconds, 2),
                    "join_s": summary["timings_s"]["join"],
                    "verify_s": summary["timings_s"]["verify"],
                    "pairs_verified": summary["results"]["pairs_verified"],
                    "load_average": os.getloadavg()[0],
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
    name = args.result or (
        "dedup_verify_cpu.json" if args.docs == 100_000 else f"dedup_verify_cpu_{len(lines)}.json"
    )
    write_json(name, {"docs": len(lines), "results": rows})


if __name__ == "__main__":
    main()

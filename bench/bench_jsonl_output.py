"""dedup on JSONL input: kept records written back as their lines, against parsed and re-encoded.

``dedup_file`` runs on the first ``--docs`` lines of the corpus as a JSONL file of
``{"id": k, "text": line}`` records (written as ``gpusimhash``'s writer encodes a record,
``json.dumps`` with ``ensure_ascii=False``, so that both ways give the same bytes), at the
defaults, two ways in turn:

- ``lines``: the default, whose second pass writes each kept record's line as it was read and
  parses only the records whose id or text it needs;
- ``records``: with ``skip_invalid=True``, whose second pass reads every record whole (parsed,
  as skipping needs) and writes the kept ones again with ``json.dumps``: what the second pass
  did for every JSONL input before.

Each runs once as a warm-up, then ``--repeats`` times, interleaved; the best wall seconds of
the run and of its write stage are compared, and the kept files are checked byte-identical.

    python bench/bench_jsonl_output.py [CORPUS] [--docs 200000] [--repeats 3]

Writes ``bench/results/jsonl_output_cpu.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DEFAULT_CORPUS, load_lines, print_table, write_json

from gpusimhash.dedup.pipeline import dedup_file

WAYS = {"lines": {}, "records": {"skip_invalid": True}}


def _run_both(work: Path, args: argparse.Namespace) -> tuple[dict[str, list[dict]], dict]:
    """Write the JSONL file, run both ways interleaved; return the timed runs and kept files."""
    source = work / "docs.jsonl"
    lines = load_lines(args.corpus, args.docs)
    records = (json.dumps({"id": k, "text": t}, ensure_ascii=False) for k, t in enumerate(lines))
    source.write_text("".join(record + "\n" for record in records), encoding="utf-8")
    runs: dict[str, list[dict]] = {way: [] for way in WAYS}
    for repeat in range(args.repeats + 1):  # the first round warms up
        for way, options in WAYS.items():
            start = time.perf_counter()
            result = dedup_file(source, work / way, report=False, **options)
            seconds = time.perf_counter() - start
            if repeat:
                runs[way].append(
                    {
                        "seconds": round(seconds, 3),
                        "timings_s": result.summary["timings_s"],
                        "kept": result.summary["results"]["kept"],
                    }
                )
    return runs, {way: (work / way / "kept.jsonl").read_bytes() for way in WAYS}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("corpus", nargs="?", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--docs", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="gpusimhash-jsonl-") as folder:
        runs, kept = _run_both(Path(folder), args)
    if kept["lines"] != kept["records"]:
        raise AssertionError("the two ways wrote different kept files")
    best = {
        way: {
            "seconds": min(r["seconds"] for r in rows),
            "write_s": min(r["timings_s"]["write"] for r in rows),
        }
        for way, rows in runs.items()
    }
    table = [
        {
            "way": way,
            "seconds (best)": best[way]["seconds"],
            "write stage (best)": best[way]["write_s"],
            "seconds vs records": round(best["records"]["seconds"] / best[way]["seconds"], 2),
            "write vs records": round(best["records"]["write_s"] / best[way]["write_s"], 2),
        }
        for way in WAYS
    ]
    print_table(table, list(table[0]))
    path = write_json(
        "jsonl_output_cpu.json",
        {
            "corpus": str(args.corpus),
            "documents": args.docs,
            "repeats": args.repeats,
            "ways": {way: str(options or "defaults") for way, options in WAYS.items()},
            "kept_files_identical": True,
            "kept_records": runs["lines"][0]["kept"],
            "table": table,
            "runs": runs,
            "shared_machine": "2 cores shared with other jobs; the ways interleaved",
        },
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

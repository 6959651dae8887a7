"""JSONL records parsed by `json.loads` against `gpusimhash.io._json.loads` (orjson where it agrees).

The corpus's first ``--docs`` lines are written as ``{"id": n, "text": line}`` records (one JSONL
file in a temporary folder). Each row runs both parsers in turn, best of ``--repeats``:

- ``parse``: every record's line parsed alone (and the values checked equal);
- ``read``: `read_batches` over the file, every record's id and text (the reader's whole pass);
- ``dedup``: `dedup_file` on the file at the defaults, in this process, every core (the kept
  file and the duplicates report checked byte-identical).

    python bench/bench_json.py [CORPUS] [--docs 200000] [--repeats 3]

Writes ``bench/results/json_cpu.json``.
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
from gpusimhash.io import readers
from gpusimhash.io._json import loads

PARSERS = {"json.loads": json.loads, "ours": loads}


def _outputs(folder: Path) -> bytes:
    """The kept documents and the duplicates report a dedup wrote, as bytes."""
    return (folder / "kept.jsonl").read_bytes() + (folder / "duplicates.jsonl").read_bytes()


def _timed(run) -> float:
    """Wall seconds of ``run()``."""
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", nargs="?", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--docs", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    lines = [
        json.dumps({"id": n, "text": t}) for n, t in enumerate(load_lines(args.corpus, args.docs))
    ]
    best = {(task, name): float("inf") for task in ("parse", "read", "dedup") for name in PARSERS}
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "docs.jsonl"
        path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        values, outputs = {}, {}
        for r in range(args.repeats):
            for name, parse in PARSERS.items():
                start = time.perf_counter()
                values[name] = [parse(line) for line in lines]
                best["parse", name] = min(best["parse", name], time.perf_counter() - start)
                readers.loads = parse
                try:
                    seconds = _timed(
                        lambda: [b.ids for b in readers.read_batches(path, id_field="id")]
                    )
                    best["read", name] = min(best["read", name], seconds)
                    out = Path(scratch) / f"out-{name}-{r}"
                    seconds = _timed(lambda out=out: dedup_file(path, out, id_field="id"))
                    best["dedup", name] = min(best["dedup", name], seconds)
                    outputs[name] = _outputs(out)
                finally:
                    readers.loads = loads
    same_values = values["json.loads"] == values["ours"]
    same_outputs = outputs["json.loads"] == outputs["ours"]
    rows = [
        {
            "task": task,
            "json.loads s": round(best[task, "json.loads"], 3),
            "ours s": round(best[task, "ours"], 3),
            "speedup": round(best[task, "json.loads"] / best[task, "ours"], 2),
        }
        for task in ("parse", "read", "dedup")
    ]
    print_table(rows, list(rows[0]))
    print(f"same values: {same_values}; same dedup outputs: {same_outputs}")
    write_json(
        "json_cpu.json",
        {
            "corpus": str(args.corpus),
            "docs": len(lines),
            "repeats": args.repeats,
            "rows": rows,
            "same_values": same_values,
            "same_dedup_outputs": same_outputs,
            "note": "best of the repeats, both parsers in turn in one process; dedup at the "
            "defaults on every core, compile time not included (warm after the first repeat)",
        },
    )


if __name__ == "__main__":
    main()

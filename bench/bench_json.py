"""JSONL records read by `json.loads`, by orjson where it agrees, and by orjson alone for ids and texts.

The corpus's first ``--docs`` lines are written as ``{"id": n, "text": line}`` records (one JSONL
file in a temporary folder). Three readers, each row best of ``--repeats``, in turn:

- ``json``: every record parsed by `json.loads`;
- ``whole``: every record parsed by `gpusimhash.io._json.loads` (orjson, and `json.loads` where
  orjson refuses a text or cannot keep an integer), whole;
- ``ours``: as `read_batches` reads when it does not keep the records: the id and the text as
  orjson alone reads them from the line's bytes, where they are `json.loads`'s, a block of
  lines at once (`gpusimhash.io._jsonl_blocks.parsed_block`) or line by line
  (`gpusimhash.io.readers`), the rest as ``whole``.

Every reader's lines are split a block at a time, as the readers split them.

Tasks:

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
from gpusimhash.io.fields import TextField

_FIELD = TextField.parse("text")
_QUICK = readers._quick_document  # the reader's own fast paths, measured
_BLOCK = readers.parsed_block
# each reader: how a whole record is parsed, and whether ids and texts are read by orjson alone
READERS = {"json": (json.loads, False), "whole": (loads, False), "ours": (loads, True)}


def _parser(name: str):
    """Return how ``name`` parses one record's line (its record)."""
    parse, quick = READERS[name]
    if not quick:
        return parse
    return lambda line: (_QUICK(line, _FIELD, "id") or (None, None, parse(line)))[2]


def _not_quick(*_: object) -> None:
    """Read no document by orjson alone (`readers._quick_document`, `parsed_block` switched off)."""


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
    best = {(task, name): float("inf") for task in ("parse", "read", "dedup") for name in READERS}
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "docs.jsonl"
        path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        values, outputs = {}, {}
        for r in range(args.repeats):
            for name, (parse, quick) in READERS.items():
                parse_line = _parser(name)
                start = time.perf_counter()
                values[name] = [parse_line(line) for line in lines]
                best["parse", name] = min(best["parse", name], time.perf_counter() - start)
                readers.loads = parse
                readers._quick_document = _QUICK if quick else _not_quick
                readers.parsed_block = _BLOCK if quick else _not_quick
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
                    readers._quick_document = _QUICK
                    readers.parsed_block = _BLOCK
    same_values = values["json"] == values["whole"] == values["ours"]
    same_outputs = outputs["json"] == outputs["whole"] == outputs["ours"]
    rows = [
        {
            "task": task,
            "json_s": round(best[task, "json"], 3),
            "whole_s": round(best[task, "whole"], 3),
            "ours_s": round(best[task, "ours"], 3),
            "ours_vs_json": round(best[task, "json"] / best[task, "ours"], 2),
            "ours_vs_whole": round(best[task, "whole"] / best[task, "ours"], 2),
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
            "note": "best of the repeats, the three readers in turn in one process; dedup at the "
            "defaults on every core, compile time not included (warm after the first repeat)",
        },
    )


if __name__ == "__main__":
    main()

"""The duplicates report written to JSONL: its lines by orjson, against records by `json`.

``dedup_file`` runs once at the defaults on the corpus's first ``--docs`` lines, as plain text
(ids are rows: ints) and as JSONL records with string ids (``"doc-<k>"``). Its duplicates report
is read back as the chunks it was written in (`gpusimhash.dedup.duplicates_chunk`), and written
again two ways in turn, each the best of ``--repeats`` after a warm-up:

- ``records``: every chunk's records encoded by `json` (`RecordWriter.write`);
- ``lines``: `write_chunk`, which spells the lines by orjson where it spells every value as
  `json` does (what one machine and the cluster's driver write).

Both files are checked byte-identical to the dedup's own report.

Then ``dedup_file`` with ``pairs=True`` (the pairs file of every passing pair) runs on both
inputs, ``--pair-repeats`` times each way in turns after a warm-up: its pairs' lines by orjson
where it can (``lines``, `gpusimhash.dedup.outputs.write_pairs`), against every pair encoded
by `json` as a record (``records``: orjson's lines refused, what every pairs file took
before); the whole run's seconds, the pairs files checked byte-identical.

    python bench/bench_duplicates_output.py [CORPUS] [--docs 200000] [--repeats 5]
        [--pair-repeats 2]

Writes ``bench/results/duplicates_output_cpu.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DEFAULT_CORPUS, load_lines, print_table, write_json

from gpusimhash.dedup import outputs
from gpusimhash.dedup.duplicates_chunk import DuplicatesChunk, chunk_spans, write_chunk
from gpusimhash.dedup.pipeline import dedup_file
from gpusimhash.io.writers import RecordWriter


def _inputs(folder: Path, lines: list[str]) -> dict[str, Path]:
    """Write the documents as plain text and as JSONL records with string ids."""
    text = folder / "docs.txt"
    text.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    records = folder / "docs.jsonl"
    encoded = (
        json.dumps({"id": f"doc-{k}", "text": t}, ensure_ascii=False) for k, t in enumerate(lines)
    )
    records.write_text("".join(r + "\n" for r in encoded), encoding="utf-8")
    return {"int ids": text, "string ids": records}


def _chunks(report: Path) -> list[DuplicatesChunk]:
    """Read a duplicates report back as the chunks it was written in."""
    records = [json.loads(line) for line in report.open(encoding="utf-8")]
    chunks = []
    for lo, hi in chunk_spans(len(records)):
        part = records[lo:hi]
        sizes = [r["size"] for r in part]
        bounds = [0]
        for size in sizes:
            bounds.append(bounds[-1] + size)
        chunks.append(
            DuplicatesChunk(
                first=lo,
                bounds=bounds,
                kept_ids=[r["kept_id"] for r in part],
                kept_rows=[r["kept_row"] for r in part],
                ids=[i for r in part for i in r["ids"]],
                rows=[i for r in part for i in r["rows"]],
                distances=[d for r in part for d in r["distances"]],
                similarities=[s for r in part for s in r["similarities"]],
            )
        )
    return chunks


def _write(path: Path, chunks: list[DuplicatesChunk], way: str) -> float:
    """Write the chunks one way; return the seconds."""
    start = time.perf_counter()
    with RecordWriter(path) as writer:
        for chunk in chunks:
            if way == "records":
                writer.write(chunk.records())
            else:
                write_chunk(writer, chunk)
    return time.perf_counter() - start


def _pairs_both_ways(folder: Path, args: argparse.Namespace) -> tuple[list[dict], dict]:
    """Run dedup with the pairs file both ways on both inputs; return the table and the runs."""
    table, runs = [], {}
    for kind, source in {
        "int ids": folder / "docs.txt",
        "string ids": folder / "docs.jsonl",
    }.items():
        seconds: dict[str, list[float]] = {"records": [], "lines": []}
        written = {}
        for repeat in range(args.pair_repeats + 1):  # the first round warms up
            for way, taken in seconds.items():
                refused = (lambda *_: None) if way == "records" else outputs._pair_lines
                with mock.patch.object(outputs, "_pair_lines", refused):
                    start = time.perf_counter()
                    dedup_file(source, folder / way, report=False, pairs=True)
                    elapsed = time.perf_counter() - start
                if repeat:
                    taken.append(round(elapsed, 3))
                written[way] = (folder / way / "pairs.jsonl").read_bytes()
        if written["lines"] != written["records"]:
            raise AssertionError(f"the two ways wrote other pairs files ({kind})")
        best = {way: min(s) for way, s in seconds.items()}
        runs[kind] = seconds
        table.append(
            {
                "ids": kind,
                "pairs": written["lines"].count(b"\n"),
                "dedup s, records (best)": best["records"],
                "dedup s, lines (best)": best["lines"],
                "lines vs records": round(best["records"] / best["lines"], 2),
            }
        )
    return table, runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("corpus", nargs="?", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--docs", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--pair-repeats", type=int, default=2)
    args = parser.parse_args()
    table, runs = [], {}
    with tempfile.TemporaryDirectory(prefix="gpusimhash-duplicates-") as name:
        folder = Path(name)
        for kind, source in _inputs(folder, load_lines(args.corpus, args.docs)).items():
            result = dedup_file(source, folder / "out", report=False)
            expected = (folder / "out" / "duplicates.jsonl").read_bytes()
            chunks = _chunks(folder / "out" / "duplicates.jsonl")
            seconds: dict[str, list[float]] = {"records": [], "lines": []}
            for repeat in range(args.repeats + 1):  # the first round warms up
                for way, taken in seconds.items():
                    elapsed = _write(folder / f"{way}.jsonl", chunks, way)
                    if repeat:
                        taken.append(round(elapsed, 4))
                    if (folder / f"{way}.jsonl").read_bytes() != expected:
                        raise AssertionError(f"{way} wrote another report ({kind})")
            best = {way: min(s) for way, s in seconds.items()}
            runs[kind] = {"seconds": seconds, "dedup_timings_s": result.summary["timings_s"]}
            table.append(
                {
                    "ids": kind,
                    "clusters": result.summary["results"]["clusters"],
                    "members": sum(len(c.ids) for c in chunks),
                    "records s (best)": best["records"],
                    "lines s (best)": best["lines"],
                    "lines vs records": round(best["records"] / best["lines"], 2),
                    "dedup write stage s": result.summary["timings_s"]["write"],
                }
            )
        pair_table, pair_runs = _pairs_both_ways(folder, args)
    print_table(table, list(table[0]))
    print_table(pair_table, list(pair_table[0]))
    path = write_json(
        "duplicates_output_cpu.json",
        {
            "corpus": str(args.corpus),
            "documents": args.docs,
            "repeats": args.repeats,
            "reports_identical": True,
            "table": table,
            "runs": runs,
            "pairs_table": pair_table,
            "pairs_runs": pair_runs,
            "shared_machine": "2 cores shared with other jobs; the ways interleaved",
        },
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

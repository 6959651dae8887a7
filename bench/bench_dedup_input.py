"""dedup's first pass over a plain-text file: lines as str against lines as UTF-8 bytes, side by side.

Both peers run what `gpusimhash.dedup.pipeline`'s fingerprint stage runs per batch (read,
featurize on the CPU, keep the merged features, fingerprint them, count code points), without
the spill to disk; only the reading differs:

- ``str``: ``read_batches(format="text")`` (one Python string per line);
- ``bytes``: ``io.lines.document_batches`` (`Utf8Texts` blocks, no string per line), what
  ``dedup`` and ``index build/add`` use for plain text.

Each peer also runs reading alone. The peers alternate, best of ``--repeats``; the codes of
both are checked equal. Wall seconds and CPU seconds (``time.process_time``, every thread of the
process) are both recorded: on a shared machine the CPU seconds are the steadier measure.

    python bench/bench_dedup_input.py [CORPUS] [--docs 0] [--bits 256] [--repeats 3]

Writes ``bench/results/dedup_input_cpu.json``.
"""

from __future__ import annotations

import argparse
import gzip
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DEFAULT_CORPUS, print_table, write_json

from gpusimhash.fingerprinting import fingerprint_batch
from gpusimhash.io.lines import document_batches
from gpusimhash.io.readers import read_batches
from gpusimhash.text import TextFeaturizer
from gpusimhash.utf8 import Utf8Texts
from gpusimhash.verify._features import DocumentFeatures


def str_batches(path: Path, batch_size: int) -> Iterator[Any]:
    return read_batches(path, format="text", batch_size=batch_size)


def bytes_batches(path: Path, batch_size: int) -> Iterator[Any]:
    return document_batches(path, format="text", batch_size=batch_size)


def first_pass(batches: Iterator[Any], bits: int) -> np.ndarray:
    """The fingerprint stage's per-batch work (no spill): codes of every document."""
    featurizer = TextFeaturizer()
    codes = []
    for batch in batches:
        first = int(batch.rows[0])
        entries = featurizer.transform(batch.texts, first_index=first)
        DocumentFeatures.from_batch(entries)  # the merged features the pipeline spills
        codes.append(fingerprint_batch(entries, "cpu", bits=bits, seed=0))
        if isinstance(batch.texts, Utf8Texts):
            batch.texts.code_point_counts()
        else:
            np.fromiter(map(len, batch.texts), dtype=np.int64, count=len(batch))
    return np.concatenate(codes)


def read_only(batches: Iterator[Any], bits: int) -> int:
    return sum(len(batch) for batch in batches)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", nargs="?", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--docs", type=int, default=0, help="first lines read (0: all)")
    parser.add_argument("--bits", type=int, default=256)
    parser.add_argument("--batch-size", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "corpus.txt"
        with gzip.open(args.corpus, "rb") as source:
            data = source.read()
        if args.docs:
            data = b"".join(data.splitlines(keepends=True)[: args.docs])
        path.write_bytes(data)
        peers: dict[str, Callable[[Path, int], Iterator[Any]]] = {
            "str": str_batches,
            "bytes": bytes_batches,
        }
        stages: dict[str, Callable[[Iterator[Any], int], Any]] = {
            "read": read_only,
            "first pass": first_pass,
        }
        best: dict[tuple[str, str], float] = {}
        best_cpu: dict[tuple[str, str], float] = {}
        outputs: dict[tuple[str, str], Any] = {}
        first_pass(bytes_batches(path, 1000), args.bits)  # compile, warm the page cache
        for _ in range(args.repeats):
            for stage, work in stages.items():
                for peer, batches in peers.items():
                    start, cpu = time.perf_counter(), time.process_time()
                    outputs[stage, peer] = work(batches(path, args.batch_size), args.bits)
                    seconds = time.perf_counter() - start
                    cpu = time.process_time() - cpu
                    best[stage, peer] = min(best.get((stage, peer), np.inf), seconds)
                    best_cpu[stage, peer] = min(best_cpu.get((stage, peer), np.inf), cpu)
    codes = outputs["first pass", "str"]
    np.testing.assert_array_equal(outputs["first pass", "bytes"], codes)
    n = codes.shape[0]
    rows = []
    for stage in stages:
        for peer in peers:
            seconds = best[stage, peer]
            rows.append(
                {
                    "stage": stage,
                    "reading": peer,
                    "docs": n,
                    "seconds": round(seconds, 3),
                    "docs_per_s": round(n / seconds),
                    "vs_str": round(best[stage, "str"] / seconds, 2),
                    "cpu_seconds": round(best_cpu[stage, peer], 3),
                    "cpu_vs_str": round(best_cpu[stage, "str"] / best_cpu[stage, peer], 2),
                }
            )
    columns = ["stage", "reading", "docs", "seconds", "docs_per_s", "vs_str"]
    print_table(rows, [*columns, "cpu_seconds", "cpu_vs_str"])
    write_json(
        "dedup_input_cpu.json",
        {"docs": n, "bits": args.bits, "bytes": len(data), "results": rows},
    )


if __name__ == "__main__":
    main()

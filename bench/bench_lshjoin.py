"""Approximate (LSH) near-duplicate join against the exact join, on synthetic documents.

Generates a corpus with gpusimhash.datasets.synth, fingerprints it on the CPU, and for each
(bits, radius) setting times the exact join (gpusimhash.near_duplicates) and the approximate one
(gpusimhash.approximate_near_duplicates) at the given recall targets, in one run. Reports
seconds, pairs found and the measured recall against the exact join's pair set (precision is 1
by construction and checked).

    python bench/bench_lshjoin.py [--docs 200000] [--settings 128:18 256:45] [--recalls 0.9 0.99]

Writes bench/results/lshjoin_cpu.json.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import print_table, write_json

from gpusimhash import approximate_near_duplicates, fingerprint, near_duplicates
from gpusimhash.datasets.synth import CorpusSpec, generate


def pair_keys(pairs: np.ndarray, n: int) -> np.ndarray:
    return pairs[:, 0].astype(np.int64) * n + pairs[:, 1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=200_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--settings", nargs="+", default=["128:18", "256:45"], help="bits:radius")
    parser.add_argument("--recalls", nargs="+", type=float, default=[0.9, 0.99])
    args = parser.parse_args()
    spec = CorpusSpec(
        n_docs=args.docs,
        seed=args.seed,
        vocabulary_size=50_000,
        zipf_exponent=0.9,
        min_length=20,
        max_length=80,
    )
    texts = [doc.text for doc in generate(spec)]
    rows = []
    for setting in args.settings:
        bits, radius = (int(v) for v in setting.split(":"))
        codes = fingerprint(texts, bits=bits, device="cpu")
        start = time.perf_counter()
        exact = near_duplicates(codes, max_distance=radius)
        exact_s = time.perf_counter() - start
        exact_keys = pair_keys(exact, len(codes))
        rows.append(
            {
                "bits": bits,
                "radius": radius,
                "method": "exact",
                "target_recall": 1.0,
                "seconds": round(exact_s, 2),
                "pairs": len(exact),
                "recall": 1.0,
                "speedup": 1.0,
            }
        )
        print(f"{bits} bits, radius {radius}: exact {exact_s:.2f} s, {len(exact):,} pairs")
        for recall in args.recalls:
            start = time.perf_counter()
            approx = approximate_near_duplicates(codes, max_distance=radius, recall=recall)
            seconds = time.perf_counter() - start
            found = np.isin(pair_keys(approx, len(codes)), exact_keys)
            if not found.all():
                raise SystemExit(f"approximate join returned {int((~found).sum())} false pairs")
            rows.append(
                {
                    "bits": bits,
                    "radius": radius,
                    "method": "lsh",
                    "target_recall": recall,
                    "seconds": round(seconds, 2),
                    "pairs": len(approx),
                    "recall": round(len(approx) / max(len(exact), 1), 5),
                    "speedup": round(exact_s / seconds, 1),
                }
            )
            print(f"  lsh recall {recall}: {seconds:.2f} s, {len(approx):,} pairs")
    print(f"{args.docs:,} synthetic documents; recall = share of the exact join's pairs found")
    print_table(rows, list(rows[0]))
    target = write_json(
        "lshjoin_cpu.json",
        {
            "spec": {k: getattr(spec, k) for k in spec.__dataclass_fields__},
            "results": rows,
        },
    )
    print(f"wrote {target}")


if __name__ == "__main__":
    main()

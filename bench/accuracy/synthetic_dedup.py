"""Recall and precision of `gpusimhash dedup` at scale, on a synthetic corpus with ground truth.

Generates a corpus with gpusimhash.datasets.synth (originals, exact copies, near copies at edit rates 2% to
20%), writes it as JSONL, and runs the same streaming pipeline the CLI runs (dedup_file) for a few
(bits, min cosine) settings in one run. Reports documents/second end to end (read, fingerprint,
join, write) and removal precision/recall against the true groups, overall and per edit rate.

    python bench/accuracy/synthetic_dedup.py [--docs 200000] [--settings 64:0.95 128:0.9 ...]

Writes bench/results/accuracy_synthetic_dedup.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
from _common import print_table, write_json

from gpusimhash.datasets.synth import CorpusSpec, generate
from gpusimhash.dedup.pipeline import dedup_file


def write_corpus(spec: CorpusSpec, path: Path) -> tuple[np.ndarray, np.ndarray]:
    """Write the corpus as JSONL; return each document's edit rate and whether it is a copy."""
    rates = np.zeros(spec.n_docs)
    copies = np.zeros(spec.n_docs, dtype=bool)
    with open(path, "w", encoding="utf-8") as f:
        for doc in generate(spec):
            f.write(json.dumps({"id": doc.id, "text": doc.text, "group": doc.group}) + "\n")
            rates[doc.id] = doc.edit_rate
            copies[doc.id] = doc.kind != "original"
    return rates, copies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=200_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--settings", nargs="+", default=["64:0.95", "128:0.9", "256:0.85"], help="bits:min_cosine"
    )
    args = parser.parse_args()
    spec = CorpusSpec(
        n_docs=args.docs,
        seed=args.seed,
        vocabulary_size=50_000,
        zipf_exponent=0.9,
        min_length=20,
        max_length=80,
    )
    rows, results = [], []
    with tempfile.TemporaryDirectory() as folder:
        corpus = Path(folder) / "corpus.jsonl"
        rates, copies = write_corpus(spec, corpus)
        for setting in args.settings:
            bits, min_cosine = int(setting.split(":")[0]), float(setting.split(":")[1])
            result = dedup_file(
                corpus,
                Path(folder) / setting.replace(":", "_"),
                id_field="id",
                truth_field="group",
                bits=bits,
                min_cosine=min_cosine,
                device="cpu",
            )
            summary = result.summary
            removed = ~result.kept
            per_rate = {
                f"{rate:g}": float(removed[copies & (rates == rate)].mean())
                for rate in (0.0, *spec.edit_rates)
            }
            truth = summary["ground_truth"]
            rows.append(
                {
                    "bits": bits,
                    "min_cosine": min_cosine,
                    "radius": summary["settings"]["max_distance"],
                    "docs/s": f"{summary['results']['documents_per_second']:,.0f}",
                    "join_s": f"{summary['timings_s']['join']:.2f}",
                    "precision": f"{truth['removal_precision']:.4f}",
                    "recall": f"{truth['removal_recall']:.4f}",
                    **{f"removed@{k}": f"{v:.3f}" for k, v in per_rate.items()},
                }
            )
            results.append(
                {
                    "bits": bits,
                    "min_cosine": min_cosine,
                    "summary": summary,
                    "removed_fraction_by_edit_rate": per_rate,
                }
            )
    print(
        f"{args.docs:,} synthetic documents ({int(copies.sum()):,} copies); removal precision "
        "and recall against the true groups; removed@r: share of copies at edit rate r removed"
    )
    print_table(rows, list(rows[0]))
    target = write_json(
        "accuracy_synthetic_dedup.json",
        {
            "spec": {k: getattr(spec, k) for k in spec.__dataclass_fields__},
            "results": results,
        },
    )
    print(f"wrote {target}")


if __name__ == "__main__":
    main()

"""The feature join's two plans side by side: the compiled index against the tails' product.

Both plans find every pair of documents whose exact similarity reaches the threshold, with the
same similarities (checked here on every corpus: the bench stops if they differ). What differs
is the cost, measured on the same documents in one run:

* ``warm``: each plan's best of ``--repeats`` calls after one warm-up call, in this process
  (the index's loops compiled or loaded from the cache first: never in a figure);
* ``first call``: each plan's first call in a fresh process on an empty Numba cache
  (``NUMBA_CACHE_DIR``), after the documents are featurized there: the seconds a first run
  pays for the join, and the seconds of Numba compiling within them (none: both plans' loops
  are compiled when the package is built).

Corpora: the bundled sample (3,500 documents) and the first ``--sizes`` lines of a one-document-
per-line corpus (the PyPI summaries by default). ``work`` is the tails' product's multiply-adds
(`gpusimhash.verify._product_join.Tails.work`). `feature_join` takes the index unless asked.

    python bench/bench_join_plans.py [CORPUS] [--sizes 5000 10000 20000 40000]
        [--thresholds cosine:0.8 jaccard:0.8] [--repeats 3] [--result join_plans_cpu.json]
"""

from __future__ import annotations

import argparse
import functools
import gzip
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DEFAULT_CORPUS, best_of, load_lines, print_table, write_json

from gpusimhash.datasets.sample import sample_corpus_path
from gpusimhash.fingerprinting import featurize
from gpusimhash.verify._feature_join import feature_join
from gpusimhash.verify._features import DocumentFeatures
from gpusimhash.verify._product_join import tails

PLANS = ("index", "product")

FIRST_CALL = r"""
import json, sys, time
from gpusimhash import _compile_time
from gpusimhash.fingerprinting import featurize
from gpusimhash.verify._feature_join import feature_join
from gpusimhash.verify._features import DocumentFeatures
texts = json.load(open(sys.argv[1], encoding="utf-8"))
features = DocumentFeatures.from_batch(featurize(texts))
compiled = _compile_time.seconds()
start = time.perf_counter()
feature_join(features, sys.argv[2], float(sys.argv[3]), plan=sys.argv[4])
print(json.dumps({"seconds": time.perf_counter() - start,
                  "compile_seconds": _compile_time.seconds() - compiled}))
"""


def sample_texts() -> list[str]:
    """The bundled sample corpus's texts."""
    with gzip.open(sample_corpus_path(), "rt", encoding="utf-8") as handle:
        return [json.loads(line)["text"] for line in handle]


def sorted_pairs(found) -> tuple[np.ndarray, np.ndarray]:
    """A join's pairs and similarities in row-major order."""
    order = np.lexsort((found.pairs[:, 1], found.pairs[:, 0]))
    return found.pairs[order], found.similarity[order]


def first_calls(texts: list[str], measure: str, value: float) -> dict[str, dict]:
    """Each plan's first call in a fresh process on an empty Numba cache."""
    calls = {}
    with tempfile.TemporaryDirectory() as folder:
        corpus = Path(folder) / "texts.json"
        corpus.write_text(json.dumps(texts), encoding="utf-8")
        for plan in PLANS:
            env = {**os.environ, "NUMBA_CACHE_DIR": str(Path(folder) / f"cache-{plan}")}
            done = subprocess.run(
                [sys.executable, "-c", FIRST_CALL, str(corpus), measure, str(value), plan],
                capture_output=True,
                text=True,
                env=env,
                check=True,
            )
            calls[plan] = json.loads(done.stdout.splitlines()[-1])
    return calls


def measure_corpus(name: str, texts: list[str], thresholds, repeats: int) -> list[dict]:
    """Both plans on one corpus at every threshold."""
    features = DocumentFeatures.from_batch(featurize(texts))
    rows = []
    for measure, value in thresholds:
        row = {
            "corpus": name,
            "documents": len(texts),
            "entries": int(features.offsets[-1]),
            "threshold": f"{measure} {value:g}",
            "work": tails(features, measure, value).work(),
        }
        found = {}
        join = functools.partial(feature_join, features, measure, value)
        for plan in PLANS:
            feature_join(features, measure, value, plan=plan)  # warm-up
            seconds, found[plan] = best_of(repeats, functools.partial(join, plan=plan))
            row[f"{plan}_warm_s"] = round(seconds, 4)
            row[f"{plan}_candidates"] = found[plan].candidates
        (index_pairs, index_values), (product_pairs, product_values) = map(
            sorted_pairs, (found["index"], found["product"])
        )
        if not (
            np.array_equal(index_pairs, product_pairs)
            and np.array_equal(index_values, product_values)
        ):
            raise SystemExit(f"{name} {measure} {value}: the plans' pairs differ")
        row["pairs"] = len(index_pairs)
        for plan, call in first_calls(texts, measure, value).items():
            row[f"{plan}_first_call_s"] = round(call["seconds"], 3)
            row[f"{plan}_first_call_compile_s"] = round(call["compile_seconds"], 3)
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", nargs="?", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--sizes", type=int, nargs="*", default=[5000, 10000, 20000, 40000])
    parser.add_argument("--thresholds", nargs="*", default=["cosine:0.8", "jaccard:0.8"])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--result", default="join_plans_cpu.json")
    args = parser.parse_args()
    thresholds = [(t.split(":")[0], float(t.split(":")[1])) for t in args.thresholds]
    rows = measure_corpus("bundled sample", sample_texts(), thresholds, args.repeats)
    lines = load_lines(args.corpus, max(args.sizes, default=0)) if args.sizes else []
    for size in args.sizes:
        rows += measure_corpus(
            f"{args.corpus.name} first {size:,}", lines[:size], thresholds, args.repeats
        )
    columns = [
        "corpus",
        "threshold",
        "work",
        "index_warm_s",
        "product_warm_s",
        "index_first_call_s",
        "index_first_call_compile_s",
        "product_first_call_s",
        "product_first_call_compile_s",
        "index_candidates",
        "product_candidates",
        "pairs",
    ]
    print_table(rows, columns)
    write_json(
        args.result,
        {
            "corpus": str(args.corpus),
            "repeats": args.repeats,
            "timing": (
                "warm: best of the repeats after a warm-up call, compiling excluded; first call: "
                "a fresh process on an empty Numba cache, compiling included"
            ),
            "rows": rows,
        },
    )


if __name__ == "__main__":
    main()

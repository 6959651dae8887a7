"""Where near-duplicate candidates come from: the codes' radius join against the exact feature join.

For each corpus and threshold, every method finds the pairs of documents whose exact
similarity reaches the threshold, side by side on the same documents in one run:

* ``codes exact``: every pair of 256-bit codes within the candidate radius (the radius that
  finds a pair exactly at the threshold with probability 0.99, as ``dedup --candidates codes``
  uses), each candidate then verified on its features;
* ``codes recall=0.9``: the same radius by the approximate join (each pair within the radius
  found with probability at least 0.9), verified the same way;
* ``features``: the exact feature join (prefix filtering on the documents' own features),
  which verifies as it goes.

Documents with identical features are counted once, as ``dedup`` does (``units``); Jaccard
candidates from codes use fingerprints of the feature sets. Each method runs in a fresh
process that loads the prepared features and codes, warms up on 2,000 documents (compiling,
if the Numba cache is empty: never in a figure), then is timed once; its peak memory is the
process's peak resident size over what it held once the inputs were loaded. ``recall`` is the
share of the feature join's pairs a method finds; the feature join is itself checked against
brute force (every pair compared) on a 5,000-document subset of each corpus, and the bench
stops if it differs.

    python bench/bench_candidates.py [CORPUS] [--docs 0] [--synthetic 200000]
        [--thresholds cosine:0.8 cosine:0.9 jaccard:0.8] [--methods features "codes exact"]

A codes method is not run where dedup's guard rail would refuse it (over 100 million
estimated candidate pairs of the codes, recorded), nor past ``--limit`` seconds (recorded).
``--docs 0`` reads the whole corpus. Writes ``bench/results/candidates_cpu.json`` (or the name
``--result`` gives).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DEFAULT_CORPUS, load_lines, print_table, write_json

from gpusimhash.datasets.synth import CorpusSpec, generate
from gpusimhash.features import FeatureBatch
from gpusimhash.fingerprinting import featurize, fingerprint_batch
from gpusimhash.join._budget import MAX_CANDIDATE_PAIRS, estimate_pair_count
from gpusimhash.join._exact import near_duplicates
from gpusimhash.verify._feature_join import feature_join
from gpusimhash.verify._features import DocumentFeatures
from gpusimhash.verify._threshold import candidate_radius
from gpusimhash.verify._units import feature_units

BITS = 256
METHODS = ("codes exact", "codes recall=0.9", "features")
APPROXIMATE_RECALL = 0.9
WARM_UP_DOCS = 2_000
CHECK_DOCS = 5_000
FIELDS = ("states", "offsets", "weights", "exponents", "squared_norms")


def prepare(texts: list[str], folder: Path) -> int:
    """Featurize and fingerprint the distinct documents of ``texts`` into ``folder``."""
    features = DocumentFeatures.from_batch(featurize(texts))
    n = features.n_docs
    _, representative = feature_units(np.zeros(n, np.int64), features, np.arange(n), False)
    units = features.take(representative[features.sizes[representative] > 0])
    batch = FeatureBatch(units.states, units.offsets, units.weights)
    sets = FeatureBatch(units.states, units.offsets, None)
    np.savez(
        folder / "inputs.npz",
        **{name: getattr(units, name) for name in FIELDS},
        cosine_codes=fingerprint_batch(batch, "cpu", bits=BITS, seed=0),
        jaccard_codes=fingerprint_batch(sets, "cpu", bits=BITS, seed=0),
    )
    return units.n_docs


def load(folder: Path) -> tuple[DocumentFeatures, dict[str, np.ndarray]]:
    """The prepared features and codes (no pickle)."""
    with np.load(folder / "inputs.npz", allow_pickle=False) as data:
        arrays = {name: data[name] for name in data.files}
    features = DocumentFeatures(*(arrays[name] for name in FIELDS))
    return features, {m: arrays[f"{m}_codes"] for m in ("cosine", "jaccard")}


def find_pairs(
    method: str, features: DocumentFeatures, codes: np.ndarray, measure: str, value: float
) -> dict:
    """Run one method; return its pairs, candidate count and timings."""
    if method == "features":
        start = time.perf_counter()
        found = feature_join(features, measure, value)
        seconds = time.perf_counter() - start
        pairs = found.pairs
        return {
            "pairs": pairs,
            "candidate_pairs": found.candidates,
            "candidates_s": seconds,
            "verify_s": 0.0,
            "radius": None,
        }
    radius = candidate_radius(BITS, **{f"min_{measure}": value})
    recall = APPROXIMATE_RECALL if method == "codes recall=0.9" else None
    start = time.perf_counter()
    candidates = near_duplicates(codes, max_distance=radius, recall=recall, device="cpu")
    middle = time.perf_counter()
    similarity = getattr(features.similarities(candidates), measure)
    pairs = candidates[similarity >= value]
    end = time.perf_counter()
    return {
        "pairs": pairs,
        "candidate_pairs": len(candidates),
        "candidates_s": middle - start,
        "verify_s": end - middle,
        "radius": radius,
    }


def resident_mb() -> float:
    """This process's resident memory now, in MB."""
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 1e6


def child(folder: Path, method: str, measure: str, value: float) -> None:
    """One timed run in this process; print its figures and save its pairs."""
    features, codes = load(folder)
    warm = features.take(np.arange(min(WARM_UP_DOCS, features.n_docs)))
    find_pairs(method, warm, codes[measure][: warm.n_docs], measure, value)
    before = resident_mb()
    found = find_pairs(method, features, codes[measure], measure, value)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3
    pairs = np.sort(found.pop("pairs"), axis=1)
    keys = np.unique(pairs[:, 0] * features.n_docs + pairs[:, 1])
    np.save(folder / f"{method}-{measure}-{value}.npy", keys)
    found.update(pairs=int(keys.size), peak_over_inputs_mb=round(max(peak - before, 0.0), 1))
    print(json.dumps(found))


def run_child(folder: Path, method: str, measure: str, value: float, limit: float) -> dict:
    """Run `child` in a fresh process and read its figures (``timed_out`` past ``limit`` s)."""
    try:
        done = subprocess.run(
            [sys.executable, __file__, "--child", str(folder), method, measure, str(value)],
            capture_output=True,
            text=True,
            check=False,
            timeout=limit,
        )
    except subprocess.TimeoutExpired:
        return {"timed_out_s": limit}
    if done.returncode != 0:
        raise RuntimeError(f"{method} {measure} {value} failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def estimated_candidates(folder: Path, measure: str, value: float) -> float:
    """Estimate the codes' candidate pairs at the radius, as dedup's guard rail does."""
    _, codes = load(folder)
    radius = candidate_radius(BITS, **{f"min_{measure}": value})
    return estimate_pair_count(codes[measure], radius)


def check_exact(folder: Path, measure: str, value: float) -> int:
    """Compare the feature join with brute force on the first `CHECK_DOCS` documents."""
    features, _ = load(folder)
    subset = features.take(np.arange(min(CHECK_DOCS, features.n_docs)))
    i, j = np.triu_indices(subset.n_docs, 1)
    every = np.stack([i, j], axis=1)
    similarity = getattr(subset.similarities(every), measure)
    expected = every[similarity >= value]
    found = np.sort(feature_join(subset, measure, value).pairs, axis=1)
    keys = np.unique(found[:, 0] * subset.n_docs + found[:, 1])
    if not np.array_equal(keys, expected[:, 0] * subset.n_docs + expected[:, 1]):
        raise SystemExit(f"the feature join differs from brute force at {measure} {value}")
    return len(expected)


def corpora(args: argparse.Namespace) -> list[tuple[str, list[str]]]:
    """The corpora to measure: the real one and the synthetic one."""
    found = []
    if args.docs >= 0:
        texts = load_lines(args.corpus, args.docs or None)
        found.append((f"{args.corpus.name} ({len(texts):,} lines)", texts))
    if args.synthetic:
        spec = CorpusSpec(n_docs=args.synthetic)
        found.append(
            (f"synthetic ({args.synthetic:,} documents)", [d.text for d in generate(spec)])
        )
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", nargs="?", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--docs", type=int, default=0, help="lines of the corpus; 0: all; -1: none")
    parser.add_argument("--synthetic", type=int, default=200_000, help="0: none")
    parser.add_argument(
        "--thresholds", nargs="+", default=["cosine:0.8", "cosine:0.9", "jaccard:0.8"]
    )
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    parser.add_argument("--limit", type=float, default=900.0, help="seconds per method run")
    parser.add_argument("--result", default="candidates_cpu.json")
    args = parser.parse_args()
    rows, checks = [], []
    with tempfile.TemporaryDirectory(prefix="bench-candidates-") as scratch:
        folder = Path(scratch)
        for name, texts in corpora(args):
            for stale in folder.glob("*.npy"):  # pairs of the previous corpus
                stale.unlink()
            units = prepare(texts, folder)
            del texts
            for spec in args.thresholds:
                measure, value = spec.split(":")[0], float(spec.split(":")[1])
                checks.append(
                    {
                        "corpus": name,
                        "threshold": spec,
                        "documents": min(CHECK_DOCS, units),
                        "brute_force_pairs": check_exact(folder, measure, value),
                        "feature_join_equal": True,
                    }
                )
                truth = None
                results = {}
                estimate = estimated_candidates(folder, measure, value)
                for method in ("features", *(m for m in args.methods if m != "features")):
                    if method != "features" and estimate > MAX_CANDIDATE_PAIRS:
                        results[method] = {"refused_estimated_candidates": round(estimate)}
                        continue
                    results[method] = run_child(folder, method, measure, value, args.limit)
                    if method == "features" and "candidates_s" in results[method]:
                        truth = np.load(folder / f"features-{measure}-{value}.npy")
                for method in args.methods:
                    found = results[method]
                    row = {"corpus": name, "units": units, "threshold": spec, "method": method}
                    row["estimated_code_candidates"] = round(estimate)
                    if "candidates_s" in found:
                        keys = np.load(folder / f"{method}-{measure}-{value}.npy")
                        recall = None
                        if truth is not None:
                            recall = np.isin(truth, keys).mean() if truth.size else 1.0
                        row.update(
                            {
                                k: round(v, 2) if isinstance(v, float) else v
                                for k, v in found.items()
                            }
                        )
                        row["total_s"] = round(found["candidates_s"] + found["verify_s"], 2)
                        row["recall"] = None if recall is None else round(float(recall), 6)
                    else:
                        row.update(found)
                    row["load_average"] = round(os.getloadavg()[0], 2)
                    rows.append(row)
                    print_table([row], list(row))
    columns = [
        "corpus",
        "units",
        "threshold",
        "method",
        "radius",
        "candidates_s",
        "verify_s",
        "total_s",
        "candidate_pairs",
        "pairs",
        "recall",
        "peak_over_inputs_mb",
        "refused_estimated_candidates",
        "timed_out_s",
    ]
    print()
    print_table(rows, columns)
    features_of = {(r["corpus"], r["threshold"]): r for r in rows if r["method"] == "features"}
    for row in rows:
        base = features_of.get((row["corpus"], row["threshold"]))
        if base and "total_s" in row and base["total_s"] > 0:
            row["seconds_over_features"] = round(row["total_s"] / base["total_s"], 2)
    target = write_json(
        args.result,
        {
            "bits": BITS,
            "approximate_recall": APPROXIMATE_RECALL,
            "note": (
                "documents with identical features counted once (units); every method on the "
                "same units in one run; each method a fresh process, warmed up on 2,000 "
                "documents (compile time excluded); a shared 2-core machine"
            ),
            "results": rows,
            "exactness_checks": checks,
        },
    )
    print(f"wrote {target}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(Path(sys.argv[2]), sys.argv[3], sys.argv[4], float(sys.argv[5]))
    else:
        main()

"""The seed's accuracy measurements, reproduced on gpusimhash and plotted.

1. Mean absolute error of estimate_cosine against the true cosine, over all pairs of the seed-like
   documents and many hash seeds, at 8 to 512 bits (the seed: 0.350 at 8 bits ... 0.050 at 512).
2. Weighted against unweighted (every weight 1) fingerprints on the paraphrase pairs at 32 bits
   (the seed: 0.048 against 0.086).
3. Recall and false-positive rate of the seed's three blocking schemes (1x32, 4x8, 8x4 on 32-bit
   codes, gpusimhash.candidates) against "true cosine >= 0.5", on the seed-like documents and on a
   synthetic corpus with ground truth (gpusimhash.datasets.synth).
4. Probability that a pair is found within a Hamming radius, against its true cosine: the binomial
   model (d ~ Binomial(bits, arccos(cos) / pi)) against the fraction measured over hash seeds.

Writes bench/results/accuracy_results.json and bench/results/accuracy_*.png, and prints tables.

    python bench/accuracy/accuracy.py [--docs tests/data/seed_like_docs.json] [--seeds 300]
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import scipy.sparse as sp
from scipy.stats import binom

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
from _common import RESULTS, print_table, write_json

from gpusimhash import TextFeaturizer, candidates, estimate_cosine, fingerprint, hamming
from gpusimhash.datasets.synth import CorpusSpec, generate

SEED_MAE = {8: 0.350, 16: 0.262, 32: 0.190, 64: 0.137, 128: 0.097, 256: 0.069, 512: 0.050}
SEED_WEIGHTING = {"weighted": 0.048, "unweighted": 0.086}
BITS = (8, 16, 32, 64, 128, 256, 512)
SCHEMES = {"1x32": 1, "4x8": 4, "8x4": 8}


def true_cosines(vectors: list[dict[str, float]]) -> np.ndarray:
    """Exact cosine of every pair of weighted vectors, as a dense matrix."""
    columns: dict[str, int] = {}
    data, indices, indptr = [], [], [0]
    for vector in vectors:
        for feature, weight in vector.items():
            indices.append(columns.setdefault(feature, len(columns)))
            data.append(weight)
        indptr.append(len(indices))
    matrix = sp.csr_matrix((data, indices, indptr), shape=(len(vectors), len(columns)))
    norms = np.sqrt(matrix.multiply(matrix).sum(axis=1)).A1
    matrix = sp.diags(1.0 / norms) @ matrix
    return (matrix @ matrix.T).toarray()


def pair_estimates(vectors, pairs: np.ndarray, bits: int, seed: int) -> np.ndarray:
    """Estimated cosine of each pair under one hash seed."""
    codes = fingerprint(vectors, bits=bits, seed=seed, device="cpu")
    return estimate_cosine(codes[pairs[:, 0]], codes[pairs[:, 1]])


def mae_by_bits(vectors, seeds: range) -> list[dict]:
    """Mean absolute error over all pairs and seeds, per number of bits."""
    pairs = np.array(list(itertools.combinations(range(len(vectors)), 2)))
    truth = true_cosines(vectors)[pairs[:, 0], pairs[:, 1]]
    rows = []
    for bits in BITS:
        errors = [np.abs(pair_estimates(vectors, pairs, bits, s) - truth).mean() for s in seeds]
        rows.append({"bits": bits, "mae": float(np.mean(errors)), "seed_mae": SEED_MAE[bits]})
    return rows


def weighting_error(vectors, paraphrases: np.ndarray, seeds: range, bits: int = 32) -> dict:
    """Error on the paraphrase pairs of weighted and of unweighted (binary) fingerprints."""
    truth = true_cosines(vectors)[paraphrases[:, 0], paraphrases[:, 1]]
    unweighted = [dict.fromkeys(v, 1) for v in vectors]
    result = {"bits": bits, "pairs": paraphrases.tolist(), "true_cosine": truth.tolist()}
    for name, docs in (("weighted", vectors), ("unweighted", unweighted)):
        errors = [np.abs(pair_estimates(docs, paraphrases, bits, s) - truth) for s in seeds]
        result[name] = float(np.mean(errors))
        result[f"seed_{name}"] = SEED_WEIGHTING[name]
    result["ratio"] = result["unweighted"] / result["weighted"]
    return result


def blocking_rates(vectors, seeds: range, threshold: float = 0.5) -> list[dict]:
    """Recall and false-positive rate of each blocking scheme on 32-bit codes, over seeds."""
    n = len(vectors)
    truth = true_cosines(vectors)
    upper = np.triu_indices(n, 1)
    similar = truth[upper] >= threshold
    rows = []
    for name, blocks in SCHEMES.items():
        found = np.zeros(similar.size)
        for seed in seeds:
            codes = fingerprint(vectors, bits=32, seed=seed, device="cpu")
            flagged = np.zeros((n, n), dtype=bool)
            pairs = candidates(codes, blocks)
            flagged[pairs[:, 0], pairs[:, 1]] = True
            found += flagged[upper]
        rate = found / len(seeds)
        rows.append(
            {
                "scheme": name,
                "recall": float(rate[similar].mean()) if similar.any() else None,
                "false_positive_rate": float(rate[~similar].mean()) if (~similar).any() else None,
                "similar_pairs": int(similar.sum()),
                "dissimilar_pairs": int((~similar).sum()),
            }
        )
    return rows


def synthetic_vectors(n_docs: int, seed: int) -> list[dict[str, float]]:
    """Word-count vectors of a synthetic corpus with many near copies at varied edit rates."""
    spec = CorpusSpec(
        n_docs=n_docs,
        seed=seed,
        vocabulary_size=5000,
        zipf_exponent=0.9,
        min_length=20,
        max_length=60,
        exact_rate=0.05,
        near_rate=0.5,
        edit_rates=(0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.7, 0.9),
    )
    featurizer = TextFeaturizer()
    return [featurizer.features(d.text) for d in generate(spec)]


def detection(vectors, seeds: range, bits: int, radius: int, bins: np.ndarray) -> dict:
    """Measured and binomial probability of ``hamming <= radius`` per true-cosine bin.

    Pairs are every pair with true cosine >= bins[0] (the near copies and their neighbours).
    """
    truth = true_cosines(vectors)
    first, second = np.triu_indices(len(vectors), 1)
    cos = truth[first, second]
    keep = cos >= bins[0]
    first, second, cos = first[keep], second[keep], np.clip(cos[keep], -1.0, 1.0)
    hits = np.zeros(cos.size)
    for seed in seeds:
        codes = fingerprint(vectors, bits=bits, seed=seed, device="cpu")
        hits += hamming(codes[first], codes[second]) <= radius
    measured = hits / len(seeds)
    theory = binom.cdf(radius, bits, np.arccos(cos) / np.pi)
    which = np.digitize(cos, bins) - 1
    rows = []
    for b in range(bins.size - 1):
        inside = which == b
        if inside.sum() == 0:
            continue
        rows.append(
            {
                "cosine_low": float(bins[b]),
                "cosine_high": float(bins[b + 1]),
                "pairs": int(inside.sum()),
                "measured": float(measured[inside].mean()),
                "binomial": float(theory[inside].mean()),
            }
        )
    return {"bits": bits, "radius": radius, "seeds": len(seeds), "bins": rows}


def plot_mae(rows, path: Path) -> None:
    bits = [r["bits"] for r in rows]
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.loglog(bits, [r["mae"] for r in rows], "o-", label="gpusimhash (measured)")
    ax.loglog(bits, [r["seed_mae"] for r in rows], "s--", label="seed (cited)")
    ref = rows[0]["mae"] * (np.array(bits) / bits[0]) ** -0.5
    ax.loglog(bits, ref, ":", color="grey", label="1/sqrt(2) per doubling")
    ax.set_xticks(bits, [str(b) for b in bits])
    ax.set_xlabel("fingerprint bits")
    ax.set_ylabel("mean |estimated - true cosine|")
    ax.set_title("Estimate error against bits")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_weighting(result, path: Path) -> None:
    fig, ax = plt.subplots(figsize=(5, 3.6))
    names = ["weighted", "unweighted"]
    x = np.arange(2)
    ax.bar(x - 0.2, [result[n] for n in names], 0.4, label="gpusimhash (measured)")
    ax.bar(x + 0.2, [result[f"seed_{n}"] for n in names], 0.4, label="seed (cited)")
    ax.set_xticks(x, names)
    ax.set_ylabel("mean |error| on paraphrase pairs")
    ax.set_title(f"Weighted vs unweighted, {result['bits']} bits")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_blocking(results: dict, path: Path) -> None:
    fig, axes = plt.subplots(1, len(results), figsize=(5 * len(results), 3.6), squeeze=False)
    for ax, (corpus, rows) in zip(axes[0], results.items(), strict=True):
        x = np.arange(len(rows))
        ax.bar(x - 0.2, [r["recall"] for r in rows], 0.4, label="recall (cos >= 0.5)")
        ax.bar(x + 0.2, [r["false_positive_rate"] for r in rows], 0.4, label="false-positive rate")
        ax.set_xticks(x, [r["scheme"] for r in rows])
        ax.set_ylim(0, 1.25)
        ax.set_title(f"Blocking on 32-bit codes: {corpus}", fontsize=10)
        ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_detection(results: list[dict], path: Path) -> None:
    fig, ax = plt.subplots(figsize=(6, 4))
    for result in results:
        mids = [(b["cosine_low"] + b["cosine_high"]) / 2 for b in result["bins"]]
        label = f"{result['bits']} bits, radius {result['radius']}"
        line = ax.plot(
            mids, [b["binomial"] for b in result["bins"]], "-", label=f"{label}: binomial"
        )
        ax.plot(
            mids,
            [b["measured"] for b in result["bins"]],
            "o",
            color=line[0].get_color(),
            label=f"{label}: measured",
        )
    ax.set_xlabel("true cosine")
    ax.set_ylabel("P(found within radius)")
    ax.set_title("Detection probability against true cosine")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=Path, default=ROOT / "tests/data/seed_like_docs.json")
    parser.add_argument("--seeds", type=int, default=300, help="hash seeds per measurement")
    parser.add_argument("--synthetic-docs", type=int, default=600)
    parser.add_argument("--detection-seeds", type=int, default=100)
    args = parser.parse_args()

    spec = json.loads(args.docs.read_text())
    docs = spec["documents"]
    paraphrases = np.array(spec["paraphrase_pairs"])
    seeds = range(args.seeds)

    mae = mae_by_bits(docs, seeds)
    print(
        f"1. mean |estimate - true cosine| over all {len(docs) * (len(docs) - 1) // 2} pairs, "
        f"{args.seeds} seeds"
    )
    print_table(
        [{k: f"{v:.3f}" if isinstance(v, float) else v for k, v in r.items()} for r in mae],
        ["bits", "mae", "seed_mae"],
    )

    weighting = weighting_error(docs, paraphrases, seeds)
    print(
        f"\n2. paraphrase pairs {weighting['pairs']}, {weighting['bits']} bits: weighted "
        f"{weighting['weighted']:.3f} (seed 0.048), unweighted {weighting['unweighted']:.3f} "
        f"(seed 0.086), ratio {weighting['ratio']:.2f}"
    )

    synthetic = synthetic_vectors(args.synthetic_docs, seed=1)
    blocking = {
        "seed-like documents": blocking_rates(docs, seeds),
        f"synthetic corpus ({args.synthetic_docs} docs)": blocking_rates(
            synthetic, range(min(args.seeds, 50))
        ),
    }
    for corpus, rows in blocking.items():
        print(f"\n3. blocking, 32-bit codes, {corpus}, against true cosine >= 0.5")
        print_table(
            [{k: f"{v:.3f}" if isinstance(v, float) else v for k, v in r.items()} for r in rows],
            ["scheme", "recall", "false_positive_rate", "similar_pairs", "dissimilar_pairs"],
        )

    bins = np.linspace(0.3, 1.0, 15)
    detect_seeds = range(args.detection_seeds)
    detections = [
        detection(synthetic, detect_seeds, 64, 3, bins),
        detection(synthetic, detect_seeds, 64, 10, bins),
        detection(synthetic, detect_seeds, 256, 40, bins),
    ]
    for result in detections:
        print(
            f"\n4. P(hamming <= {result['radius']}) at {result['bits']} bits, "
            f"{result['seeds']} seeds, synthetic pairs"
        )
        print_table(
            [
                {
                    "cosine": f"{b['cosine_low']:.2f}-{b['cosine_high']:.2f}",
                    "pairs": b["pairs"],
                    "measured": f"{b['measured']:.3f}",
                    "binomial": f"{b['binomial']:.3f}",
                }
                for b in result["bins"]
            ],
            ["cosine", "pairs", "measured", "binomial"],
        )

    RESULTS.mkdir(parents=True, exist_ok=True)
    plot_mae(mae, RESULTS / "accuracy_mae_vs_bits.png")
    plot_weighting(weighting, RESULTS / "accuracy_weighting.png")
    plot_blocking(blocking, RESULTS / "accuracy_blocking.png")
    plot_detection(detections, RESULTS / "accuracy_detection.png")
    target = write_json(
        "accuracy_results.json",
        {
            "documents": str(
                args.docs.relative_to(ROOT) if args.docs.is_relative_to(ROOT) else args.docs
            ),
            "seeds": args.seeds,
            "mae_by_bits": mae,
            "weighting": weighting,
            "blocking": blocking,
            "detection": detections,
        },
    )
    print(f"\nwrote {target} and accuracy_*.png")


if __name__ == "__main__":
    main()

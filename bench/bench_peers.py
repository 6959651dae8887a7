"""Whole dedup runs against MinHash LSH peers: text file in, kept list out, scored on exact truth.

    python bench/bench_peers.py [CORPUS] [--docs 100000 | --all] [--repeats 3]

Every tool runs as its own process on the same plain-text file (the last ``--docs`` lines of
the corpus, one document per line), in turns (repeat 1 of every tool, then repeat 2, ...), and
writes its kept documents; the time is the process's wall time from start to exit (interpreter
start, imports, reading, tokenizing, dedup, writing the kept list), the memory its peak
resident set (GNU ``time``'s ``%M``).

- ``gpusimhash dedup --min-jaccard 0.8 --no-report``: the CLI; the exact feature join finds
  every pair at Jaccard 0.8 of the word sets, stars keep the first document of each cluster.
  On a warm Numba cache (one warm-up run per setting first, so compilation is excluded); the
  first run on an empty ``NUMBA_CACHE_DIR`` is measured apart (``cold``). Also with
  ``--threads 1``.
- ``gpusimhash dedup --no-report``: the defaults (cosine 0.8 of word counts), scored against
  the cosine truth.
- rensa and datasketch (installed into this interpreter by pip when missing), 128
  permutations, threshold 0.8, keep-first (``_dedup_peers.py`` says exactly what each does).

Tokenization is the same for all: gpusimhash's default featurizer (lower-cased words); the
peers tokenize with a regular expression that this script checks gives the words and counts of
``TextFeaturizer().features`` on every document. The truth is exact, on the words themselves
(numbered, so no two words share a hash): identical word vectors are grouped first, then
gpusimhash's ``feature_join`` finds every pair of distinct ones at the threshold (Jaccard of
the word sets, and cosine of the word counts), cross-checked against brute force over the
feature strings in exact integer arithmetic on 5,000 documents. Scores: ``_dedup_scores.py``.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DEFAULT_CORPUS, ROOT, load_lines, print_table, write_json
from _dedup_peers import PEERS, tokens
from _dedup_scores import doc_pairs, group_identical, removal_scores

from gpusimhash import DocumentFeatures, FeatureBatch, TextFeaturizer
from gpusimhash.hashing import feature_states
from gpusimhash.verify._feature_join import feature_join

THRESHOLD = 0.8
CHECK_DOCS = 5_000
PEER_PACKAGES = ("rensa", "datasketch")
TIME = "/usr/bin/time"  # GNU time: the peak resident set of the command alone
# name, truth it is scored against, dedup options after INPUT
GPUSIMHASH = [
    ("gpusimhash --min-jaccard 0.8", "jaccard", ["--min-jaccard", "0.8"]),
    ("gpusimhash defaults (cosine 0.8)", "cosine", []),
    (
        "gpusimhash --min-jaccard 0.8 --threads 1",
        "jaccard",
        ["--min-jaccard", "0.8", "--threads", "1"],
    ),
]


def install_peers() -> dict[str, str]:
    """Install rensa and datasketch into this interpreter where missing; return their versions."""
    missing = [p for p in PEER_PACKAGES if importlib.util.find_spec(p) is None]
    if missing:
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", *missing], check=True)
    return {p: importlib.metadata.version(p) for p in PEER_PACKAGES}


def run_process(command: list[str], env: dict[str, str], log: Path) -> dict[str, Any]:
    """Run a command to its end: wall seconds, peak resident bytes, CPU seconds, stdout.

    The command runs under ``/usr/bin/time``, so that its peak resident set is its own: a child
    forked from this (large) process would start from this process's high-water mark.
    """
    load = os.getloadavg()
    usage = log.with_suffix(".time")
    timed = [TIME, "-f", "%M %U %S", "-o", str(usage), *command]
    with open(log.with_suffix(".out"), "wb") as out, open(log.with_suffix(".err"), "wb") as err:
        start = time.perf_counter()
        done = subprocess.run(timed, stdout=out, stderr=err, env=env, cwd=ROOT, check=False)
        seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(
            f"{' '.join(command)} exited {done.returncode}: "
            + log.with_suffix(".err").read_text(errors="replace")[-2000:]
        )
    peak_kib, user, system = usage.read_text().split()[-3:]
    return {
        "seconds": seconds,
        "peak_rss_bytes": int(peak_kib) * 1024,
        "cpu_s": float(user) + float(system),
        "load_average_before": load,
        "stdout": log.with_suffix(".out").read_text(),
    }


def kept_mask(out: Path, lines: list[str]) -> np.ndarray:
    """The kept rows a run wrote (``kept.jsonl``), each checked to hold its input line."""
    keep = np.zeros(len(lines), dtype=bool)
    with open(out / "kept.jsonl", encoding="utf-8") as handle:
        for line in handle:
            record = json.loads(line)
            if record["text"] != lines[record["id"]]:
                raise AssertionError(f"{out}: row {record['id']} is not the input's line")
            keep[record["id"]] = True
    return keep


def word_features(lines: list[str]) -> tuple[DocumentFeatures, dict[str, Any]]:
    """Every document's word counts, words numbered by first occurrence; the tokenization check.

    The truth compares words by these numbers, so two words never count as one (gpusimhash
    itself compares 32-bit feature states: ``words_sharing_a_state`` counts the words whose
    state another word also has). Raises when the peers' tokens (word and count) differ from
    ``TextFeaturizer().features`` on any document.
    """
    featurizer = TextFeaturizer()
    start = time.perf_counter()
    vocabulary: dict[str, int] = {}
    ids: list[int] = []
    offsets = [0]
    differ = 0
    for text in lines:
        found = tokens(text)
        differ += Counter(found) != featurizer.features(text)
        ids.extend(vocabulary.setdefault(w, len(vocabulary)) for w in found)
        offsets.append(len(ids))
    batch = FeatureBatch(np.array(ids, np.uint32), np.array(offsets, np.int64), None)
    states = np.unique(feature_states(list(vocabulary))).size if vocabulary else 0
    check = {
        "documents_whose_words_or_counts_differ": differ,
        "distinct_words": len(vocabulary),
        "words_sharing_a_state": len(vocabulary) - states,
        "seconds": time.perf_counter() - start,
    }
    if differ:
        raise AssertionError(f"tokenization differs from gpusimhash's: {check}")
    return DocumentFeatures.from_batch(batch), check


def truth_graph(features: DocumentFeatures, measure: str) -> tuple[np.ndarray, np.ndarray, dict]:
    """Groups of identical feature vectors and the exact pairs between distinct ones."""
    start = time.perf_counter()
    o, states, weights = features.offsets, features.states, features.weights
    keys = [
        states[o[d] : o[d + 1]].tobytes()
        + (weights[o[d] : o[d + 1]].tobytes() if measure == "cosine" else b"")
        for d in range(features.n_docs)
    ]
    groups = group_identical(keys, features.sizes == 0)
    reps = np.unique(groups, return_index=True)[1]  # first member of each group, in node order
    found = feature_join(features.take(reps), measure, THRESHOLD)
    record = {
        "measure": measure,
        "distinct_vectors": int(reps.size),
        "pairs_between_distinct_vectors": int(found.pairs.shape[0]),
        "seconds": time.perf_counter() - start,
    }
    return groups, found.pairs, record


def brute_force_pairs(lines: list[str], docs: np.ndarray, measure: str) -> set[tuple[int, int]]:
    """Pairs of ``docs`` at the threshold, over feature strings, in exact integer arithmetic."""
    featurizer = TextFeaturizer()
    vocabulary: dict[str, int] = {}
    rows, cols, vals = [], [], []
    for row, doc in enumerate(docs.tolist()):
        for feature, count in featurizer.features(lines[doc]).items():
            rows.append(row)
            cols.append(vocabulary.setdefault(feature, len(vocabulary)))
            vals.append(int(count) if measure == "cosine" else 1)
    x = sp.csr_matrix((np.array(vals, np.int64), (rows, cols)), shape=(docs.size, len(vocabulary)))
    own = np.asarray(x.multiply(x).sum(axis=1)).ravel().astype(np.int64)  # |A| or |a|^2
    dots = sp.triu(x @ x.T, k=1).tocoo()
    i, j, d = dots.row, dots.col, dots.data.astype(np.int64)
    if measure == "jaccard":  # d / (|A| + |B| - d) >= 4/5
        ok = 9 * d >= 4 * (own[i] + own[j])
    else:  # d / sqrt(|a|^2 |b|^2) >= 4/5
        ok = (d > 0) & (25 * d * d >= 16 * own[i] * own[j])
    return {(int(docs[u]), int(docs[v])) for u, v in zip(i[ok], j[ok], strict=True)}


def cross_check(lines, groups, pairs, measure, rng) -> dict[str, Any]:
    """Truth against brute force on documents half drawn from those with a true pair."""
    paired = np.zeros(len(lines), dtype=bool)
    sizes = np.bincount(groups)
    paired |= sizes[groups] > 1
    paired |= np.isin(groups, pairs.ravel())
    half = min(CHECK_DOCS // 2, int(paired.sum()))
    docs = np.concatenate(
        [
            rng.choice(np.flatnonzero(paired), half, replace=False),
            rng.choice(
                np.flatnonzero(~paired), min(CHECK_DOCS - half, int((~paired).sum())), replace=False
            ),
        ]
    )
    docs.sort()
    expected = brute_force_pairs(lines, docs, measure)
    found = doc_pairs(groups, pairs, docs)
    check = {
        "measure": measure,
        "documents": int(docs.size),
        "true_pairs_brute_force": len(expected),
        "true_pairs_truth": len(found),
        "missing": len(expected - found),
        "extra": len(found - expected),
        "passed": expected == found,
    }
    if not check["passed"]:
        raise AssertionError(f"truth differs from brute force: {check}")
    return check


def gpusimhash_command(source: Path, options: list[str], out: Path) -> list[str]:
    return [sys.executable, "-m", "gpusimhash", "dedup", str(source), *options, "--no-report"] + [
        "--out",
        str(out),
        "-q",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("corpus", nargs="?", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--docs", type=int, default=100_000, help="the last DOCS lines")
    parser.add_argument("--all", action="store_true", help="the whole corpus (overrides --docs)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-cold", action="store_true", help="skip the runs on empty caches")
    parser.add_argument(
        "--result", help="result file name (default: peers_cpu.json, --all: peers_cpu_all.json)"
    )
    args = parser.parse_args()
    result = args.result or ("peers_cpu_all.json" if args.all else "peers_cpu.json")

    load_at_start = os.getloadavg()
    versions = install_peers()
    lines = load_lines(args.corpus)
    total = len(lines)
    if not args.all:
        lines = lines[-args.docs :]
    selection = "every line" if args.all else f"the last {len(lines):,} of its {total:,} lines"
    print(f"{args.corpus}: {selection}")
    work = Path(tempfile.mkdtemp(prefix="bench_peers_"))
    source = work / "input.txt"
    source.write_text("".join(line + "\n" for line in lines), encoding="utf-8")

    features, tokenization = word_features(lines)
    print(f"tokenization: identical words and counts on all {len(lines):,} documents")
    truths, checks = {}, []
    rng = np.random.default_rng(0)
    for measure in ("jaccard", "cosine"):
        groups, pairs, record = truth_graph(features, measure)
        checks.append(cross_check(lines, groups, pairs, measure, rng))
        truths[measure] = (groups, pairs)
        scores = removal_scores(np.zeros(len(lines), bool), groups, pairs)
        record["perfect_keep_first_removals"] = scores["perfect_removals"]
        truths[measure + "_record"] = record
        print(f"truth {measure}: {record}; brute-force check passed: {checks[-1]}")

    env = {**os.environ, "NUMBA_CACHE_DIR": str(work / "numba-warm")}
    runs: list[dict[str, Any]] = []

    def run(
        name: str, truth: str, command: list[str], out: Path, environment, kind: str, repeat: int
    ):
        record = run_process(command, environment, out.with_name(out.name + ".log"))
        keep = kept_mask(out, lines)
        stdout = record.pop("stdout")
        summary = {}
        if (out / "summary.json").exists():
            written = json.loads((out / "summary.json").read_text())
            results = written["results"]
            summary = {k: results[k] for k in ("seconds", "compile_seconds", "candidate_pairs")}
            summary["timings_s"] = written["timings_s"]
        shutil.rmtree(out)
        row = {
            "tool": name,
            "kind": kind,
            "repeat": repeat,
            "truth": truth,
            **record,
            **removal_scores(keep, *truths[truth]),
            "own_report": summary or json.loads(stdout),
        }
        runs.append(row)
        print(f"  {kind} {name} #{repeat}: {row['seconds']:.2f} s, removed {row['removed']:,}")
        return keep

    print("cold and warm-up runs of gpusimhash (not in the table's seconds)")
    for name, truth, options in GPUSIMHASH[: 0 if args.no_cold else 2]:
        cold = {**os.environ, "NUMBA_CACHE_DIR": str(work / f"numba-cold-{len(runs)}")}
        out = work / f"cold-{len(runs)}"
        run(name, truth, gpusimhash_command(source, options, out), out, cold, "cold", 0)
    for name, truth, options in GPUSIMHASH:
        out = work / f"warm-up-{len(runs)}"
        run(name, truth, gpusimhash_command(source, options, out), out, env, "warm-up", 0)

    kept_by_tool: dict[str, list[np.ndarray]] = {}
    for repeat in range(1, args.repeats + 1):
        for name, truth, options in GPUSIMHASH:
            out = work / f"run-{len(runs)}"
            keep = run(
                name, truth, gpusimhash_command(source, options, out), out, env, "timed", repeat
            )
            kept_by_tool.setdefault(name, []).append(keep)
        for peer in PEERS:
            out = work / f"run-{len(runs)}"
            command = [
                sys.executable,
                str(ROOT / "bench" / "_dedup_peers.py"),
                peer,
                str(source),
                str(out),
            ]
            keep = run(peer, "jaccard", command, out, env, "timed", repeat)
            kept_by_tool.setdefault(peer, []).append(keep)

    rows = []
    for tool, kept in kept_by_tool.items():
        timed = [r for r in runs if r["tool"] == tool and r["kind"] == "timed"]
        seconds = [r["seconds"] for r in timed]
        last = timed[-1]
        rows.append(
            {
                "tool": tool,
                "truth": last["truth"],
                "seconds_min": min(seconds),
                "seconds_max": max(seconds),
                "removed": last["removed"],
                "removed_correctly": last["removed_correctly"],
                "perfect_removals": last["perfect_removals"],
                "removal_precision": last["removal_precision"],
                "removal_recall": last["removal_recall"],
                "peak_rss_mib": max(r["peak_rss_bytes"] for r in timed) / 2**20,
                "same_kept_every_repeat": all(np.array_equal(k, kept[0]) for k in kept),
            }
        )
    cold_rows = [
        {
            "tool": r["tool"],
            "seconds": r["seconds"],
            "compile_seconds": r["own_report"]["compile_seconds"],
            "peak_rss_mib": r["peak_rss_bytes"] / 2**20,
        }
        for r in runs
        if r["kind"] == "cold"
    ]
    print_table(
        [{**r, **{k: f"{v:.4g}" for k, v in r.items() if isinstance(v, float)}} for r in rows],
        [
            "tool",
            "truth",
            "seconds_min",
            "seconds_max",
            "removed",
            "removal_precision",
            "removal_recall",
            "peak_rss_mib",
        ],
    )
    if cold_rows:
        print("first run, empty Numba cache:")
        print_table(
            [
                {**r, **{k: f"{v:.4g}" for k, v in r.items() if isinstance(v, float)}}
                for r in cold_rows
            ],
            ["tool", "seconds", "compile_seconds", "peak_rss_mib"],
        )
    path = write_json(
        result,
        {
            "corpus": str(args.corpus),
            "documents": len(lines),
            "selection": selection,
            "threshold": THRESHOLD,
            "repeats": args.repeats,
            "machine_shared": "2 cores shared with other engineers' jobs: see each run's load average",
            "timing": (
                "wall seconds of each tool's whole process, from start to exit, on the same plain-text "
                "file; repeats interleaved (every tool once, then again); gpusimhash on a warm Numba cache "
                "(one warm-up run per setting first): compilation excluded, measured apart in cold"
            ),
            "load_average_at_start": load_at_start,
            "peer_versions": versions,
            "tokenization": tokenization,
            "truth": [truths[m + "_record"] for m in ("jaccard", "cosine")],
            "truth_cross_check": checks,
            "results": rows,
            "cold": cold_rows,
            "runs": runs,
        },
    )
    shutil.rmtree(work)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

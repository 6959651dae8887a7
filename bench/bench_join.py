"""Exact radius join on the CPU: gpusimhash (MIH planner) against FAISS and find_all, one run.

For each setting (corpus, bits, radius): the codes are fingerprinted, then timed side by side on
the same machine state: gpusimhash.near_duplicate_groups (collapse, plan and join, from the raw
codes), gpusimhash.near_duplicate_components (clusters only), and on the distinct codes FAISS
IndexBinaryFlat range search, FAISS IndexBinaryMultiHash range search (exact: 16-bit blocks,
nflip = radius // blocks) and simhash-pybind's find_all (64-bit codes only, when it installs).
Every peer's pair set is checked against gpusimhash's, and the components against the
components of its pairs.

    python bench/bench_join.py [--settings pypi:64:3 synth200k:128:18:flat+multihash ...]

A setting's optional fourth field names its peers (``+``-separated, ``none`` for none), else
``--peers`` applies. The default settings leave out the peers that take too long on 2 cores:
FAISS flat on the PyPI codes (six minutes a radius) and on 1M 256-bit codes, MultiHash beyond
the 200k 128-bit codes.

Corpora: ``pypi`` is the PyPI summaries file; ``synthNk`` / ``synthNm`` are N thousand / million
documents of the accuracy bench's corpus spec (vocabulary 50k, Zipf 0.9, 20-80 tokens, seed 1).
Writes bench/results/join_cpu.json.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import faiss
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DEFAULT_CORPUS, load_lines, peer_path, print_table, write_json

from gpusimhash import fingerprint, near_duplicate_components, near_duplicate_groups
from gpusimhash._cpu._threads import threads
from gpusimhash.cluster._pairs import group_labels
from gpusimhash.codes import code_words
from gpusimhash.datasets.synth import CorpusSpec, generate
from gpusimhash.join import _mih as mih

# Quadratic or near-quadratic peers only where they finish in minutes on 2 cores.
DEFAULT_SETTINGS = [
    "pypi:64:3:multihash+find_all",
    "pypi:64:6:multihash+find_all",
    "synth200k:128:18:flat+multihash",
    "synth200k:256:45:flat",
    "synth1m:128:18:flat",
    "synth1m:256:45:none",
]


def corpus_texts(name: str, pypi: Path) -> list[str]:
    if name == "pypi":
        return load_lines(pypi)
    scale = {"k": 1_000, "m": 1_000_000}[name[-1]]
    spec = CorpusSpec(
        n_docs=int(name[len("synth") : -1]) * scale,
        seed=1,
        vocabulary_size=50_000,
        zipf_exponent=0.9,
        min_length=20,
        max_length=80,
    )
    return [doc.text for doc in generate(spec)]


def pair_keys(pairs: np.ndarray, n: int) -> np.ndarray:
    i, j = np.minimum(pairs[:, 0], pairs[:, 1]), np.maximum(pairs[:, 0], pairs[:, 1])
    return np.unique(i.astype(np.int64) * n + j)


def faiss_range_pairs(index, codes: np.ndarray, radius: int) -> np.ndarray:
    lims, distances, labels = index.range_search(codes, radius + 1)  # FAISS keeps d < radius + 1
    query = np.repeat(np.arange(len(codes)), np.diff(lims.astype(np.int64)))
    keep = (labels > query) & (distances <= radius)
    return np.stack([query[keep], labels[keep]], axis=1)


def find_all_pairs(values: np.ndarray, radius: int) -> np.ndarray:
    from simhash import _simhash  # simhash-pybind's C++ module

    found = _simhash.find_all({int(v) for v in values}, radius + 2, radius)
    flat = np.array([v for pair in found for v in pair], dtype=np.uint64).reshape(-1, 2)
    return np.searchsorted(values, flat)  # values are sorted and distinct


def timed(run):
    start = time.perf_counter()
    result = run()
    return time.perf_counter() - start, result


def measure(args, corpus: str, codes: np.ndarray, radius: int, peer_names: list[str]) -> dict:
    bits = codes.shape[1] * 8
    ours_s, groups = timed(lambda: near_duplicate_groups(codes, max_distance=radius))
    n_unique = groups.n_unique
    unique = np.zeros((n_unique, codes.shape[1]), dtype=np.uint8)
    unique[groups.inverse] = codes  # distinct codes, numbered as in groups
    reference = pair_keys(groups.unique_pairs, n_unique)
    components_s, labels = timed(lambda: near_duplicate_components(codes, max_distance=radius))
    chosen = mih.plan(code_words(unique), bits, radius, workers=threads())
    row = {
        "corpus": corpus,
        "n_docs": len(codes),
        "bits": bits,
        "radius": radius,
        "n_unique": n_unique,
        "unique_pairs": len(reference),
        "plan": chosen.method,
        "plan_blocks": [list(block) for block in chosen.blocks],
        "gpusimhash_s": ours_s,
        "components_s": components_s,
        "components_same": bool(np.array_equal(labels, group_labels(groups))),
    }
    print(
        f"{corpus} {bits} bits r{radius}: {n_unique:,} distinct codes, {len(reference):,} pairs; "
        f"gpusimhash {ours_s:.2f} s, components {components_s:.2f} s "
        f"(same: {row['components_same']}), plan {chosen.method} {chosen.blocks}",
        flush=True,
    )
    peers = {}
    if "flat" in peer_names:

        def flat():
            index = faiss.IndexBinaryFlat(bits)
            index.add(unique)
            return faiss_range_pairs(index, unique, radius)

        peers["faiss_flat"] = flat
    if "multihash" in peer_names and bits % 16 == 0:

        def multihash():
            index = faiss.IndexBinaryMultiHash(bits, bits // 16, 16)
            index.nflip = radius // index.nhash  # exact: some 16-bit block differs <= nflip
            index.add(unique)
            return faiss_range_pairs(index, unique, radius)

        peers["faiss_multihash"] = multihash
    if "find_all" in peer_names and bits == 64 and args.find_all_path is not None:
        values = np.sort(unique.view("<u8")[:, 0])
        order = np.argsort(unique.view("<u8")[:, 0])

        def find_all():
            return order[find_all_pairs(values, radius)]

        peers["find_all"] = find_all
    for name, run in peers.items():
        seconds, pairs = timed(run)
        same = bool(np.array_equal(pair_keys(pairs, n_unique), reference))
        row[f"{name}_s"] = seconds
        row[f"{name}_same_pairs"] = same
        row[f"{name}_over_gpusimhash"] = seconds / ours_s
        print(
            f"  {name}: {seconds:.2f} s ({seconds / ours_s:.1f}x gpusimhash), same pairs: {same}",
            flush=True,
        )
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--settings", nargs="+", default=DEFAULT_SETTINGS, help="corpus:bits:r")
    parser.add_argument("--pypi", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument(
        "--peers", nargs="*", default=["flat", "multihash", "find_all"], help="peers to run"
    )
    parser.add_argument("--peers-dir", type=Path, default=Path(__file__).with_name(".peers"))
    parser.add_argument("--output", default="join_cpu.json", help="file under bench/results/")
    args = parser.parse_args()
    args.find_all_path = None
    if any("find_all" in setting for setting in [*args.settings, *args.peers]):
        args.find_all_path = peer_path("simhash-pybind", args.peers_dir)
        if args.find_all_path is not None:
            sys.path.insert(0, str(args.find_all_path))
    # Warm-up: load every compiled loop once, so no setting pays for it.
    warm = np.random.default_rng(0).integers(0, 256, (5000, 16), dtype=np.uint8)
    mih.join_pairs(code_words(warm), 128, 2, chosen=mih.Plan("mih", ((0, 16, 2),), 0.0))
    near_duplicate_groups(warm, max_distance=18)
    near_duplicate_components(warm, max_distance=18)
    rows = []
    texts_of: dict[str, list[str]] = {}
    for setting in args.settings:
        corpus, bits, radius, *named = setting.split(":")
        peer_names = [p for p in named[0].split("+") if p != "none"] if named else args.peers
        if corpus not in texts_of:
            texts_of.clear()  # one corpus in memory at a time
            texts_of[corpus] = corpus_texts(corpus, args.pypi)
        codes = fingerprint(texts_of[corpus], bits=int(bits), device="cpu")
        rows.append(measure(args, corpus, codes, int(radius), peer_names))
    columns = ["corpus", "bits", "radius", "n_unique", "unique_pairs", "gpusimhash_s"]
    columns += ["components_s"]
    columns += sorted({k for r in rows for k in r if k.endswith("_s") and k not in columns})
    print_table(
        [{k: (f"{v:.2f}" if isinstance(v, float) else v) for k, v in r.items()} for r in rows],
        columns,
    )
    report = {"threads": threads(), "results": rows}
    print(f"wrote {write_json(args.output, report)}")


if __name__ == "__main__":
    main()

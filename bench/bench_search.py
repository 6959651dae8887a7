"""Near-duplicate join and kNN search on a real corpus, side by side with other tools.

For each radius: gpusimhash.near_duplicate_groups against simhash-pybind's find_all, FAISS
IndexBinaryMultiHash range search and FAISS IndexBinaryFlat range search, all on the distinct
codes (identical codes collapsed, as find_all's set input does), checking that every method
returns the same pair set. Then kNN queries per second of SimHashIndex against the raw FAISS
index, and the cost of removing ids (flat: in place; multihash: tombstones).

    python3 bench/bench_search.py /work/shared/data/pypi_summaries.txt.gz
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import faiss
import numpy as np

from gpusimhash import SimHashIndex, fingerprint, near_duplicate_groups

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DEFAULT_CORPUS, best_of, load_lines, write_json


def pair_keys(pairs: np.ndarray, n: int) -> np.ndarray:
    """Sorted unique int64 keys of unordered pairs."""
    i, j = np.minimum(pairs[:, 0], pairs[:, 1]), np.maximum(pairs[:, 0], pairs[:, 1])
    return np.unique(i.astype(np.int64) * n + j)


def faiss_range_pairs(index, codes: np.ndarray, radius: int) -> np.ndarray:
    lims, distances, labels = index.range_search(codes, radius + 1)  # FAISS keeps d < radius
    query = np.repeat(np.arange(len(codes)), np.diff(lims.astype(np.int64)))
    keep = (labels > query) & (distances <= radius)
    return np.stack([query[keep], labels[keep]], axis=1)


def find_all_pairs(values: np.ndarray, radius: int, blocks: int) -> np.ndarray:
    # simhash-pybind and the pure-Python `simhash` share the package name; its C++ extension
    # module is simhash._simhash.
    from simhash import _simhash

    found = _simhash.find_all({int(v) for v in values}, blocks, radius)
    flat = np.array([v for pair in found for v in pair], dtype=np.uint64).reshape(-1, 2)
    return np.searchsorted(values, flat)  # values are sorted and distinct


def join_rows(args, codes: np.ndarray) -> list[dict]:
    values = np.unique(codes.view("<u8")[:, 0]) if codes.shape[1] == 8 else None
    rows = []
    for radius in args.radii:
        seconds, groups = best_of(1, lambda r=radius: near_duplicate_groups(codes, max_distance=r))
        n_unique = groups.n_unique
        unique = np.zeros((n_unique, codes.shape[1]), dtype=np.uint8)
        unique[groups.inverse] = codes  # distinct codes, numbered as in groups
        reference = pair_keys(groups.unique_pairs, n_unique)
        expand_seconds, expanded = best_of(1, groups.pairs)
        row = {
            "radius": radius,
            "n_docs": len(codes),
            "n_unique": n_unique,
            "unique_pairs": len(reference),
            "expanded_pairs": len(expanded),
            "gpusimhash_s": seconds,
            "gpusimhash_expand_s": expand_seconds,
        }
        del expanded
        peers = {}
        if values is not None and "find_all" in args.peers:
            blocks = radius + 2
            peers[f"find_all_b{blocks}"] = lambda r=radius, b=blocks: find_all_pairs(values, r, b)
        if "multihash" in args.peers and codes.shape[1] * 8 % 16 == 0:

            def multihash(r=radius, unique=unique):
                index = faiss.IndexBinaryMultiHash(codes.shape[1] * 8, codes.shape[1] // 2, 16)
                index.nflip = r // index.nhash  # exact: some 16-bit block differs <= nflip bits
                index.add(unique)
                return faiss_range_pairs(index, unique, r)

            peers["faiss_multihash"] = multihash
        if "flat" in args.peers:

            def flat(r=radius, unique=unique):
                index = faiss.IndexBinaryFlat(codes.shape[1] * 8)
                index.add(unique)
                return faiss_range_pairs(index, unique, r)

            peers["faiss_flat_range"] = flat
        for name, run in peers.items():
            peer_seconds, pairs = best_of(1, run)
            same = bool(np.array_equal(pair_keys(pairs, n_unique), reference))
            row[f"{name}_s"] = peer_seconds
            row[f"{name}_same_pairs"] = same
            print(f"  radius {radius} {name}: {peer_seconds:.2f} s, same pair set: {same}")
        rows.append(row)
    return rows


def knn_rows(args, codes: np.ndarray) -> list[dict]:
    rng = np.random.default_rng(0)
    queries = codes[rng.choice(len(codes), args.queries, replace=False)]
    bits = codes.shape[1] * 8
    ours = SimHashIndex(bits)
    ours.add(codes)
    raw = faiss.IndexBinaryFlat(bits)
    raw.add(codes)
    raw_s, raw_result = best_of(3, lambda: raw.search(queries, args.k))
    ours_s, result = best_of(3, lambda: ours.search(queries, args.k))
    same = bool(np.array_equal(raw_result[0], result.distances))
    rows = [
        {
            "kind": "flat",
            "queries": args.queries,
            "k": args.k,
            "raw_faiss_qps": args.queries / raw_s,
            "simhashindex_qps": args.queries / ours_s,
            "overhead_pct": 100 * (ours_s / raw_s - 1),
            "same_distances": same,
        }
    ]
    print(
        f"  kNN flat: raw {args.queries / raw_s:.0f} q/s, SimHashIndex {args.queries / ours_s:.0f} q/s"
    )
    # Removal cost: flat removes in place (one pass per call), multihash keeps tombstones.
    remove_ids = rng.choice(len(codes), args.remove, replace=False)
    flat_remove_s, _ = best_of(1, lambda: ours.remove(remove_ids))
    one_id = np.setdiff1d(ours.ids()[:2], remove_ids)[:1]
    one_s, _ = best_of(1, lambda: ours.remove(one_id))
    multihash = SimHashIndex(bits, kind="multihash")
    multihash.add(codes)
    before_s, _ = best_of(3, lambda: multihash.search(queries, args.k))
    tomb_s, _ = best_of(1, lambda: multihash.remove(remove_ids))
    after_s, _ = best_of(3, lambda: multihash.search(queries, args.k))
    compact_s, _ = best_of(1, multihash.compact)
    rows.append(
        {
            "kind": "remove",
            "ids_removed": args.remove,
            "flat_remove_batch_s": flat_remove_s,
            "flat_remove_one_id_s": one_s,
            "tombstone_remove_s": tomb_s,
            "multihash_knn_qps_before": args.queries / before_s,
            "multihash_knn_qps_with_tombstones": args.queries / after_s,
            "multihash_compact_s": compact_s,
        }
    )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", nargs="?", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--bits", type=int, default=64)
    parser.add_argument("--limit", type=int, default=None, help="first N documents only")
    parser.add_argument("--radii", type=int, nargs="+", default=[3, 6])
    parser.add_argument(
        "--peers",
        nargs="*",
        default=["find_all", "multihash", "flat"],
        help="peers to run: find_all multihash flat",
    )
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--remove", type=int, default=1000)
    parser.add_argument("--output", default="search_cpu.json", help="file under bench/results/")
    args = parser.parse_args()

    texts = load_lines(args.corpus, args.limit)
    fingerprint_s, codes = best_of(1, lambda: fingerprint(texts, bits=args.bits, device="cpu"))
    print(f"{len(texts)} documents fingerprinted in {fingerprint_s:.2f} s ({args.bits} bits)")
    joins = join_rows(args, codes)
    knn = knn_rows(args, codes)

    print()
    print("radius  unique_pairs  expanded_pairs  method                 seconds  same_pairs")
    for row in joins:
        print(
            f"{row['radius']:>6}  {row['unique_pairs']:>12}  {row['expanded_pairs']:>14}  "
            f"{'gpusimhash (groups)':<22} {row['gpusimhash_s']:>7.2f}  reference"
        )
        print(f"{'':>36}{'gpusimhash (expand)':<22} {row['gpusimhash_expand_s']:>7.2f}")
        for key in row:
            if key.endswith("_same_pairs"):
                name = key[: -len("_same_pairs")]
                print(f"{'':>36}{name:<22} {row[name + '_s']:>7.2f}  {row[key]}")
    flat = knn[0]
    print(
        f"\nkNN k={flat['k']}, {flat['queries']} queries: raw FAISS {flat['raw_faiss_qps']:.0f} q/s, "
        f"SimHashIndex {flat['simhashindex_qps']:.0f} q/s, overhead {flat['overhead_pct']:.1f}%"
    )
    print(json.dumps(knn[1], indent=1))
    report = {
        "corpus": str(args.corpus),
        "bits": args.bits,
        "n_docs": len(texts),
        "fingerprint_s": fingerprint_s,
        "joins": joins,
        "knn": knn,
    }
    print(f"wrote {write_json(args.output, report)}")


if __name__ == "__main__":
    main()

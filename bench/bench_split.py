"""Crowded buckets of the distributed join: what splitting one into share tasks costs and gains.

``shares``: one crowded bucket of ``n`` distinct codes (every code shares table 0's key; the
other bits random, or one code's with 10% (128 bits) or 20% (256 bits) of them flipped:
similar documents, few pairs within the radius but many candidates), joined whole by
`gpusimhash.join._mih.join_pairs` and in ``k`` shares by `gpusimhash.join._mih.join_share`
(``k``: as the pipeline would choose from the plan's estimate, at least 2), one thread, here:
the whole join's time, the plan's time, the shares' total (the CPU split costs: every share
builds the plan's tables) and their slowest (the wall time with one worker per share). At
128 bits radius 3 (4 tables of 32 bits: the planner picks MIH inside the bucket) and 256 bits
radius 68 (the default threshold: 69 tables of 3-4 bits, brute force inside the bucket).

``dask``: the join stage of `gpusimhash.distributed.dedup` (collapse, tables, crowded buckets)
on a process cluster of 1 and 2 workers (one thread each), ``--codes`` codes in 8 partitions
of which ``--crowded`` share table 0's key, with buckets split at ``SPLIT_CODES`` and, for
comparison, never split: wall time from the first task to the last candidate pair, the
longest task (what bounds the join's time however many workers), and whether the candidate
pairs are the same.

    flock /work/scratch/bench.lock python bench/bench_split.py shares
    flock /work/scratch/bench.lock python bench/bench_split.py dask [--codes 1500000 --crowded 300000]

Writes ``bench/results/split_shares.json`` or ``bench/results/split_dask.json``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from functools import partial
from pathlib import Path
from types import SimpleNamespace

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import print_table, write_json

from gpusimhash.codes import code_words
from gpusimhash.dedup.options import DedupOptions
from gpusimhash.distributed import _tables as tables
from gpusimhash.distributed import local_cluster
from gpusimhash.distributed._pipeline import _Run
from gpusimhash.fingerprinting import FingerprintSettings
from gpusimhash.join import _mih as mih
from gpusimhash.join._groups import collapse

SETTINGS = ((128, 3), (256, 68))  # (bits, radius)
SIZES = {128: (4096, 16384, 65536, 262144, 1048576), 256: (4096, 16384, 65536)}
SKIP = {(128, 1048576, "biased")}  # about 40 s whole
# flipped bits of the biased codes: about 23 of 128 apart (radius 3), 82 of 256 (radius 68)
FLIPS = {128: 0.1, 256: 0.2}
SPLIT_CODES = tables.SPLIT_CODES  # the default (the dask part sets it on every process)
if os.environ.get("SPLIT_BENCH_QUICK"):
    SIZES = {128: (4096,), 256: (4096,)}


def crowded_codes(rng: np.random.Generator, n: int, bits: int, radius: int, kind: str):
    """``n`` codes with the same key on table 0's block, random or near-duplicates elsewhere."""
    codes = rng.integers(0, 256, (n, bits // 8), dtype=np.uint8)
    if kind == "biased":  # similar documents: one code (the same for every call), bits flipped
        base = np.random.default_rng(bits).integers(0, 2, (1, bits), dtype=np.uint8)
        flipped = base ^ (rng.random((n, bits)) < FLIPS[bits])
        codes = np.packbits(flipped, axis=1, bitorder="little")
    lo, width = tables.pigeonhole_blocks(bits, radius)[0]
    bits_of = np.unpackbits(codes, axis=1, bitorder="little")
    bits_of[:, lo : lo + width] = 0
    return np.packbits(bits_of, axis=1, bitorder="little")


def timed(run):
    """Wall seconds of ``run()`` and its result."""
    start = time.perf_counter()
    result = run()
    return time.perf_counter() - start, result


def bench_shares(workers: int) -> list[dict]:
    """Whole join against its shares, for each setting, size and kind of bucket."""
    rows = []
    for bits, radius in SETTINGS:  # compile and warm up first
        words, _ = collapse(
            code_words(crowded_codes(np.random.default_rng(0), 4096, bits, radius, "biased"))
        )
        chosen = mih.plan(words, bits, radius)
        mih.join_pairs(words, bits, radius, chosen=chosen)
        mih.join_share(words, bits, radius, 0, 2, chosen=chosen)
    for bits, radius in SETTINGS:
        for n in SIZES[bits]:
            for kind in ("random", "biased"):
                if (bits, n, kind) in SKIP:
                    continue
                rng = np.random.default_rng(n)
                words, _ = collapse(code_words(crowded_codes(rng, n, bits, radius, kind)))
                plan_s, chosen = timed(partial(mih.plan, words, bits, radius))
                whole_s, pairs = timed(partial(mih.join_pairs, words, bits, radius, chosen=chosen))
                # the pipeline's count, at least 2 to show what splitting costs
                chosen_shares = tables.share_count(chosen.seconds, workers)
                shares = max(2, chosen_shares)
                times, found = [], 0
                for s in range(shares):
                    share = partial(mih.join_share, words, bits, radius, s, shares, chosen=chosen)
                    share_s, part = timed(share)
                    times.append(share_s)
                    found += len(part)
                assert found == len(pairs), (found, len(pairs))
                row = {
                    "bits": bits,
                    "radius": radius,
                    "codes": int(words.shape[0]),
                    "kind": kind,
                    "plan": chosen.method,
                    "plan_s": round(plan_s, 4),
                    "estimate_s": round(chosen.seconds, 4),
                    "whole_s": round(whole_s, 4),
                    "pairs": len(pairs),
                    "pipeline_shares": chosen_shares,
                    "shares": shares,
                    "shares_total_s": round(sum(times), 4),
                    "slowest_share_s": round(max(times), 4),
                    "cpu_ratio": round(sum(times) / whole_s, 3),
                    "wall_ratio": round(max(times) / whole_s, 3),
                }
                print_table([row], list(row))
                rows.append(row)
    return rows


def synthetic_part(seed: int, n: int, crowded: int, bits: int, radius: int):
    """A partition's codes (a task): the first ``crowded`` share table 0's key.

    Only what the join reads (`gpusimhash.distributed._partitions.collapse_pieces`): the codes
    and every document's number of features.
    """
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, 256, (n, bits // 8), dtype=np.uint8)
    codes[:crowded] = crowded_codes(rng, crowded, bits, radius, "biased")
    features = SimpleNamespace(sizes=np.ones(n, dtype=np.int64))
    return SimpleNamespace(codes=codes, features=features)


def join_stage(client, n_codes: int, n_crowded: int, split: bool) -> dict:
    """Run the distributed join stage on synthetic partitions; return its time and pairs."""
    from dask.distributed import get_task_stream, wait

    bits, radius, n_parts = 128, 3, 8
    split_codes = SPLIT_CODES if split else 1 << 62

    def set_split() -> None:
        tables.SPLIT_CODES = split_codes

    client.run(set_split)
    set_split()
    options = DedupOptions(max_distance=radius)
    # the join's inputs set by hand: `_Run.execute` would fingerprint files first
    paths = [Path(f"part{p}") for p in range(n_parts)]
    workers = len(client.scheduler_info()["workers"])
    run = _Run(client, paths, Path("."), FingerprintSettings(bits=bits), options, workers, False)
    run.token = f"split{int(split)}{time.monotonic_ns()}"
    run.limit = options.threshold(bits)
    run.source = "codes"
    sizes = [n_codes // n_parts] * n_parts
    crowded = [n_crowded // n_parts] * n_parts
    run.offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    start = time.perf_counter()
    run.parts = [
        client.submit(synthetic_part, p, sizes[p], crowded[p], bits, radius, pure=False)
        for p in range(n_parts)
    ]
    wait(run.parts)
    made = time.perf_counter()
    with get_task_stream(client) as stream:
        stats = run._join(run._start_join())
        pairs = np.concatenate(client.gather(run.candidates))
    done = time.perf_counter()
    longest = max(
        (s["stop"] - s["start"], str(task["key"]).split("-")[1])
        for task in stream.data
        for s in task["startstops"]
        if s["action"] == "compute"
    )
    keys = np.sort(pairs[:, 0] * n_codes + pairs[:, 1])
    return {
        "join_s": round(done - made, 3),
        "longest_task_s": round(longest[0], 3),
        "longest_task": longest[1],
        "parts_s": round(made - start, 3),
        "crowded_buckets": stats["crowded_buckets"],
        "split_buckets": stats["split_buckets"],
        "share_tasks": stats["share_tasks"],
        "pairs": int(keys.size),
        "keys": keys,
    }


def bench_dask(n_codes: int, n_crowded: int, repeat: int) -> list[dict]:
    """The join stage with 1 and 2 workers, crowded buckets split or not."""
    rows = []
    reference = None
    for n_workers in (1, 2):
        with local_cluster(n_workers, 1, dashboard_address=":0") as cluster:
            from dask.distributed import Client

            with Client(cluster) as client:
                join_stage(client, 20_000, 5_000, True)  # imports and compiles everywhere
                for r in range(repeat):
                    for split in (True, False):
                        load = os.getloadavg()
                        row = join_stage(client, n_codes, n_crowded, split)
                        keys = row.pop("keys")
                        reference = keys if reference is None else reference
                        row = {
                            "workers": n_workers,
                            "split": split,
                            "repeat": r,
                            **row,
                            "same_pairs": bool(np.array_equal(keys, reference)),
                            "load_before": [round(x, 2) for x in load],
                        }
                        print_table([row], list(row))
                        rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("part", choices=["shares", "dask"])
    parser.add_argument("--codes", type=int, default=1_500_000)
    parser.add_argument("--crowded", type=int, default=300_000)
    parser.add_argument("--workers", type=int, default=2, help="shares cap (shares part)")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--flips", type=float, default=FLIPS[128], help="dask: biased codes")
    args = parser.parse_args()
    payload = {"split_codes": tables.SPLIT_CODES, "load_average_before": os.getloadavg()}
    if args.part == "shares":
        rows = bench_shares(args.workers)
        write_json("split_shares.json", {**payload, "workers": args.workers, "rows": rows})
    else:
        FLIPS[128] = args.flips
        rows = bench_dask(args.codes, args.crowded, args.repeat)
        fastest = {}
        for row in rows:
            key = (row["workers"], row["split"])
            if key not in fastest or row["join_s"] < fastest[key]["join_s"]:
                fastest[key] = row
        summary = [
            {
                "workers": w,
                "split_s": fastest[w, True]["join_s"],
                "unsplit_s": fastest[w, False]["join_s"],
                "unsplit_over_split": round(
                    fastest[w, False]["join_s"] / fastest[w, True]["join_s"], 2
                ),
            }
            for w in (1, 2)
        ]
        summary.append(
            {
                "workers": "1 over 2",
                "split_s": round(fastest[1, True]["join_s"] / fastest[2, True]["join_s"], 2),
                "unsplit_s": round(fastest[1, False]["join_s"] / fastest[2, False]["join_s"], 2),
            }
        )
        print_table(summary, ["workers", "split_s", "unsplit_s", "unsplit_over_split"])
        write_json(
            "split_dask.json",
            {
                **payload,
                "codes": args.codes,
                "crowded": args.crowded,
                "flips": args.flips,
                "rows": rows,
                "fastest": summary,
            },
        )


if __name__ == "__main__":
    main()

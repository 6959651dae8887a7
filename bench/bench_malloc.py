"""A distributed worker's work under glibc's default, Dask's and `local_cluster`'s malloc settings.

Dask's nannies start their workers with ``MALLOC_TRIM_THRESHOLD_=65536``; `local_cluster` sets
glibc's mmap and trim thresholds to the ceilings its adaptive ones reach (32 and 64 MiB). Each
round runs, in a fresh process per setting and in turns, what one worker does with the corpus's
first ``--docs`` lines in ``--parts`` JSONL partitions at the defaults, on one thread: every
partition fingerprinted (`gpusimhash.distributed._partitions.fingerprint_part`), then the
feature index built from all of them and probed whole (`gpusimhash.distributed._features`).
Each figure is the best of the rounds, with the pairs of codes found (the same under each);
nothing is compiled. Prints a table and writes
bench/results/malloc_cpu.json.

    python bench/bench_malloc.py [CORPUS] [--docs 200000] [--parts 16] [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DEFAULT_CORPUS, load_lines, print_table, write_json

SETTINGS = {
    "glibc's default": {},
    "Dask's nanny": {"MALLOC_TRIM_THRESHOLD_": "65536"},
    "local_cluster": {
        "MALLOC_MMAP_THRESHOLD_": str(32 << 20),
        "MALLOC_TRIM_THRESHOLD_": str(64 << 20),
    },
}


def worker_work(folder: Path) -> dict[str, float]:
    """Fingerprint every partition, then build and probe the feature index (one thread)."""
    from gpusimhash.cli.options import use_threads
    from gpusimhash.dedup.options import DedupOptions
    from gpusimhash.distributed import _features as features
    from gpusimhash.distributed import _partitions as partitions
    from gpusimhash.fingerprinting import FingerprintSettings

    use_threads(1)
    options = DedupOptions()
    read = partitions.ReadOptions(
        format=options.format,
        text_field=options.text_field,
        id_field=None,
        batch_size=options.batch_size,
        score_field=None,
        jaccard=False,
        device="cpu",
    )
    settings = FingerprintSettings(bits=256)
    start = time.perf_counter()
    parts = [partitions.fingerprint_part(p, settings, read) for p in sorted(folder.iterdir())]
    fingerprinted = time.perf_counter()
    indexed = features.index_documents(
        [features.featured_documents(p) for p in parts], options.threshold(256), 2
    )
    built = time.perf_counter()
    found = [features.probe_share(indexed, s, None) for s in range(2)]
    probed = time.perf_counter()
    return {
        "pairs": sum(len(f[0]) for f in found),
        "fingerprint": fingerprinted - start,
        "index": built - fingerprinted,
        "probe": probed - built,
        "total": probed - start,
    }


def _in_process(folder: Path, environ: dict[str, str]) -> dict[str, float]:
    """Run `worker_work` in a fresh process with these variables (and no others of malloc)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")} | environ
    code = (
        f"import sys, json; sys.path.insert(0, {str(Path(__file__).parent)!r}); "
        f"from bench_malloc import worker_work; from pathlib import Path; "
        f"print(json.dumps(worker_work(Path({str(folder)!r}))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", nargs="?", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--docs", type=int, default=200_000)
    parser.add_argument("--parts", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    lines = load_lines(args.corpus, args.docs)
    with tempfile.TemporaryDirectory(prefix="gpusimhash-malloc-") as scratch:
        folder = Path(scratch)
        for p in range(args.parts):
            chunk = lines[len(lines) * p // args.parts : len(lines) * (p + 1) // args.parts]
            (folder / f"part-{p:03d}.jsonl").write_text(
                "".join(json.dumps({"text": line}) + "\n" for line in chunk)
            )
        runs = {name: [] for name in SETTINGS}
        for _ in range(args.rounds):
            for name, environ in SETTINGS.items():
                runs[name].append(_in_process(folder, environ))
    best = {name: {k: min(r[k] for r in rs) for k in rs[0]} for name, rs in runs.items()}
    base = best["glibc's default"]["total"]
    table = [
        {
            "malloc": name,
            **{k: round(v, 3) for k, v in b.items()},
            "vs default": round(b["total"] / base, 2),
        }
        for name, b in best.items()
    ]
    print_table(table, list(table[0]))
    path = write_json(
        "malloc_cpu.json",
        {
            "corpus": str(args.corpus),
            "docs": len(lines),
            "parts": args.parts,
            "rounds": args.rounds,
            "settings": SETTINGS,
            "runs": runs,
            "table": table,
        },
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

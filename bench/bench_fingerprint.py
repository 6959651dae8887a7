"""Text to 64-bit codes on the CPU: gpusimhash against the simhash and simhash-pybind packages.

Times tokenization (text -> feature batch) and hashing (feature batch -> codes) apart, then
the whole path, from Python strings and from a pyarrow string array (UTF-8 bytes, no string per
document), and each peer's own text-to-fingerprint path in a subprocess of its own, all in one
run on the same texts (file reading excluded everywhere). Prints a table and writes
bench/results/fingerprint_cpu.json.

    python bench/bench_fingerprint.py [CORPUS] [--limit N] [--skip-peers]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (
    DEFAULT_CORPUS,
    best_of,
    load_lines,
    peer_path,
    print_table,
    write_json,
)

from gpusimhash import TextFeaturizer, fingerprint
from gpusimhash._cpu._fingerprint import fingerprint_batch
from gpusimhash.utf8 import Utf8Texts

PEERS = {
    "simhash-pybind words": "simhash-pybind",
    "simhash words": "simhash",
    "simhash default char4": "simhash",
}


def measure_ours(texts: Any, featurizer: TextFeaturizer, bits: int, repeats: int) -> dict:
    fingerprint(texts[:1000], featurizer=featurizer, bits=bits, device="cpu")  # compile, warm up
    # an Arrow array is tokenized as the Utf8Texts view of its buffers
    batch_input = texts if isinstance(texts, list) else Utf8Texts.from_arrow(texts)
    tokenize_s, batch = best_of(repeats, lambda: featurizer.transform(batch_input))
    hash_s, _ = best_of(repeats, lambda: fingerprint_batch(batch, bits=bits, seed=0))
    total_s, _ = best_of(
        repeats, lambda: fingerprint(texts, featurizer=featurizer, bits=bits, device="cpu")
    )
    return {
        "tokenize_s": round(tokenize_s, 3),
        "hash_s": round(hash_s, 3),
        "seconds": total_s,
        "features": batch.nnz,
        "features_per_s": round(batch.nnz / hash_s),
    }


def measure_peer(name: str, corpus: Path, limit: int, peers_dir: Path) -> dict | None:
    folder = peer_path(PEERS[name], peers_dir)
    if folder is None:
        return None
    env = dict(os.environ, PYTHONPATH=str(folder))
    done = subprocess.run(
        [sys.executable, str(Path(__file__).with_name("_peers.py")), name, str(corpus), str(limit)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    return json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", nargs="?", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--limit", type=int, default=0, help="first N documents only (0: all)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-peers", action="store_true")
    parser.add_argument("--peers-dir", type=Path, default=Path(__file__).with_name(".peers"))
    args = parser.parse_args()

    texts = load_lines(args.corpus, args.limit or None)
    arrow = pa.array(texts, pa.string())
    n = len(texts)
    rows = []
    for label, featurizer, bits in [
        ("gpusimhash words 64", TextFeaturizer(), 64),
        ("gpusimhash words 256", TextFeaturizer(), 256),
        ("gpusimhash char4 64", TextFeaturizer("char", 4), 64),
    ]:
        for source, documents in (("", texts), (" (Arrow)", arrow)):
            result = measure_ours(documents, featurizer, bits, args.repeats)
            rows.append({"pipeline": label + source, **result})
    if not args.skip_peers:
        for name in PEERS:
            result = measure_peer(name, args.corpus, args.limit, args.peers_dir)
            if result is not None:
                rows.append({"pipeline": name, "seconds": result["seconds"]})
    reference = next((r["seconds"] for r in rows if r["pipeline"] == "simhash-pybind words"), None)
    for row in rows:  # rates from the unrounded seconds, then round for the table and JSON
        row["docs_per_s"] = round(n / row["seconds"])
        if reference:
            row["speedup_vs_simhash_pybind"] = round(reference / row["seconds"], 2)
        row["seconds"] = round(row["seconds"], 3)
    print(f"{n} documents from {args.corpus}")
    print_table(
        rows,
        [
            "pipeline",
            "seconds",
            "docs_per_s",
            "tokenize_s",
            "hash_s",
            "features_per_s",
            "speedup_vs_simhash_pybind",
        ],
    )
    path = write_json(
        "fingerprint_cpu.json",
        {
            "benchmark": "text to codes on the CPU, file reading excluded, best of repeats for gpusimhash",
            "corpus": str(args.corpus),
            "documents": n,
            "results": rows,
        },
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

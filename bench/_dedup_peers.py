"""MinHash LSH dedup peers of bench_peers.py, one per process: text file in, kept list out.

Usage: python _dedup_peers.py NAME INPUT OUT_DIR. Reads INPUT (one document per line),
tokenizes every line as gpusimhash's default featurizer does (lower-cased ``\\w+`` runs;
bench_peers.py checks the sets equal ``TextFeaturizer().features`` keys on every document),
deduplicates keep-first and writes OUT_DIR/kept.jsonl (``{"id": row, "text": ...}`` per kept
document, in input order, as ``gpusimhash dedup`` writes it). Prints one JSON object: stage
seconds, the peer's version and parameters.

Keep-first, for every peer: documents are visited in input order; a featureless document is
kept and never indexed (as gpusimhash keeps it); any other is removed when the index, which
holds only kept documents, returns a candidate for it (rensa's deduplicator: a candidate whose
estimated Jaccard reaches the threshold), else it is kept and inserted.
"""

from __future__ import annotations

import json
import re
import sys
import time
from importlib import metadata
from pathlib import Path

NUM_PERM = 128
THRESHOLD = 0.8
RENSA_LSH_BANDS = 16  # 8 rows per band: a pair at Jaccard 0.8 collides with probability 0.95
WORD = re.compile(r"\w+")
CAPITAL_I_DOT = "\u0130"  # str.lower() maps it to two code points, gpusimhash's table to itself
CAPITAL_SIGMA = "\u03a3"  # str.lower() gives a final sigma at a word's end, the table always σ
SMALL_SIGMA = "\u03c3"


def tokens(text: str) -> list[str]:
    """Lower-cased word tokens of a text, in order, as gpusimhash's default featurizer has them.

    gpusimhash lower-cases each code point alone (the simple case mapping); ``str.lower()``
    differs only where it looks at context or gives two code points, handled first.
    """
    text = text.replace(CAPITAL_SIGMA, SMALL_SIGMA)
    if CAPITAL_I_DOT in text:
        lowered = CAPITAL_I_DOT.join(part.lower() for part in text.split(CAPITAL_I_DOT))
    else:
        lowered = text.lower()
    return WORD.findall(lowered)


def words(text: str) -> list[str]:
    """Distinct lower-cased word tokens of a text, in order of first occurrence."""
    return list(dict.fromkeys(tokens(text)))


def read_lines(path: Path) -> list[str]:
    """One document per line, as ``gpusimhash dedup`` reads a plain-text file."""
    lines = path.read_bytes().decode("utf-8").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def rensa_deduplicator(sets: list[list[str]]) -> tuple[list[bool], dict]:
    """rensa's documented dedup: ``RMinHashDeduplicator(use_lsh=True).add_pairs``."""
    from rensa import RMinHashDeduplicator

    dedup = RMinHashDeduplicator(threshold=THRESHOLD, num_perm=NUM_PERM, use_lsh=True)
    present = [i for i, s in enumerate(sets) if s]
    added = dedup.add_pairs((str(i), sets[i]) for i in present)
    keep = [True] * len(sets)
    for i, was_added in zip(present, added, strict=True):
        keep[i] = was_added
    return keep, {"num_bands": "rensa's default", "seed": 42, "verify": "estimated Jaccard"}


def keep_first(n: int, present: list[int], minhashes, lsh) -> list[bool]:
    """Keep each document unless the LSH index already holds a candidate; index the kept ones."""
    keep = [True] * n
    for i, minhash in zip(present, minhashes, strict=True):
        if lsh.query(minhash):
            keep[i] = False
        else:
            lsh.insert(i, minhash)
    return keep


def rensa_lsh(sets: list[list[str]]) -> tuple[list[bool], dict]:
    """rensa ``RMinHash.from_token_sets`` and ``RMinHashLSH``, keep-first on LSH candidates."""
    from rensa import RMinHash, RMinHashLSH

    present = [i for i, s in enumerate(sets) if s]
    minhashes = RMinHash.from_token_sets([sets[i] for i in present], num_perm=NUM_PERM, seed=42)
    lsh = RMinHashLSH(threshold=THRESHOLD, num_perm=NUM_PERM, num_bands=RENSA_LSH_BANDS)
    keep = keep_first(len(sets), present, minhashes, lsh)
    return keep, {"num_bands": RENSA_LSH_BANDS, "seed": 42, "verify": "none"}


def datasketch_lsh(sets: list[list[str]]) -> tuple[list[bool], dict]:
    """datasketch ``MinHash.bulk`` and ``MinHashLSH``, keep-first on LSH candidates."""
    from datasketch import MinHash, MinHashLSH

    present = [i for i, s in enumerate(sets) if s]
    minhashes = MinHash.bulk([[w.encode() for w in sets[i]] for i in present], num_perm=NUM_PERM)
    lsh = MinHashLSH(threshold=THRESHOLD, num_perm=NUM_PERM)
    keep = keep_first(len(sets), present, minhashes, lsh)
    return keep, {"num_bands": lsh.b, "rows_per_band": lsh.r, "seed": 1, "verify": "none"}


PEERS = {
    "rensa RMinHashDeduplicator": ("rensa", rensa_deduplicator),
    "rensa RMinHashLSH": ("rensa", rensa_lsh),
    "datasketch MinHashLSH": ("datasketch", datasketch_lsh),
}


def main(name: str, source: Path, out: Path) -> dict:
    """Run one peer; return its stage seconds, version and parameters."""
    package, run = PEERS[name]
    start = time.perf_counter()
    lines = read_lines(source)
    sets = [words(line) for line in lines]
    tokenized = time.perf_counter()
    keep, parameters = run(sets)
    deduplicated = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "kept.jsonl", "w", encoding="utf-8") as handle:
        handle.writelines(
            json.dumps({"id": i, "text": line}, ensure_ascii=False) + "\n"
            for i, (line, kept) in enumerate(zip(lines, keep, strict=True))
            if kept
        )
    return {
        "peer": name,
        "package": package,
        "version": metadata.version(package),
        "parameters": {"num_perm": NUM_PERM, "threshold": THRESHOLD, **parameters},
        "read_tokenize_s": tokenized - start,
        "dedup_s": deduplicated - tokenized,
        "write_s": time.perf_counter() - deduplicated,
        "kept": sum(keep),
    }


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]))))

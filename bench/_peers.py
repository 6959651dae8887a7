"""Peer SimHash pipelines, run one per subprocess with the peer alone on sys.path.

Usage: python _peers.py NAME CORPUS LIMIT. Prints one JSON object: seconds and documents.
"""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import load_lines

WORD = re.compile(r"\w+")


def simhash_pybind_words(texts):
    """simhash-pybind: Python tokenization, its md5 feature hash, its C++ compute."""
    import simhash

    return [
        simhash.compute([simhash.unsigned_hash(t.encode()) for t in WORD.findall(s.lower())])
        for s in texts
    ]


def simhash_1e0ng_words(texts):
    """The simhash package on word tokens."""
    from simhash import Simhash

    return [Simhash(WORD.findall(s.lower())).value for s in texts]


def simhash_1e0ng_default(texts):
    """The simhash package with its default text features (character 4-grams)."""
    from simhash import Simhash

    return [Simhash(s).value for s in texts]


PIPELINES = {
    "simhash-pybind words": simhash_pybind_words,
    "simhash words": simhash_1e0ng_words,
    "simhash default char4": simhash_1e0ng_default,
}

if __name__ == "__main__":
    name, corpus, limit = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]) or None
    texts = load_lines(corpus, limit)
    PIPELINES[name](texts[:100])
    start = time.perf_counter()
    PIPELINES[name](texts)
    print(json.dumps({"seconds": time.perf_counter() - start, "docs": len(texts)}))

"""The device check's inputs: the corpus, random texts and feature batches, a synthetic CSR."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from gpusimhash.features import FeatureBatch

ALPHABET = list("abcdefghijklmnop ABCDEF  .,_-\n\t0123") + list("éİßΣς日本𝐀😀\u00a0\u2028")


def random_texts(rng: np.random.Generator, n_docs: int) -> list[str]:
    """Random unicode texts (astral characters, empty documents, a few long ones)."""
    lengths = rng.integers(0, 80, n_docs)
    lengths[rng.random(n_docs) < 0.001] = 20_000
    pool = rng.choice(ALPHABET, size=int(lengths.sum()))
    ends = np.cumsum(lengths)
    return ["".join(pool[end - length : end]) for end, length in zip(ends, lengths, strict=True)]


def random_batch(rng: np.random.Generator, n_docs: int, weighted: bool) -> FeatureBatch:
    """Random feature batch (zipf-ish states, 0 to 40 entries per document)."""
    offsets = np.zeros(n_docs + 1, dtype=np.int64)
    np.cumsum(rng.integers(0, 41, n_docs), out=offsets[1:])
    states = (rng.zipf(1.3, offsets[-1]) % 2**32).astype(np.uint32) * np.uint32(2654435761)
    weights = rng.normal(size=offsets[-1]) if weighted else None
    return FeatureBatch(states, offsets, weights)


def load_corpus(path: Path, n_docs: int) -> list[str]:
    """The first ``n_docs`` lines of the corpus, repeated if it is shorter."""
    with gzip.open(path, "rt", encoding="utf-8") as stream:
        lines = stream.read().splitlines()
    repeats = -(-n_docs // len(lines))
    return (lines * repeats)[:n_docs]


def synthetic_csr(rng: np.random.Generator, n_docs: int, n_features: int) -> tuple[Any, list[str]]:
    """A CSR matrix with about 20 non-zeros per row and its vocabulary."""
    per_row = rng.integers(1, 40, n_docs)
    indptr = np.zeros(n_docs + 1, dtype=np.int64)
    np.cumsum(per_row, out=indptr[1:])
    indices = (rng.zipf(1.2, indptr[-1]) % n_features).astype(np.int32)
    data = rng.random(indptr[-1]) * 5
    matrix = sp.csr_matrix((data, indices, indptr), shape=(n_docs, n_features))
    matrix.sum_duplicates()
    return matrix, [f"feature{i}" for i in range(n_features)]

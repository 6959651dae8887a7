"""The parity probe's cases: small fixed inputs, the CPU's answers, and the GPU calls to compare.

Each kernel family gets a few thousand documents or codes, seeded so that every process probes
the same inputs:

- ``fingerprint``: 2,000 texts (mixed scripts, upper case, punctuation, empty ones, a few long
  enough to be split into several tasks), through the str and the UTF-8 paths under four
  featurizers (word counts, word-pair presence and fitted tfidf at 64 bits, character 3-grams
  by log tf at 256 bits); and 2,000 feature documents, unit weights at 64 and 1024 bits,
  signed weights at 64 and 256 bits. Every text
  and accumulation kernel runs, each unit-weight size class included, through the pipeline.
- ``join``: clustered codes, one cluster crowding a few buckets: 2,000 at 64 bits radius 3
  in 4 blocks, 500 at 128 bits radius 18 in 10 blocks (tiny capacities: the overflow reruns
  and the oversized-bucket tiles run), 500 at 256 bits radius 40 by brute force; compared with
  the CPU join, pair for pair.
- ``knn``: 100 queries (half of them stored codes: ties) against 1,000 codes, 64 and 256 bits,
  k = 10, compared with FAISS ``IndexBinaryFlat``.
- ``verify``: the texts' merged word features (uint32 and uint64 states) and random features
  with signed weights over sixty orders of magnitude, 22,000 pairs each, compared with the CPU
  loop as float64 bit patterns.

A case holds the CPU's answer, a thunk that runs the GPU, and a comparison that describes the
first difference (or returns None). On the emulated kernels, one flipped bit in what any
kernel writes fails the probe, except in ``simhash_max_abs``'s output: it only sets a
document's quantization exponent, which one low bit rarely changes.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np

from gpusimhash._cpu._fingerprint import fingerprint_batch as cpu_fingerprint_batch
from gpusimhash._cpu._verify_loops import merge_documents, pair_similarities
from gpusimhash._gpu.join import DeviceJoin, JoinLauncher, JoinSettings
from gpusimhash._gpu.knn import DeviceKnn
from gpusimhash._gpu.verify import Verifier
from gpusimhash.features import FeatureBatch
from gpusimhash.text import TextFeaturizer
from gpusimhash.utf8 import Utf8Texts

N_DOCS = 2_000
N_STORED = 1_000
N_QUERIES = 100
N_PAIRS = 20_000
SEED = 20_240_601
_WORDS = (
    "the", "Cat", "SAT", "on", "mat", "été", "ÉTÉ", "straße", "İstanbul", "ΣΟΦΟΣ", "σοφός",
    "日本語", "😀", "x2", "don't", "e-mail", "𝐀𝐁", "naïve", "Ωmega", "0.5",
)  # fmt: skip
_SEPARATORS = (" ", " ", " ", ", ", ".\n", "\t", "\u00a0", "\u2028", "-", "  ")
# (featurizer label, constructor, bits); tfidf is fitted on the probe's texts
FEATURIZERS: tuple[tuple[str, Callable[[], TextFeaturizer], int], ...] = (
    ("word1-count", TextFeaturizer, 64),
    ("word2-binary", lambda: TextFeaturizer("word", 2, "binary"), 64),
    ("char3-logtf", lambda: TextFeaturizer("char", 3, "logtf"), 256),
    ("word1-tfidf", lambda: TextFeaturizer(weighting="tfidf"), 64),
)
# (weighted, bits) of the feature batches: unit weights one word and several thread groups
# wide, signed weights one word and four
BATCHES = ((False, 64), (False, 1024), (True, 64), (True, 256))
# (codes, bits, radius, blocks of the device join; 0: the tiled brute force)
JOINS = ((2_000, 64, 3, 4), (500, 128, 18, 10), (500, 256, 40, 0))

Fingerprint = Callable[[str, Any, TextFeaturizer, int, int], Any]


@dataclass(frozen=True)
class Device:
    """The GPU side the probe checks.

    Attributes
    ----------
    xp : module
        ``cupy`` on a GPU (``numpy`` with the emulated kernels in the tests).
    launch : JoinLauncher
        Runs the join, kNN and verification kernels.
    fingerprint : callable
        ``fingerprint(kind, batch, featurizer, bits, seed)`` returns the codes of one input
        batch (kind ``"text"``, ``"utf8"`` or ``"vectors"``) through the fingerprint pipeline.
    """

    xp: ModuleType
    launch: JoinLauncher
    fingerprint: Fingerprint


@dataclass(frozen=True)
class Case:
    """One comparison: what it is, the CPU's answer, the GPU call and how to compare them."""

    label: str
    expected: Any
    run: Callable[[], Any]
    compare: Callable[[Any, Any], str | None]


def host(array: Any) -> np.ndarray:
    """Return a NumPy copy of an array of any module."""
    get = getattr(array, "get", None)
    return np.asarray(get() if callable(get) else array)


def texts(rng: np.random.Generator) -> list[str]:
    """Return the probe's texts: 0-30 words, 5% empty, every 400th 1,500 words long."""
    sizes = rng.integers(0, 31, N_DOCS)
    sizes[rng.random(N_DOCS) < 0.05] = 0
    sizes[::400] = 1_500
    words = rng.choice(len(_WORDS), int(sizes.sum()))
    gaps = rng.choice(len(_SEPARATORS), int(sizes.sum()))
    pieces = [
        _WORDS[w] + _SEPARATORS[g] for w, g in zip(words.tolist(), gaps.tolist(), strict=True)
    ]
    ends = np.cumsum(sizes).tolist()
    return [
        "".join(pieces[end - size : end]) for end, size in zip(ends, sizes.tolist(), strict=True)
    ]


def feature_batch(rng: np.random.Generator, weighted: bool) -> FeatureBatch:
    """Random feature documents: 0-40 entries, every 250th 1,500 or 3,000 (split tasks)."""
    sizes = rng.integers(0, 41, N_DOCS)
    sizes[::250] = 1_500
    sizes[125::250] = 3_000
    offsets = np.zeros(N_DOCS + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    nnz = int(offsets[-1])
    states = (rng.zipf(1.3, nnz) % 2**32).astype(np.uint32) * np.uint32(2654435761)
    weights = None
    if weighted:
        weights = rng.normal(size=nnz) * 10.0 ** rng.uniform(-3, 3, nnz)
    return FeatureBatch(states, offsets, weights)


def _same_codes(got: Any, expected: np.ndarray) -> str | None:
    got = host(got)
    if got.shape != expected.shape:
        return f"codes of shape {got.shape}, the CPU's {expected.shape}"
    differing = int((got != expected).any(axis=1).sum())
    if differing:
        return f"{differing} of {expected.shape[0]} codes differ from the CPU's"
    return None


def fingerprint_cases(device: Device, rng: np.random.Generator) -> Iterator[Case]:
    """Yield text (str and UTF-8, each featurizer) and feature batches (``BATCHES``)."""
    documents = texts(rng)
    utf8 = Utf8Texts.from_strings(documents)
    for name, make, bits in FEATURIZERS:
        featurizer = make()
        if featurizer.weighting == "tfidf":
            featurizer.fit(documents)
        expected = cpu_fingerprint_batch(featurizer.transform(documents), bits=bits, seed=bits)
        for kind, given in (("text", documents), ("utf8", utf8)):
            yield Case(
                f"{kind} input, {name}, {bits} bits",
                expected,
                functools.partial(device.fingerprint, kind, given, featurizer, bits, bits),
                _same_codes,
            )
    batches = {weighted: feature_batch(rng, weighted) for weighted in (False, True)}
    for weighted, bits in BATCHES:
        batch = batches[weighted]
        yield Case(
            f"{'weighted' if weighted else 'unit-weight'} features, {bits} bits",
            cpu_fingerprint_batch(batch, bits=bits, seed=7),
            functools.partial(device.fingerprint, "vectors", batch, TextFeaturizer(), bits, 7),
            _same_codes,
        )


def clustered_codes(
    rng: np.random.Generator, n: int, bits: int, flips: int, crowd: int = 0
) -> np.ndarray:
    """``n`` codes in clusters of four around random centres, up to ``flips`` bits flipped.

    The first ``crowd`` codes (before the shuffle) share one centre: their block keys crowd a
    few buckets, whose pairs are too large for one warp.
    """
    centres = rng.integers(0, 256, (-(-n // 4), bits // 8), dtype=np.uint8)
    codes = np.repeat(centres, 4, axis=0)[:n]
    codes[:crowd] = centres[0]
    rows = np.arange(n)
    for _ in range(flips):
        position = rng.integers(0, bits, n)
        codes[rows, position // 8] ^= (1 << (position % 8)).astype(np.uint8)
    return codes[rng.permutation(n)]


def _same_join(got: tuple[Any, Any], expected: tuple[np.ndarray, np.ndarray]) -> str | None:
    inverse, pairs = (host(a) for a in got)
    if not np.array_equal(inverse, expected[0]):
        return "distinct-code ids differ from the CPU join's"
    if pairs.shape != expected[1].shape or not np.array_equal(pairs, expected[1]):
        return f"{pairs.shape[0]} pairs, the CPU join {expected[1].shape[0]}, not the same"
    return None


def _join(device: Device, join: DeviceJoin, codes: np.ndarray, radius: int) -> Any:
    return join.groups(device.xp.asarray(codes), radius)


def cpu_join(codes: np.ndarray, radius: int) -> tuple[np.ndarray, np.ndarray]:
    """Return the CPU join's ``(inverse, unique_pairs)`` (``near_duplicate_groups``) by brute force.

    Any plan gives the same pairs; the brute-force one skips the planner, whose sampling
    costs about 0.2 s even on 500 codes.
    """
    from gpusimhash.codes import code_words
    from gpusimhash.join import _mih as mih
    from gpusimhash.join._groups import collapse

    unique_words, inverse = collapse(code_words(codes))
    brute_force = mih.Plan("brute", (), 0.0)
    pairs = mih.join_pairs(unique_words, codes.shape[1] * 8, radius, chosen=brute_force)
    return inverse, pairs


def join_cases(device: Device, rng: np.random.Generator) -> Iterator[Case]:
    """Yield the radius join in blocks and by brute force, against the CPU join."""
    for n, bits, radius, blocks in JOINS:
        codes = clustered_codes(rng, n, bits, flips=radius // 2 + 1, crowd=n // 20)
        # capacities of a few pairs, bucket pairs of more than 64 compares sent to join_tiles
        settings = JoinSettings(
            pair_capacity=16,
            pairs_per_code=0.0,
            big_capacity=4,
            big_pairs=64,
            max_key_bits=16,
            blocks=blocks,
        )
        join = DeviceJoin(device.xp, device.launch, settings)
        yield Case(
            f"{bits} bits radius {radius}, {blocks or 'no'} blocks",
            cpu_join(codes, radius),
            functools.partial(_join, device, join, codes, radius),
            _same_join,
        )


def _same_neighbours(got: tuple[Any, Any], expected: tuple[np.ndarray, np.ndarray]) -> str | None:
    distances, positions = (host(a) for a in got)
    if distances.shape != expected[0].shape:
        return f"results of shape {distances.shape}, FAISS's {expected[0].shape}"
    differing = (distances != expected[0]) | (positions != expected[1])
    if differing.any():
        rows = int(differing.any(axis=1).sum())
        return f"{rows} of {distances.shape[0]} queries differ from FAISS's neighbours"
    return None


def _knn(device: Device, knn: DeviceKnn, stored: np.ndarray, queries: np.ndarray) -> Any:
    return knn.knn(device.xp.asarray(stored), device.xp.asarray(queries), 10)


def knn_cases(device: Device, rng: np.random.Generator) -> Iterator[Case]:
    """Brute-force kNN, k = 10, against FAISS IndexBinaryFlat."""
    import faiss

    for bits in (64, 256):
        stored = clustered_codes(rng, N_STORED, bits, flips=3)
        queries = clustered_codes(rng, N_QUERIES, bits, flips=0)
        queries[::2] = stored[rng.integers(0, N_STORED, (N_QUERIES + 1) // 2)]
        index = faiss.IndexBinaryFlat(bits)
        index.add(stored)
        distances, positions = index.search(queries, 10)
        yield Case(
            f"{bits} bits, k = 10",
            (distances.astype(np.int32), positions.astype(np.int64)),
            functools.partial(_knn, device, DeviceKnn(device.xp, device.launch), stored, queries),
            _same_neighbours,
        )


Features = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def _same_similarities(got: tuple[Any, ...], expected: tuple[np.ndarray, ...]) -> str | None:
    counts = []
    for measure, a, b in zip(("cosine", "jaccard", "weighted"), got, expected, strict=True):
        a = host(a)
        if a.shape != b.shape or a.dtype != np.float64:
            return f"{measure} of shape {a.shape} and dtype {a.dtype}, the CPU's {b.shape}"
        differing = int((a.view(np.uint64) != b.view(np.uint64)).sum())
        if differing:
            counts.append(f"{measure} {differing}")
    if counts:
        return f"similarities differ from the CPU loop's ({', '.join(counts)} of {b.size})"
    return None


def _random_features(rng: np.random.Generator, n_docs: int) -> Features:
    sizes = rng.integers(0, 60, n_docs)
    sizes[rng.random(n_docs) < 0.1] = 0
    offsets = np.zeros(n_docs + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    nnz = int(offsets[-1])
    states = (rng.integers(0, 400, nnz) * 2654435761 % 2**32).astype(np.uint32)
    weights = 10.0 ** rng.uniform(-30, 30, nnz) * rng.choice([-1.0, 1.0], nnz, p=[0.3, 0.7])
    return merge_documents(states, offsets, weights)


def _pairs(rng: np.random.Generator, n_docs: int) -> tuple[np.ndarray, np.ndarray]:
    """Random pairs, 1,000 neighbours and 1,000 documents with themselves."""
    near = rng.integers(0, n_docs - 1, 1_000)
    itself = rng.integers(0, n_docs, 1_000)
    left = np.concatenate([rng.integers(0, n_docs, N_PAIRS), near, itself])
    right = np.concatenate([rng.integers(0, n_docs, N_PAIRS), near + 1, itself])
    return left, right


def _verify(device: Device, features: Features, left: np.ndarray, right: np.ndarray) -> Any:
    verifier = Verifier(device.xp, device.launch, *features)
    return verifier.pair_similarities(device.xp.asarray(left), device.xp.asarray(right))


def verify_cases(device: Device, rng: np.random.Generator) -> Iterator[Case]:
    """Pair similarities on text and random features, against the CPU loop."""
    batch = TextFeaturizer().transform(texts(rng))
    words = merge_documents(
        np.ascontiguousarray(batch.states, dtype=np.uint32),
        np.ascontiguousarray(batch.offsets, dtype=np.int64),
        np.ascontiguousarray(batch.entry_weights(), dtype=np.float64),
    )
    wide = (words[0].astype(np.uint64), *words[1:])
    signed = _random_features(rng, N_DOCS)
    for label, features, reference in (
        ("word features, uint32 states", words, words),
        ("word features, uint64 states", wide, words),  # same order: the uint32 answers
        ("random signed features", signed, signed),
    ):
        left, right = _pairs(rng, features[1].size - 1)
        expected = pair_similarities(*reference, left, right)
        yield Case(
            label,
            expected,
            functools.partial(_verify, device, features, left, right),
            _same_similarities,
        )


CASES: dict[str, Callable[[Device, np.random.Generator], Iterator[Case]]] = {
    "fingerprint": fingerprint_cases,
    "join": join_cases,
    "knn": knn_cases,
    "verify": verify_cases,
}

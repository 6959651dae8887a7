"""Synthetic corpora with ground truth: originals, exact copies and near copies at set edit rates.

Every random choice is a pure function of ``(seed, stream, document, position)`` through a
counter-based hash (splitmix64), so any document can be regenerated on its own. That is what keeps
generation streaming in bounded memory at any size: a copy of document ``j`` regenerates ``j``'s
tokens instead of remembering them, and ``generate(spec, start=a, stop=b)`` gives exactly the
documents ``a`` to ``b`` of the full stream without producing the others.

The model:

- a vocabulary of ``vocabulary_size`` distinct pseudo-words (consonant-vowel syllables, more
  frequent words shorter) drawn with Zipf frequencies ``p(rank r) ~ 1 / r ** zipf_exponent``;
- document ``i`` has a length uniform in ``[min_length, max_length]`` tokens;
- document 0 is an original; every later document is an exact copy (probability ``exact_rate``),
  a near copy (probability ``near_rate``) or a new original. A copy picks a uniformly random
  earlier document and copies the *original* of that document's group, so groups grow by
  preferential attachment (a heavy-tailed cluster-size distribution, as in real corpora);
- a near copy with edit rate ``r`` of an original with ``n`` tokens gets exactly
  ``k = max(1, round(r * n))`` token edits at distinct positions: substitution by a different word
  (probability 1/2), deletion (1/4) or insertion of a word before the position (1/4). The token
  edit distance between copy and original is therefore at most ``k``.

The ground truth is the group label: the id of the group's original. Every pair of documents in one
group is a duplicate pair.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from gpusimhash import _segments

_MASK64 = np.uint64(0xFFFFFFFFFFFFFFFF)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)

# Independent random streams, one per kind of decision.
_STREAM_LENGTH = 1
_STREAM_ROLE = 2
_STREAM_SOURCE = 3
_STREAM_RATE = 4
_STREAM_TOKEN = 5
_STREAM_EDIT_POSITION = 6
_STREAM_EDIT_KIND = 7
_STREAM_EDIT_WORD = 8
_STREAM_VOCABULARY = 9

_CONSONANTS = "bcdfghjklmnprstvwxz"
_VOWELS = "aeiou"
_CHUNK = 2048

KINDS = ("original", "exact", "near")


class Document(NamedTuple):
    """One generated document and its ground truth.

    Attributes
    ----------
    id : int
        Position in the stream, from 0.
    text : str
        Space-separated lower-case pseudo-words.
    group : int
        Id of the original this document is (a copy of); an original's group is its own id.
    kind : str
        ``"original"``, ``"exact"`` (identical text) or ``"near"`` (edited copy).
    edit_rate : float
        Requested edit rate of a near copy, 0.0 otherwise.
    edits : int
        Number of token edits applied to the original, 0 for originals and exact copies.
    """

    id: int
    text: str
    group: int
    kind: str
    edit_rate: float
    edits: int


@dataclass(frozen=True)
class CorpusSpec:
    """Parameters of a synthetic corpus; equal specs give identical corpora.

    Parameters
    ----------
    n_docs : int
        Number of documents, at least 1.
    seed : int
        Seed in ``[0, 2**64)``.
    vocabulary_size : int
        Number of distinct words, at least 2.
    zipf_exponent : float
        Exponent ``s`` of the word frequencies ``1 / rank ** s``, > 0.
    min_length, max_length : int
        Range of document lengths in tokens, ``1 <= min_length <= max_length``.
    exact_rate, near_rate : float
        Probability that a document (other than the first) is an exact or a near copy; both in
        ``[0, 1]`` with a sum of at most 1.
    edit_rates : tuple of float
        Edit rates a near copy draws from uniformly, each in ``(0, 1]``.

    Raises
    ------
    ValueError
        A parameter out of range.

    Examples
    --------
    >>> spec = CorpusSpec(n_docs=1_000, seed=7, near_rate=0.2, edit_rates=(0.05,))
    >>> spec.n_docs, spec.edit_rates
    (1000, (0.05,))
    """

    n_docs: int = 10_000
    seed: int = 0
    vocabulary_size: int = 20_000
    zipf_exponent: float = 1.05
    min_length: int = 8
    max_length: int = 64
    exact_rate: float = 0.05
    near_rate: float = 0.15
    edit_rates: tuple[float, ...] = field(default=(0.02, 0.05, 0.1, 0.2))

    def __post_init__(self) -> None:
        """Check every parameter's range."""
        if self.n_docs < 1:
            raise ValueError(f"n_docs must be at least 1, got {self.n_docs}")
        if not 0 <= self.seed < 2**64:
            raise ValueError(f"seed must be in [0, 2**64), got {self.seed}")
        if self.vocabulary_size < 2:
            raise ValueError(f"vocabulary_size must be at least 2, got {self.vocabulary_size}")
        if not self.zipf_exponent > 0:
            raise ValueError(f"zipf_exponent must be > 0, got {self.zipf_exponent}")
        if not 1 <= self.min_length <= self.max_length:
            raise ValueError(
                f"need 1 <= min_length <= max_length, got {self.min_length}, {self.max_length}"
            )
        for name in ("exact_rate", "near_rate"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {value}")
        if self.exact_rate + self.near_rate > 1.0:
            raise ValueError(
                f"exact_rate + near_rate must be at most 1, got {self.exact_rate + self.near_rate}"
            )
        if not self.edit_rates or not all(0.0 < r <= 1.0 for r in self.edit_rates):
            raise ValueError(
                f"edit_rates must be a non-empty tuple in (0, 1], got {self.edit_rates}"
            )
        object.__setattr__(self, "edit_rates", tuple(float(r) for r in self.edit_rates))


def _mix(x: np.ndarray) -> np.ndarray:
    """Apply the splitmix64 finalizer to a uint64 array (wrapping arithmetic)."""
    x = (x ^ (x >> np.uint64(30))) * _MIX1
    x = (x ^ (x >> np.uint64(27))) * _MIX2
    return x ^ (x >> np.uint64(31))


def _hash(seed: int, stream: int, docs: np.ndarray, positions: np.ndarray | int = 0) -> np.ndarray:
    """Return 64 uniformly mixed bits for each ``(seed, stream, doc, position)``."""
    with np.errstate(over="ignore"):
        x = np.full(np.shape(docs), np.uint64(seed), dtype=np.uint64)
        x = _mix(x + np.uint64(stream) * _GOLDEN)
        x = _mix(x + np.asarray(docs, dtype=np.uint64) * _GOLDEN)
        return _mix(x + np.asarray(positions, dtype=np.uint64) * _GOLDEN)


def _uniform(
    seed: int, stream: int, docs: np.ndarray, positions: np.ndarray | int = 0
) -> np.ndarray:
    """Return floats uniform in ``[0, 1)``, one per ``(doc, position)``."""
    return (_hash(seed, stream, docs, positions) >> np.uint64(11)).astype(np.float64) * 2.0**-53


def vocabulary(spec: CorpusSpec) -> np.ndarray:
    """Return the corpus's words, most frequent first.

    Word ``r`` spells ``r + 1`` in base 95 with one consonant-vowel syllable per digit, through a
    syllable order shuffled by the seed: distinct by construction, and shorter for frequent ranks.

    Parameters
    ----------
    spec : CorpusSpec
        The corpus.

    Returns
    -------
    ndarray, shape (spec.vocabulary_size,), dtype object
        The words (str), by decreasing frequency.

    Examples
    --------
    >>> words = vocabulary(CorpusSpec(vocabulary_size=5, seed=1))
    >>> len(set(words)), all(w.isalpha() and w.islower() for w in words)
    (5, True)
    """
    syllables = np.array([c + v for c in _CONSONANTS for v in _VOWELS], dtype=object)
    order = np.argsort(_hash(spec.seed, _STREAM_VOCABULARY, np.arange(syllables.size)))
    syllables = syllables[order]
    base = syllables.size
    words = []
    for rank in range(spec.vocabulary_size):
        value, parts = rank + 1, []
        while value:
            value, digit = divmod(value, base)
            parts.append(syllables[digit])
        words.append("".join(reversed(parts)))
    return np.array(words, dtype=object)


def _zipf_cdf(spec: CorpusSpec) -> np.ndarray:
    """Return the cumulative word distribution, ``cdf[-1] == 1``."""
    weights = np.arange(1, spec.vocabulary_size + 1, dtype=np.float64) ** -spec.zipf_exponent
    cdf = np.cumsum(weights)
    return cdf / cdf[-1]


class _Model:
    """The per-spec tables (vocabulary, Zipf CDF) and the pure per-document functions."""

    def __init__(self, spec: CorpusSpec) -> None:
        self.spec = spec
        self.words = vocabulary(spec)
        self.cdf = _zipf_cdf(spec)

    def draw_words(self, u: np.ndarray) -> np.ndarray:
        """Map uniforms to word ranks by the Zipf distribution."""
        ranks = np.searchsorted(self.cdf, u, side="right")
        return np.minimum(ranks, self.spec.vocabulary_size - 1)

    def lengths(self, docs: np.ndarray) -> np.ndarray:
        """Return each document's original length in tokens."""
        spec = self.spec
        span = spec.max_length - spec.min_length + 1
        u = _uniform(spec.seed, _STREAM_LENGTH, docs)
        return spec.min_length + np.minimum((u * span).astype(np.int64), span - 1)

    def kinds(self, docs: np.ndarray) -> np.ndarray:
        """Return each document's kind as an index into ``KINDS``."""
        spec = self.spec
        u = _uniform(spec.seed, _STREAM_ROLE, docs)
        kind = np.zeros(docs.shape, dtype=np.int64)
        kind[u < spec.exact_rate + spec.near_rate] = 2
        kind[u < spec.exact_rate] = 1
        kind[docs == 0] = 0
        return kind

    def groups(self, docs: np.ndarray) -> np.ndarray:
        """Return each document's group: follow copies back to an original."""
        spec = self.spec
        roots = docs.copy()
        pending = self.kinds(roots) != 0
        while pending.any():
            copies = roots[pending]
            u = _uniform(spec.seed, _STREAM_SOURCE, copies)
            roots[pending] = np.minimum((u * copies).astype(np.int64), copies - 1)
            pending[pending] = self.kinds(roots[pending]) != 0
        return roots

    def tokens(self, docs: np.ndarray) -> list[np.ndarray]:
        """Return the word ranks of each document *as an original*."""
        lengths = self.lengths(docs)
        flat_docs = docs[_segments.segment_of(lengths)]
        positions = _segments.ranks(lengths)
        ranks = self.draw_words(_uniform(self.spec.seed, _STREAM_TOKEN, flat_docs, positions))
        return np.split(ranks, _segments.starts(lengths)[1:])

    def edit_rate(self, doc: int) -> float:
        """Return the edit rate a near copy draws."""
        rates = self.spec.edit_rates
        u = float(_uniform(self.spec.seed, _STREAM_RATE, np.array([doc]))[0])
        return rates[min(int(u * len(rates)), len(rates) - 1)]

    def edit(self, doc: int, original: np.ndarray, rate: float) -> tuple[np.ndarray, int]:
        """Apply ``max(1, round(rate * n))`` token edits to ``original``; return (tokens, edits)."""
        seed, n = self.spec.seed, original.size
        count = min(n, max(1, round(rate * n)))
        positions = np.arange(n)
        doc_ids = np.full(n, doc)
        chosen = np.zeros(n, dtype=bool)
        chosen[np.argsort(_hash(seed, _STREAM_EDIT_POSITION, doc_ids, positions))[:count]] = True
        kind = _uniform(seed, _STREAM_EDIT_KIND, doc_ids, positions)
        new = self.draw_words(_uniform(seed, _STREAM_EDIT_WORD, doc_ids, positions))
        same = new == original
        new[same] = (new[same] + 1) % self.spec.vocabulary_size
        out: list[int] = []
        for p in range(n):
            if not chosen[p]:
                out.append(original[p])
            elif kind[p] < 0.5:
                out.append(new[p])
            elif kind[p] >= 0.75:
                out.extend((new[p], original[p]))
            # else: deleted
        return np.array(out, dtype=np.int64), count


def generate(spec: CorpusSpec, *, start: int = 0, stop: int | None = None) -> Iterator[Document]:
    """Stream the documents ``start`` to ``stop`` of a corpus, in order, in bounded memory.

    Parameters
    ----------
    spec : CorpusSpec
        The corpus.
    start, stop : int
        Range of document ids, ``0 <= start <= stop <= spec.n_docs`` (``stop=None``: to the end).
        The documents are the same as in the full stream.

    Yields
    ------
    Document
        With its ground truth (group, kind, edit rate, edits).

    Raises
    ------
    ValueError
        A range outside the corpus.

    Examples
    --------
    >>> spec = CorpusSpec(n_docs=100, seed=3, exact_rate=0.5, near_rate=0.0)
    >>> docs = list(generate(spec))
    >>> copy = next(d for d in docs if d.kind == "exact")
    >>> copy.text == docs[copy.group].text
    True
    """
    stop = spec.n_docs if stop is None else stop
    if not 0 <= start <= stop <= spec.n_docs:
        raise ValueError(
            f"need 0 <= start <= stop <= {spec.n_docs}, got start={start}, stop={stop}"
        )
    model = _Model(spec)
    for first in range(start, stop, _CHUNK):
        docs = np.arange(first, min(stop, first + _CHUNK), dtype=np.int64)
        kinds = model.kinds(docs)
        groups = model.groups(docs)
        for doc, kind, group, tokens in zip(
            docs.tolist(), kinds.tolist(), groups.tolist(), model.tokens(groups), strict=True
        ):
            rate, edits = 0.0, 0
            if kind == 2:
                rate = model.edit_rate(doc)
                tokens, edits = model.edit(doc, tokens, rate)
            text = " ".join(model.words[tokens].tolist())
            yield Document(doc, text, group, KINDS[kind], rate, edits)

"""Text features: tokenization, shingling and weighting, vectorized over a whole batch.

A batch of documents is joined into one array of code points: classification and lower-casing go
through the shipped Unicode tables as whole-array NumPy lookups, token boundaries and FNV-1a
feature states come from compiled loops (``_cpu._loops``), and n-gram windows are whole-array index
arithmetic. No Python code runs per document or per token. DESIGN.md defines the rules;
``TextFeaturizer.features`` spells them out in plain Python for one document.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gpusimhash import _segments, _validate
from gpusimhash._batching import chunks
from gpusimhash._choices import ANALYZERS, WEIGHTINGS
from gpusimhash._cpu._loops import word_runs
from gpusimhash._cpu._utf8_loops import utf8_token_parts
from gpusimhash.features import FeatureBatch
from gpusimhash.hashing import FNV_OFFSET_BASIS, feature_states, fnv1a_continue, fnv1a_step
from gpusimhash.unicode_tables import load_tables
from gpusimhash.utf8 import Utf8Texts

SPACE = 0x20
CONFIG_VERSION = 1


@dataclass(frozen=True)
class Tokens:
    """Word tokens of a batch, located in its stream of (lower-cased) code points.

    Attributes
    ----------
    code_points : ndarray, dtype uint32
        The batch's text, documents joined by newlines, lower-cased if asked.
    starts, lengths : ndarray, shape (n_tokens,), dtype int64
        Each token's first code point and its length in code points, in document order.
    doc : ndarray, shape (n_tokens,), dtype int64
        The document each token belongs to (non-decreasing).
    n_docs : int
        Number of documents in the batch.
    states : ndarray, shape (n_tokens,), dtype uint32, or None
        Each token's FNV-1a state, when the tokenizer computed it on the way.
    """

    code_points: np.ndarray
    starts: np.ndarray
    lengths: np.ndarray
    doc: np.ndarray
    n_docs: int
    states: np.ndarray | None = None


def _code_points(texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Join texts with a newline (never a word character); return code points and doc starts."""
    joined = "\n".join(texts)
    code_points = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    lengths = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
    return code_points, _segments.starts(lengths + 1)


def tokenize(texts: Sequence[str], *, lowercase: bool = True) -> Tokens:
    """Split a batch of texts into word tokens.

    Parameters
    ----------
    texts : sequence of str
        The documents.
    lowercase : bool
        Map every code point through the shipped simple lower-case table first.

    Returns
    -------
    Tokens
        Tokens in document order.
    """
    tables = load_tables()
    code_points, doc_starts = _code_points(texts)
    is_word = tables.word[code_points]
    if lowercase:
        code_points = tables.lower[code_points]
    starts, lengths, doc = word_runs(is_word, doc_starts)
    return Tokens(code_points, starts, lengths, doc, len(texts))


def tokenize_utf8(texts: Utf8Texts, *, lowercase: bool = True, first_index: int = 0) -> Tokens:
    """Split a batch of UTF-8 documents into word tokens, with no Python string per document.

    The same tokens as ``tokenize(texts.to_strings())``, found by one compiled pass over the
    bytes (``_cpu._utf8_loops``); ``code_points`` holds the tokens' code points only.

    Parameters
    ----------
    texts : Utf8Texts
        The documents.
    lowercase : bool
        Map every code point through the shipped simple lower-case table first.
    first_index : int
        Position of the first document in the caller's input, for error messages.

    Returns
    -------
    Tokens
        Tokens in document order, with their states.

    Raises
    ------
    ValueError
        Bytes that are not valid UTF-8 (the message names the document).
    """
    parts = _utf8_parts(texts, lowercase, first_index)
    code_points, starts, lengths, doc, states = (
        np.concatenate([part[k] for part in parts]) for k in range(5)
    )
    if len(parts) > 1:  # each part counted its tokens' code points and documents from 0
        sizes = np.array([part[0].size for part in parts], dtype=np.int64)
        counts = np.array([part[1].size for part in parts], dtype=np.int64)
        first_docs = np.array([part[5] for part in parts], dtype=np.int64)
        starts += np.repeat(_segments.starts(sizes), counts)
        doc += np.repeat(first_docs, counts)
    return Tokens(code_points, starts, lengths, doc, len(texts), states)


def _utf8_parts(texts: Utf8Texts, lowercase: bool, first_index: int) -> list[Any]:
    """``utf8_token_parts`` of the batch; ValueError naming the first invalid document."""
    tables = load_tables()
    parts = utf8_token_parts(texts.data, texts.offsets, tables.word, tables.lower, lowercase)
    error = next((part[-1] for part in parts if part[-1] >= 0), -1)
    if error >= 0:
        bad = int(np.searchsorted(texts.offsets, error, side="right")) - 1
        raise ValueError(
            f"document {first_index + bad}: not valid UTF-8 "
            f"(byte {error - int(texts.offsets[bad])} of the document)"
        )
    return parts


def _utf8_word_states(
    texts: Utf8Texts, lowercase: bool, first_index: int
) -> tuple[np.ndarray, np.ndarray]:
    """Word 1-gram states and documents of UTF-8 texts (``tokenize_utf8``'s, nothing else)."""
    parts = _utf8_parts(texts, lowercase, first_index)
    states = np.concatenate([part[4] for part in parts])
    doc = np.concatenate([part[3] + part[5] for part in parts])
    return states, doc


def _doc_ranges(doc: np.ndarray, n_docs: int) -> tuple[np.ndarray, np.ndarray]:
    """Return the first item index and the item count of each document (items sorted by doc)."""
    counts = np.bincount(doc, minlength=n_docs).astype(np.int64)
    return _segments.starts(counts), counts


def _fnv1a_spans(code_points: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """FNV-1a states of code-point spans, hashed over their UTF-16 units."""
    basis = np.full(starts.size, FNV_OFFSET_BASIS, dtype=np.uint32)
    return fnv1a_continue(basis, code_points, starts, lengths)


def word_ngram_states(tokens: Tokens, n: int) -> tuple[np.ndarray, np.ndarray]:
    """FNV-1a states of word n-grams (tokens joined by single spaces).

    Parameters
    ----------
    tokens : Tokens
        A tokenized batch.
    n : int
        Tokens per shingle.

    Returns
    -------
    states : ndarray, dtype uint32
        One per feature occurrence.
    doc : ndarray, dtype int64
        The document of each feature, non-decreasing.
    """
    if n == 1:
        if tokens.states is not None:
            return tokens.states, tokens.doc
        return _fnv1a_spans(tokens.code_points, tokens.starts, tokens.lengths), tokens.doc
    first, span, doc = _segments.windows(*_doc_ranges(tokens.doc, tokens.n_docs), n)
    states = _fnv1a_spans(tokens.code_points, tokens.starts[first], tokens.lengths[first])
    # spans are at most n tokens: past the longest, no shingle grows (n may be huge)
    for j in range(1, int(span.max(initial=1))):
        more = np.flatnonzero(span > j)
        joined = fnv1a_step(states[more], np.uint32(SPACE))
        token = first[more] + j
        states[more] = fnv1a_continue(
            joined, tokens.code_points, tokens.starts[token], tokens.lengths[token]
        )
    return states, doc


def normalized_text(tokens: Tokens) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each document's tokens joined by single spaces, for the whole batch.

    Returns
    -------
    code_points : ndarray, dtype uint32
        The normalized documents, concatenated.
    first, counts : ndarray, shape (n_docs,), dtype int64
        Where each normalized document starts and how many code points it has.
    """
    token_first, token_count = _doc_ranges(tokens.doc, tokens.n_docs)
    separator = np.ones(tokens.doc.size, dtype=np.int64)
    separator[token_first[token_count > 0]] = 0
    segment = tokens.lengths + separator
    text_start = _segments.starts(segment) + separator
    normalized = np.full(int(segment.sum()), SPACE, dtype=np.uint32)
    normalized[_segments.ranges(text_start, tokens.lengths)] = tokens.code_points[
        _segments.ranges(tokens.starts, tokens.lengths)
    ]
    first = np.zeros(tokens.n_docs, dtype=np.int64)
    counts = np.zeros(tokens.n_docs, dtype=np.int64)
    has_tokens = token_count > 0
    first_token = token_first[has_tokens]
    last_token = first_token + token_count[has_tokens] - 1
    first[has_tokens] = text_start[first_token]
    counts[has_tokens] = text_start[last_token] + tokens.lengths[last_token] - first[has_tokens]
    return normalized, first, counts


def char_ngram_states(tokens: Tokens, n: int) -> tuple[np.ndarray, np.ndarray]:
    """FNV-1a states of character n-grams of each document's normalized text.

    Parameters
    ----------
    tokens : Tokens
        A tokenized batch.
    n : int
        Code points per n-gram.

    Returns
    -------
    states : ndarray, dtype uint32
        One per feature occurrence.
    doc : ndarray, dtype int64
        The document of each feature, non-decreasing.
    """
    normalized, first, counts = normalized_text(tokens)
    start, span, doc = _segments.windows(first, counts, n)
    return _fnv1a_spans(normalized, start, span), doc


def _count_per_document(states: np.ndarray, doc: np.ndarray) -> tuple[np.ndarray, ...]:
    """Merge repeated features of a document: distinct (doc, state) pairs and their counts."""
    keys = (doc.astype(np.uint64) << np.uint64(32)) | states.astype(np.uint64)
    distinct, counts = np.unique(keys, return_counts=True)
    return (
        (distinct & np.uint64(0xFFFFFFFF)).astype(np.uint32),
        (distinct >> np.uint64(32)).astype(np.int64),
        counts,
    )


def check_texts(texts: Sequence[Any], first_index: int) -> None:
    """Raise TypeError naming the first document that is not a str."""
    if all(type(text) is str for text in texts):
        return
    for position, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(
                f"document {first_index + position}: expected text (str), got {type(text).__name__}"
            )


def _stored_integers(values: Any, dtype: Any) -> np.ndarray:
    """Read a stored list of integers as ``dtype``, exactly (not ``1.7`` as 1).

    Raises
    ------
    ValueError
        Values that are not integers, or outside ``dtype``.
    """
    array = np.asarray(values)
    if array.size == 0:
        return np.zeros(0, dtype)
    if array.dtype.kind not in "iu":
        raise ValueError(f"integers expected, got {array.dtype} values")
    limits = np.iinfo(dtype)
    if array.min() < limits.min or array.max() > limits.max:
        raise ValueError(f"values outside {np.dtype(dtype).name}")
    return array.astype(dtype)


@dataclass
class _DocumentFrequencies:
    """Fitted document frequencies: sorted feature states, their df, and the corpus size."""

    states: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.uint32))
    df: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    n_docs: int = 0

    def add(self, states: np.ndarray, n_docs: int) -> None:
        """Count one batch's distinct (document, feature) states into the frequencies."""
        merged = np.concatenate([self.states, states])
        weights = np.concatenate([self.df, np.ones(states.size, dtype=np.int64)])
        self.states, inverse = np.unique(merged, return_inverse=True)
        self.df = np.bincount(inverse, weights=weights, minlength=self.states.size).astype(np.int64)
        self.n_docs += n_docs

    def idf(self, states: np.ndarray) -> np.ndarray:
        """Smooth idf ``ln((1 + N) / (1 + df)) + 1`` of each state (df = 0 when unseen)."""
        df = np.zeros(states.size, dtype=np.int64)
        if self.states.size:
            at = np.minimum(np.searchsorted(self.states, states), self.states.size - 1)
            found = self.states[at] == states
            df[found] = self.df[at[found]]
        return np.log((1.0 + self.n_docs) / (1.0 + df)) + 1.0


class TextFeaturizer:
    """Turn raw text into weighted feature vectors.

    Parameters
    ----------
    analyzer : {"word", "char"}
        Word n-grams (shingles of tokens) or character n-grams of the normalized text.
    ngram : int
        n, at least 1.
    weighting : {"count", "binary", "logtf", "tfidf"}
        Raw counts (the seed's TF), presence only, ``1 + ln(count)``, or ``count * idf`` with
        scikit-learn's smooth idf, which needs ``fit`` first.
    lowercase : bool
        Lower-case with the shipped simple case table before tokenizing.

    Raises
    ------
    ValueError
        An unknown analyzer or weighting, or ``ngram < 1``.
    TypeError
        An ``ngram`` that is not an integer, a ``lowercase`` that is not a bool.

    Examples
    --------
    >>> TextFeaturizer().features("The cat saw the CAT.")
    {'the': 2.0, 'cat': 2.0, 'saw': 1.0}
    >>> TextFeaturizer(ngram=2).features("a b c")
    {'a b': 1.0, 'b c': 1.0}
    >>> TextFeaturizer(analyzer="char", ngram=3, weighting="binary").features("Ab  ab")
    {'ab ': 1.0, 'b a': 1.0, ' ab': 1.0}
    """

    def __init__(
        self,
        analyzer: str = "word",
        ngram: int = 1,
        weighting: str = "count",
        *,
        lowercase: bool = True,
    ) -> None:
        if analyzer not in ANALYZERS:
            raise ValueError(f"analyzer must be one of {ANALYZERS}, got {analyzer!r}")
        if weighting not in WEIGHTINGS:
            raise ValueError(f"weighting must be one of {WEIGHTINGS}, got {weighting!r}")
        if not isinstance(lowercase, bool | np.bool_):
            raise TypeError(f"lowercase must be a bool, got {type(lowercase).__name__}")
        self.analyzer = analyzer
        self.ngram = _validate.positive_integer(ngram, "ngram")
        self.weighting = weighting
        self.lowercase = bool(lowercase)
        self._frequencies: _DocumentFrequencies | None = None

    def __repr__(self) -> str:
        """Show the configuration."""
        return (
            f"TextFeaturizer(analyzer={self.analyzer!r}, ngram={self.ngram}, "
            f"weighting={self.weighting!r}, lowercase={self.lowercase})"
        )

    @property
    def fitted_states(self) -> np.ndarray:
        """Sorted feature states that have fitted document frequencies (empty before ``fit``)."""
        if self._frequencies is None:
            return np.zeros(0, dtype=np.uint32)
        return self._frequencies.states

    @property
    def is_fitted(self) -> bool:
        """Whether document frequencies are available (always true unless weighting is tfidf)."""
        return self.weighting != "tfidf" or self._frequencies is not None

    def fit(self, texts: Iterable[str], *, batch_size: int = 100_000) -> TextFeaturizer:
        """Fit document frequencies for ``tfidf`` weighting.

        Parameters
        ----------
        texts : iterable of str
            The corpus, consumed in batches of ``batch_size``.
        batch_size : int
            Documents per batch.

        Returns
        -------
        TextFeaturizer
            ``self``.

        Raises
        ------
        TypeError, ValueError
            A ``batch_size`` that is not an integer of at least 1, a text that is not a str.
        """
        batch_size = _validate.positive_integer(batch_size, "batch_size")
        frequencies = _DocumentFrequencies()
        seen = 0
        for chunk in chunks(texts, batch_size):
            check_texts(chunk, seen)
            states, _, _ = _count_per_document(*self._feature_occurrences(chunk))
            frequencies.add(states, len(chunk))
            seen += len(chunk)
        self._frequencies = frequencies
        return self

    def _feature_occurrences(
        self, texts: Sequence[str] | Utf8Texts, first_index: int = 0
    ) -> tuple[np.ndarray, np.ndarray]:
        """States and documents of every feature occurrence in a batch."""
        if isinstance(texts, Utf8Texts):
            if self.analyzer == "word" and self.ngram == 1:  # the states are the features
                return _utf8_word_states(texts, self.lowercase, first_index)
            tokens = tokenize_utf8(texts, lowercase=self.lowercase, first_index=first_index)
        else:
            tokens = tokenize(texts, lowercase=self.lowercase)
        if self.analyzer == "word":
            return word_ngram_states(tokens, self.ngram)
        return char_ngram_states(tokens, self.ngram)

    def _check_fitted(self) -> _DocumentFrequencies | None:
        if not self.is_fitted:
            raise ValueError("tfidf weighting needs document frequencies: call fit(texts) first")
        return self._frequencies

    def weigh(self, counts: np.ndarray, states: np.ndarray) -> np.ndarray:
        """Weights of distinct features of a document from their counts.

        Parameters
        ----------
        counts : ndarray, dtype int64
            How often each feature occurs in its document.
        states : ndarray, dtype uint32
            The features' states (for idf).

        Returns
        -------
        ndarray, dtype float64
        """
        frequencies = self._check_fitted()
        counts = counts.astype(np.float64)
        if self.weighting == "count":
            return counts
        if self.weighting == "binary":
            return np.ones_like(counts)
        if self.weighting == "logtf":
            return 1.0 + np.log(counts)
        assert frequencies is not None  # tfidf is fitted: _check_fitted raised otherwise
        return counts * frequencies.idf(states)

    def transform(self, texts: Sequence[str] | Utf8Texts, *, first_index: int = 0) -> FeatureBatch:
        """Featurize a batch of texts.

        Parameters
        ----------
        texts : sequence of str, or Utf8Texts
            The documents (UTF-8 bytes are tokenized without a Python string per document).
        first_index : int
            Position of ``texts[0]`` in the caller's whole input, for error messages.

        Returns
        -------
        FeatureBatch
            With ``count`` weighting, one entry per occurrence and ``weights=None``; otherwise one
            entry per distinct feature of each document.

        Raises
        ------
        TypeError
            A document that is not a str.
        ValueError
            ``tfidf`` weighting before ``fit``; bytes that are not valid UTF-8.
        """
        if not isinstance(texts, Utf8Texts):
            check_texts(texts, first_index)
        self._check_fitted()
        states, doc = self._feature_occurrences(texts, first_index)
        if self.weighting == "count":
            return FeatureBatch(states, _segments.offsets_of(doc, len(texts)), None)
        states, doc, counts = _count_per_document(states, doc)
        return FeatureBatch(
            states, _segments.offsets_of(doc, len(texts)), self.weigh(counts, states)
        )

    def features(self, text: str) -> dict[str, float]:
        """Featurize one text in plain Python: the readable definition of ``transform``.

        Parameters
        ----------
        text : str
            One document.

        Returns
        -------
        dict of str to float
            Feature strings and weights, in order of first occurrence.
        """
        check_texts([text], 0)
        tables = load_tables()
        chars = [chr(tables.lower[ord(c)]) if self.lowercase else c for c in text]
        words = "".join(c if tables.word[ord(c)] else " " for c in chars).split(" ")
        tokens = [w for w in words if w]
        if self.analyzer == "word":
            items = tokens
        else:
            normalized = " ".join(tokens)
            items = list(normalized)
        n = self.ngram
        joiner = " " if self.analyzer == "word" else ""
        if len(items) >= n:
            grams = [joiner.join(items[i : i + n]) for i in range(len(items) - n + 1)]
        else:
            grams = [joiner.join(items)] if items else []
        counts = Counter(grams)
        counted = np.array(list(counts.values()), dtype=np.int64)
        weights = self.weigh(counted, feature_states(list(counts)))
        return dict(zip(counts, weights.tolist(), strict=True))

    def to_config(self) -> dict[str, Any]:
        """Return the configuration (and fitted frequencies) as JSON-safe data.

        Returns
        -------
        dict
            Accepted by ``from_config``.
        """
        config: dict[str, Any] = {
            "version": CONFIG_VERSION,
            "analyzer": self.analyzer,
            "ngram": self.ngram,
            "weighting": self.weighting,
            "lowercase": self.lowercase,
            "document_frequencies": None,
        }
        if self._frequencies is not None:
            config["document_frequencies"] = {
                "n_docs": self._frequencies.n_docs,
                "states": self._frequencies.states.tolist(),
                "df": self._frequencies.df.tolist(),
            }
        return config

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> TextFeaturizer:
        """Rebuild a featurizer from ``to_config`` output.

        Parameters
        ----------
        config : dict
            A configuration.

        Returns
        -------
        TextFeaturizer

        Raises
        ------
        ValueError
            An unknown version, a missing key, unreadable or inconsistent frequencies.
        TypeError
            A setting of the wrong kind.
        """
        if not isinstance(config, dict) or config.get("version") != CONFIG_VERSION:
            raise ValueError(f"featurizer config must be a dict with version {CONFIG_VERSION}")
        try:
            featurizer = cls(
                config["analyzer"],
                config["ngram"],
                config["weighting"],
                lowercase=config["lowercase"],
            )
            stored = config["document_frequencies"]
        except KeyError as missing:
            raise ValueError(f"featurizer config lacks the key {missing}") from None
        if stored is not None:
            try:
                states = _stored_integers(stored["states"], np.uint32)
                df = _stored_integers(stored["df"], np.int64)
                n_docs = _validate.positive_integer(stored["n_docs"], "n_docs")
            except (KeyError, TypeError, ValueError, OverflowError) as error:
                raise ValueError(
                    f"featurizer config has unreadable frequencies ({error})"
                ) from None
            if (
                states.ndim != 1
                or states.shape != df.shape
                or np.any(np.diff(states.astype(np.int64)) <= 0)
                or np.any((df < 1) | (df > n_docs))
            ):
                raise ValueError("featurizer config has inconsistent document frequencies")
            featurizer._frequencies = _DocumentFrequencies(states, df, n_docs)
        return featurizer

"""The bundled sample corpus: a few thousand documents with known duplicates and near-duplicates.

``gpusimhash/datasets/data/sample_corpus.jsonl.gz`` holds one JSON object per line with the fields

- ``id`` (int), ``text`` (str);
- ``group`` (int): the ground truth, the id of the document's original (an original's own id);
- ``kind``: ``"original"``, ``"exact"`` (identical text) or ``"near"`` (edited copy);
- ``source``: ``"english"`` (sentences built from the templates and word lists in
  ``data/english_words.json``, written for this project) or ``"synthetic"``
  (pseudo-words from :mod:`gpusimhash.datasets.synth`).

Everything in it is generated here, by code and word lists written for this project, so it may
ship with the package. Rebuild it with ``python -m gpusimhash.datasets.sample [PATH]``; the output is the
same for the same seed.
"""

from __future__ import annotations

import functools
import json
import random
import re
import sys
from collections import Counter
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from gpusimhash.datasets import synth
from gpusimhash.io.writers import RecordWriter

TEXT_FIELD = "text"
ID_FIELD = "id"
TRUTH_FIELD = "group"
SEED = 20240601
MAX_UNRELATED_COSINE = 0.75


@functools.cache
def english_words() -> dict[str, Any]:
    """Return the word lists the English documents are built from (``data/english_words.json``).

    Returns
    -------
    dict
        ``sentences`` (topic -> sentence templates), ``slots`` (slot -> values), ``synonyms``
        (word -> replacement) and ``additions`` (phrases appended by edits).

    Examples
    --------
    >>> sorted(english_words())
    ['additions', 'sentences', 'slots', 'synonyms']
    """
    text = (resources.files("gpusimhash.datasets") / "data" / "english_words.json").read_text(
        encoding="utf-8"
    )
    words: dict[str, Any] = json.loads(text)
    return words


def english_original(rng: random.Random) -> str:
    """Write four sentences on one topic, with random slot values.

    Parameters
    ----------
    rng : random.Random
        Source of the choices.

    Returns
    -------
    str
        An English document of four sentences.
    """
    words = english_words()
    templates = words["sentences"]
    sentences = rng.sample(templates[rng.choice(sorted(templates))], 4)
    values = {slot: rng.choice(options) for slot, options in words["slots"].items()}
    return " ".join(sentences).format(**values)


def english_variant(text: str, rng: random.Random) -> str:
    """Edit a document lightly, as people re-post: synonyms, a dropped word, a typo, an addition.

    Parameters
    ----------
    text : str
        The original.
    rng : random.Random
        Source of the choices.

    Returns
    -------
    str
        One to three edits of ``text``, never ``text`` itself.
    """
    synonyms, additions = english_words()["synonyms"], english_words()["additions"]
    words = text.split(" ")
    for _ in range(rng.randint(1, 3)):
        edit = rng.randrange(5)
        swappable = [i for i, w in enumerate(words) if w.lower().strip(".,") in synonyms]
        if edit == 0 and swappable:
            i = rng.choice(swappable)
            core = words[i].strip(".,")
            words[i] = words[i].replace(core, synonyms[core.lower()])
        elif edit == 1 and len(words) > 8:
            del words[rng.randrange(len(words))]
        elif edit == 2:
            i = rng.randrange(len(words))
            letters = list(words[i])
            if len(letters) > 3:
                j = rng.randrange(len(letters) - 1)
                letters[j], letters[j + 1] = letters[j + 1], letters[j]
                words[i] = "".join(letters)
        elif edit == 3:
            words.append(rng.choice(additions))
        else:
            words = [w.lower() if rng.random() < 0.5 else w for w in words]
    variant = " ".join(words)
    return variant if variant != text else variant + " " + rng.choice(additions)


class _Novelty:
    """Word-count cosine of a text against every original kept so far."""

    def __init__(self) -> None:
        self.columns: dict[str, int] = {}
        self.rows = np.zeros((0, 0))

    def vector(self, text: str) -> np.ndarray:
        """Return the text's unit word-count vector, adding columns for new words."""
        counts = Counter(re.findall(r"\w+", text.lower()))
        for word in counts:
            self.columns.setdefault(word, len(self.columns))
        if len(self.columns) > self.rows.shape[1]:
            self.rows = np.pad(self.rows, ((0, 0), (0, len(self.columns) - self.rows.shape[1])))
        vector = np.zeros(self.rows.shape[1])
        for word, count in counts.items():
            vector[self.columns[word]] = count
        return vector / np.linalg.norm(vector)

    def closest(self, vector: np.ndarray) -> float:
        """Return the largest cosine with a kept original (0 when there is none)."""
        return float((self.rows @ vector).max()) if self.rows.shape[0] else 0.0

    def keep(self, vector: np.ndarray) -> None:
        """Remember an original."""
        self.rows = np.vstack([self.rows, vector])


def _english_documents(n_docs: int, rng: random.Random) -> Iterator[tuple[str, int, str]]:
    """Yield ``(text, group, kind)`` with group as a position in this list.

    A new original is redrawn until its word-count cosine with every earlier original is below
    ``MAX_UNRELATED_COSINE``, so that documents in different groups are truly unrelated.
    """
    texts: list[str] = []
    originals: list[int] = []
    novelty = _Novelty()
    for position in range(n_docs):
        roll = rng.random()
        if originals and roll < 0.08:
            group = rng.choice(originals)
            text, kind = texts[group], "exact"
        elif originals and roll < 0.33:
            group = rng.choice(originals)
            text, kind = english_variant(texts[group], rng), "near"
        else:
            group, kind = position, "original"
            while True:
                text = english_original(rng)
                vector = novelty.vector(text)
                if novelty.closest(vector) < MAX_UNRELATED_COSINE:
                    break
            novelty.keep(vector)
            originals.append(position)
        texts.append(text)
        yield text, group, kind


def build_sample(path: str | Path, *, n_english: int = 2000, n_synthetic: int = 1500) -> int:
    """Write the sample corpus: English template documents and a synthetic corpus, shuffled.

    Parameters
    ----------
    path : str or Path
        Destination (``.jsonl.gz``).
    n_english, n_synthetic : int
        How many documents of each source.

    Returns
    -------
    int
        Number of documents written.
    """
    rng = random.Random(SEED)
    docs = [(t, g, k, "english") for t, g, k in _english_documents(n_english, rng)]
    spec = synth.CorpusSpec(
        n_docs=n_synthetic,
        seed=SEED,
        vocabulary_size=5000,
        zipf_exponent=0.8,
        min_length=15,
        max_length=40,
        exact_rate=0.08,
        near_rate=0.25,
        edit_rates=(0.05, 0.1, 0.2),
    )
    docs += [(d.text, n_english + d.group, d.kind, "synthetic") for d in synth.generate(spec)]
    order = list(range(len(docs)))
    rng.shuffle(order)
    new_id = {old: new for new, old in enumerate(order)}
    records = []
    for new, old in enumerate(order):
        text, group, kind, source = docs[old]
        records.append(
            {"id": new, "text": text, "group": new_id[group], "kind": kind, "source": source}
        )
    with RecordWriter(path) as writer:
        writer.write(records)
    return len(records)


def sample_corpus_path() -> Path:
    """Return the path of the bundled sample corpus.

    Returns
    -------
    Path
        ``gpusimhash/datasets/data/sample_corpus.jsonl.gz`` inside the installed package.

    Examples
    --------
    >>> sample_corpus_path().name
    'sample_corpus.jsonl.gz'
    """
    return Path(str(resources.files("gpusimhash.datasets") / "data" / "sample_corpus.jsonl.gz"))


if __name__ == "__main__":
    target = sys.argv[1] if len(sys.argv) > 1 else sample_corpus_path()
    print(f"wrote {build_sample(target)} documents to {target}")

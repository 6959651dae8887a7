"""The MinHash peers of bench/bench_peers.py see the words gpusimhash's featurizer sees."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.append(str(Path(__file__).resolve().parents[1] / "bench"))

from _dedup_peers import tokens, words

from gpusimhash import TextFeaturizer


@pytest.mark.parametrize(
    "text",
    [
        "The cat saw the CAT.",
        "lenguaje S^\u03a3 (paradigma)",  # str.lower() would give a final sigma
        "\u039f\u0394\u039f\u03a3 \u03a3",
        "\u0130stanbul \u0130",  # str.lower() gives two code points
        "snake_case and 3.14, x2",
        "",
    ],
)
def test_tokens_are_the_featurizers_words(text: str) -> None:
    assert Counter(tokens(text)) == TextFeaturizer().features(text)
    assert words(text) == list(TextFeaturizer().features(text))


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=40))
def test_tokens_match_on_any_text(text: str) -> None:
    assert Counter(tokens(text)) == TextFeaturizer().features(text)

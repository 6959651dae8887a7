import json
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusimhash import TextFeaturizer, fingerprint
from gpusimhash.hashing import feature_states
from gpusimhash.text import tokenize
from gpusimhash.unicode_tables import load_tables

# Characters whose classification is stable across Unicode versions, covering ASCII, Latin-1,
# Greek, Cyrillic, CJK, combining marks, digits, punctuation, astral letters and emoji.
ALPHABET = "aZ_9 \t\n.,!-'ÀéÖßΣσςЖжд漢字かな\u0301\u0130\U0001d518\U0001f600\U00010400\U00010428"
texts_strategy = st.lists(st.text(alphabet=ALPHABET, max_size=40), min_size=1, max_size=12)
CONFIGS = [
    {"analyzer": "word", "ngram": 1, "weighting": "count"},
    {"analyzer": "word", "ngram": 2, "weighting": "count"},
    {"analyzer": "word", "ngram": 3, "weighting": "binary"},
    {"analyzer": "word", "ngram": 1, "weighting": "logtf"},
    {"analyzer": "char", "ngram": 1, "weighting": "count"},
    {"analyzer": "char", "ngram": 3, "weighting": "count"},
    {"analyzer": "char", "ngram": 5, "weighting": "logtf"},
    {"analyzer": "word", "ngram": 2, "weighting": "count", "lowercase": False},
]


def regex_tokens(text: str) -> list[str]:
    tables = load_tables()
    lowered = "".join(chr(tables.lower[ord(c)]) for c in text)
    return re.findall(r"\w+", lowered)


@given(texts_strategy)
def test_tokens_are_regex_word_runs_of_the_lowered_text(texts):
    tokens = tokenize(texts)
    found = [[] for _ in texts]
    for start, length, doc in zip(tokens.starts, tokens.lengths, tokens.doc, strict=True):
        found[doc].append("".join(map(chr, tokens.code_points[start : start + length])))
    assert found == [regex_tokens(t) for t in texts]


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: "-".join(map(str, c.values())))
@settings(max_examples=40, deadline=None)
@given(texts=texts_strategy)
def test_vectorized_transform_equals_the_plain_python_definition(config, texts):
    featurizer = TextFeaturizer(**config)
    batch = featurizer.transform(texts)
    for doc, text in enumerate(texts):
        entries = slice(batch.offsets[doc], batch.offsets[doc + 1])
        got: dict[int, float] = {}
        for state, weight in zip(
            batch.states[entries].tolist(), batch.entry_weights()[entries].tolist(), strict=True
        ):
            got[state] = got.get(state, 0.0) + weight
        features = featurizer.features(text)
        expected = dict(
            zip(feature_states(list(features)).tolist(), features.values(), strict=True)
        )
        assert got == expected


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: "-".join(map(str, c.values())))
@settings(max_examples=25, deadline=None)
@given(texts=texts_strategy, bits=st.sampled_from([8, 64, 136]))
def test_text_codes_equal_codes_of_the_features(config, texts, bits):
    featurizer = TextFeaturizer(**config)
    from_text = fingerprint(texts, featurizer=featurizer, bits=bits, device="cpu")
    from_features = fingerprint([featurizer.features(t) for t in texts], bits=bits, device="cpu")
    np.testing.assert_array_equal(from_text, from_features)


def test_word_and_char_ngrams_follow_the_design_rules():
    assert TextFeaturizer(ngram=2).features("One, two; THREE") == {"one two": 1.0, "two three": 1.0}
    assert TextFeaturizer(ngram=4).features("one two") == {"one two": 1.0}
    assert TextFeaturizer(ngram=4).features("!!") == {}
    char = TextFeaturizer(analyzer="char", ngram=3)
    assert char.features("Ab,  cd") == {"ab ": 1.0, "b c": 1.0, " cd": 1.0}
    assert char.features("ab") == {"ab": 1.0}
    assert char.features("😀x😀") == {"x": 1.0}  # emoji are not word characters
    assert char.features("𝔘𝔘") == {"𝔘𝔘": 1.0}  # astral letters are


def test_uppercase_dotted_i_lowercases_to_itself_not_two_code_points():
    assert TextFeaturizer().features("İstanbul") == {"İstanbul".replace("S", "s"): 1.0}
    assert TextFeaturizer(lowercase=False).features("ABC abc") == {"ABC": 1.0, "abc": 1.0}


def test_weightings_of_repeated_features():
    text = "spam spam spam eggs"
    assert TextFeaturizer(weighting="count").features(text) == {"spam": 3.0, "eggs": 1.0}
    assert TextFeaturizer(weighting="binary").features(text) == {"spam": 1.0, "eggs": 1.0}
    logtf = TextFeaturizer(weighting="logtf").features(text)
    assert logtf == {"spam": 1.0 + float(np.log(3.0)), "eggs": 1.0}


def test_tfidf_uses_smooth_idf_fitted_on_the_corpus():
    corpus = ["a b", "a c", "a b d"]
    featurizer = TextFeaturizer(weighting="tfidf").fit(corpus, batch_size=2)
    weights = featurizer.features("a a b zzz")
    n = 3
    assert weights["a"] == pytest.approx(2 * (np.log((1 + n) / (1 + 3)) + 1), abs=0)
    assert weights["b"] == pytest.approx(np.log((1 + n) / (1 + 2)) + 1, abs=0)
    assert weights["zzz"] == pytest.approx(np.log(1 + n) + 1, abs=0)


def test_tfidf_refuses_to_transform_before_fit():
    with pytest.raises(ValueError, match="fit"):
        TextFeaturizer(weighting="tfidf").transform(["a"])


def test_config_round_trips_through_json_with_identical_codes():
    corpus = ["the quick brown fox", "the lazy dog", "quick quick fox"]
    featurizer = TextFeaturizer("word", 2, "tfidf", lowercase=False).fit(corpus)
    restored = TextFeaturizer.from_config(json.loads(json.dumps(featurizer.to_config())))
    assert repr(restored) == repr(featurizer)
    np.testing.assert_array_equal(
        fingerprint(corpus, featurizer=restored, device="cpu"),
        fingerprint(corpus, featurizer=featurizer, device="cpu"),
    )


@pytest.mark.parametrize(
    ("config", "match"),
    [
        ({"version": 99}, "version"),
        ({"version": 1, "analyzer": "word"}, "lacks the key"),
        (
            {
                "version": 1,
                "analyzer": "word",
                "ngram": 1,
                "weighting": "tfidf",
                "lowercase": True,
                "document_frequencies": {"n_docs": 2, "states": [5, 3], "df": [1, 1]},
            },
            "inconsistent",
        ),
        *(
            (
                {
                    "version": 1,
                    "analyzer": "word",
                    "ngram": 1,
                    "weighting": "tfidf",
                    "lowercase": True,
                    "document_frequencies": {"n_docs": 2} | frequencies,
                },
                match,
            )
            # 1.7 was read as state 1, 1.5 as a count of 1
            for frequencies, match in (
                ({"states": [1.7, 2.2], "df": [1, 1]}, "integers expected, got float64"),
                ({"states": [1, 2], "df": [1.5, 1]}, "integers expected, got float64"),
                ({"states": [1, 2**32], "df": [1, 1]}, "values outside uint32"),
            )
        ),
    ],
)
def test_bad_configs_are_refused(config, match):
    with pytest.raises(ValueError, match=match):
        TextFeaturizer.from_config(config)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"analyzer": "sentence"}, "analyzer"),
        ({"weighting": "bm25"}, "weighting"),
        ({"ngram": 0}, "ngram"),
    ],
)
def test_bad_featurizer_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        TextFeaturizer(**kwargs)


def test_non_text_document_is_named():
    with pytest.raises(TypeError, match="document 2"):
        TextFeaturizer().transform(["a", "b", 3])


def test_empty_and_tokenless_documents_have_no_features():
    batch = TextFeaturizer().transform(["", "...", "a"])
    assert batch.offsets.tolist() == [0, 0, 0, 1]
    codes = fingerprint(["", "...", "a"], device="cpu")
    assert not codes[:2].any()


def test_a_word_ngram_longer_than_every_document_costs_the_documents_not_n(monkeypatch):
    from gpusimhash import text

    texts = ["the cat sat on the mat", "a dog", ""]
    steps = []
    step = text.fnv1a_continue
    monkeypatch.setattr(text, "fnv1a_continue", lambda *a: steps.append(1) or step(*a))
    whole = TextFeaturizer(ngram=6).transform(texts)  # the longest document: one shingle
    needed = len(steps)
    long = TextFeaturizer(ngram=10_000).transform(texts)  # took a step per token of n
    assert len(steps) == 2 * needed
    np.testing.assert_array_equal(long.states, whole.states)
    np.testing.assert_array_equal(long.offsets, whole.offsets)
    assert TextFeaturizer(ngram=10**9).transform(texts).states.tolist() == whole.states.tolist()


@pytest.mark.parametrize("texts", [["a b", "c"], iter(["a b", "c"])])
@pytest.mark.parametrize(
    ("batch_size", "error"), [(0, ValueError), (-1, ValueError), (1.5, TypeError)]
)
def test_fit_refuses_a_batch_size_below_one(texts, batch_size, error):
    # a list gave "range() arg 3 must not be zero"; an iterator became one batch
    with pytest.raises(error, match="batch_size"):
        TextFeaturizer(weighting="tfidf").fit(texts, batch_size=batch_size)

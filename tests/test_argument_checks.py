"""Arguments of the wrong kind are TypeErrors naming the argument (issue 15, D14)."""

import numpy as np
import pytest

from gpusimhash import TextFeaturizer, fingerprint


@pytest.mark.parametrize("featurizer", ["word", 42, object()])
@pytest.mark.parametrize("documents", [["a b"], [{"a": 1}]])
def test_featurizer_must_be_a_text_featurizer(featurizer, documents):
    with pytest.raises(TypeError, match="featurizer must be a TextFeaturizer"):
        fingerprint(documents, featurizer=featurizer)


def test_zero_dimensional_array_is_not_a_collection():
    with pytest.raises(TypeError, match="vectors must be a sequence or iterable of documents"):
        fingerprint(np.array(1.5))


def test_numpy_integers_and_bools_are_accepted():
    featurizer = TextFeaturizer(ngram=np.int64(2), lowercase=np.bool_(False))
    assert (featurizer.ngram, featurizer.lowercase) == (2, False)
    assert type(featurizer.ngram) is int


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"lowercase": "no"}, TypeError, "lowercase must be a bool, got str"),
        ({"lowercase": 1}, TypeError, "lowercase must be a bool, got int"),
        ({"ngram": 1.5}, TypeError, "ngram must be an integer"),
        ({"ngram": 0}, ValueError, "ngram must be >= 1"),
    ],
)
def test_featurizer_settings_of_the_wrong_kind(kwargs, error, match):
    with pytest.raises(error, match=match):
        TextFeaturizer(**kwargs)


@pytest.mark.parametrize(
    "frequencies",
    [
        {"n_docs": 2, "states": [-1, 5, 7], "df": [1, 1, 2]},
        {"n_docs": 2, "states": [2**40, 5, 7], "df": [1, 1, 2]},
        {"n_docs": 2, "states": [3, 5, 7], "df": [1, 1, 3]},
        {"n_docs": "2", "states": [3, 5, 7], "df": [1, 1, 2]},
        {"n_docs": 2, "states": [[3], [5]], "df": [[1], [1]]},
        {"states": [3], "df": [1]},
        [1, 2],
    ],
)
def test_tampered_document_frequencies_are_value_errors(frequencies):
    config = TextFeaturizer("word", 1, "tfidf").fit(["a b", "b c"]).to_config()
    config["document_frequencies"] = frequencies
    with pytest.raises(ValueError, match="featurizer config has"):
        TextFeaturizer.from_config(config)


@pytest.mark.parametrize(("pairs", "bad"), [([[0, -1]], "-1"), ([[0, 1], [2, 7]], "7")])
def test_cluster_labels_names_the_bad_document(pairs, bad):
    from gpusimhash import cluster_labels

    with pytest.raises(ValueError, match=rf"pairs must index documents in \[0, 3\), got {bad}$"):
        cluster_labels(np.array(pairs), 3)

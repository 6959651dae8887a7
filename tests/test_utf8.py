"""Utf8Texts: Arrow views, newline splitting, and CPU codes equal to the str path's."""

from __future__ import annotations

import io

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusimhash import fingerprint
from gpusimhash.text import TextFeaturizer
from gpusimhash.utf8 import Utf8Texts

TEXTS = ["The cat sat", "", "ÄÖÜ straße İstanbul ΣΑΣ 𝐀𝐁c 😀 x_y", "a\nb", "日本語 テキスト", " ,, "]


@given(st.lists(st.text(max_size=12), min_size=1, max_size=30), st.data())
def test_a_slice_decodes_its_own_documents(texts, data):
    start = data.draw(st.integers(0, len(texts) - 1))
    stop = data.draw(st.integers(start, len(texts)))
    assert Utf8Texts.from_strings(texts)[start:stop].to_strings() == texts[start:stop]


def test_a_slice_copies_its_own_bytes_not_its_batchs():
    import tracemalloc

    batch = Utf8Texts.from_strings(["x" * 1000] * 20_000)  # 20 MB
    tracemalloc.start()
    try:
        assert batch[7:8].to_strings() == ["x" * 1000]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # a row at a time out of a batch of many megabytes made the report's texts take a minute
    assert peak < 100_000


def test_arrow_arrays_are_viewed_in_place():
    for kind in (pa.string(), pa.large_string()):
        array = pa.array(TEXTS, kind)
        texts = Utf8Texts.from_arrow(array)
        assert texts.to_strings() == TEXTS
        assert np.shares_memory(texts.data, np.frombuffer(array.buffers()[2], np.uint8))
        assert Utf8Texts.from_arrow(array.slice(2, 3)).to_strings() == TEXTS[2:5]
    chunked = pa.chunked_array([TEXTS[:2], TEXTS[2:]])
    assert Utf8Texts.from_arrow(chunked).to_strings() == TEXTS
    assert len(Utf8Texts.from_arrow(pa.array([], pa.string()))) == 0


def test_arrow_errors():
    with pytest.raises(ValueError, match="document 1: null"):
        Utf8Texts.from_arrow(pa.array(["a", None]))
    with pytest.raises(TypeError, match="string or large_string"):
        Utf8Texts.from_arrow(pa.array([1, 2]))


def test_constructor_checks():
    with pytest.raises(TypeError, match="uint8"):
        Utf8Texts(np.zeros(3, np.int32), np.array([0, 3]))
    with pytest.raises(ValueError, match="non-decreasing"):
        Utf8Texts(np.zeros(3, np.uint8), np.array([0, 2, 1]))
    with pytest.raises(ValueError, match="within data"):
        Utf8Texts(np.zeros(3, np.uint8), np.array([0, 4]))
    with pytest.raises(TypeError, match="slices"):
        Utf8Texts.from_strings(["a"])[0]


@pytest.mark.parametrize(
    "raw",
    [b"", b"\n", b"a", b"a\nb", b"a\r\r\nb\r", b"\xef\xbb\xbfx\ny\n", b"\xef\xbb\xbf", b"\n\n"],
)
def test_lines_match_the_text_reader(raw):
    expected = [line.decode().rstrip("\r\n") for line in io.BytesIO(raw)]
    if expected:
        expected[0] = expected[0].removeprefix("\ufeff")
    assert Utf8Texts.from_lines(raw).to_strings() == expected


def test_code_point_counts():
    texts = Utf8Texts.from_strings(TEXTS)
    assert texts.code_point_counts().tolist() == [len(t) for t in TEXTS]
    assert texts[2:4].code_point_counts().tolist() == [len(TEXTS[2]), len(TEXTS[3])]


@pytest.mark.parametrize(
    "featurizer",
    [
        TextFeaturizer(),
        TextFeaturizer("word", 3, "logtf", lowercase=False),
        TextFeaturizer("char", 4),
    ],
    ids=repr,
)
def test_cpu_codes_equal_the_str_path(featurizer):
    expected = fingerprint(TEXTS, bits=128, seed=4, device="cpu", featurizer=featurizer)
    for documents in (Utf8Texts.from_strings(TEXTS), pa.array(TEXTS), pa.array(TEXTS).slice(0)):
        codes = fingerprint(
            documents, bits=128, seed=4, device="cpu", featurizer=featurizer, batch_size=4
        )
        np.testing.assert_array_equal(codes, expected)


ALPHABET = st.sampled_from(
    list("aAbB zZ_9.,\n\r\t-") + ["é", "É", "İ", "ß", "Σ", "ς", "日", "𝐀", "😀", "\u00a0", "\x00"]
)


@settings(max_examples=60, deadline=None)
@given(
    texts=st.lists(st.text(alphabet=ALPHABET, max_size=30), max_size=8),
    analyzer=st.sampled_from(["word", "char"]),
    ngram=st.integers(1, 3),
    lowercase=st.booleans(),
)
def test_transform_property(texts, analyzer, ngram, lowercase):
    featurizer = TextFeaturizer(analyzer, ngram, "logtf", lowercase=lowercase)
    expected = featurizer.transform(texts)
    got = featurizer.transform(Utf8Texts.from_strings(texts))
    np.testing.assert_array_equal(got.states, expected.states)
    np.testing.assert_array_equal(got.offsets, expected.offsets)
    np.testing.assert_array_equal(got.weights, expected.weights)


def test_invalid_utf8_names_the_document():
    texts = Utf8Texts(np.frombuffer(b"okfine\xc3(", np.uint8), np.array([0, 2, 6, 8]))
    with pytest.raises(ValueError, match="document 7: not valid UTF-8 \\(byte 0"):
        TextFeaturizer().transform(texts, first_index=5)


@pytest.mark.parametrize("featurizer", [TextFeaturizer(), TextFeaturizer("char", 3)], ids=repr)
def test_tokenizing_in_threads_gives_the_same_features(monkeypatch, featurizer):
    from gpusimhash._cpu import _utf8_loops

    texts = TEXTS * 5
    expected = featurizer.transform(texts)
    monkeypatch.setattr(_utf8_loops, "PART_BYTES", 7)
    monkeypatch.setattr(_utf8_loops, "threads", lambda: 4)
    got = featurizer.transform(Utf8Texts.from_strings(texts))
    np.testing.assert_array_equal(got.states, expected.states)
    np.testing.assert_array_equal(got.offsets, expected.offsets)
    bad = Utf8Texts.from_strings(texts)
    data = bad.data.copy()
    data[bad.offsets[20]] = 0x80  # a stray continuation byte opens document 20
    with pytest.raises(ValueError, match="document 20: not valid UTF-8"):
        featurizer.transform(Utf8Texts(data, bad.offsets))


def test_the_callers_offsets_changed_later_do_not_reach_the_loops():
    data = np.frombuffer(b"red fox blue sky", np.uint8)
    offsets = np.array([0, 7, 16], np.int64)
    texts = Utf8Texts(data, offsets)
    expected = TextFeaturizer().transform(texts)
    offsets[1] = 10**9  # the caller reuses its array: the loops read the bytes it names
    assert texts.offsets.tolist() == [0, 7, 16]
    found = TextFeaturizer().transform(texts)
    np.testing.assert_array_equal(found.states, expected.states)
    with pytest.raises(ValueError, match="read-only"):
        texts.offsets[1] = 10**9

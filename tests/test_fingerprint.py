import itertools

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from gpusimhash import fingerprint
from gpusimhash.hashing import feature_states, seed_states, xorshift32_words

features = st.text(max_size=6)
int_vector = st.dictionaries(features, st.integers(-1000, 1000), max_size=12)
bits_values = st.sampled_from([8, 16, 24, 64, 72, 128, 256])


def exact_slots(vector: dict, bits: int, seed: int) -> list[int]:
    """The reference's slot sums for integer weights, in Python's exact integers."""
    slots = [0] * bits
    names = list(vector)
    if not names:
        return slots
    words = xorshift32_words(seed_states(feature_states(names), seed), -(-bits // 32)).tolist()
    for name, row in zip(names, words, strict=True):
        for i in range(bits):
            slots[i] += vector[name] if (row[i // 32] >> (i % 32)) & 1 else -vector[name]
    return slots


def packed(bit_list: list[int]) -> list[int]:
    return np.packbits(np.array(bit_list, np.uint8), bitorder="little").tolist()


@settings(max_examples=60)
@given(st.lists(int_vector, max_size=6), bits_values, st.integers(0, 2**32 - 1))
def test_integer_weights_match_the_reference_exactly(vectors, bits, seed):
    codes = fingerprint(vectors, bits=bits, seed=seed, device="cpu")
    assert codes.shape == (len(vectors), bits // 8)
    for vector, code in zip(vectors, codes, strict=True):
        expected = [int(s > 0) for s in exact_slots(vector, bits, seed)]
        assert code.tolist() == packed(expected)


@settings(max_examples=40)
@given(st.lists(int_vector, min_size=1, max_size=5), bits_values, st.integers(1, 10**6))
def test_scaling_weights_by_a_positive_constant_changes_nothing(vectors, bits, c):
    scaled = [{f: w * c for f, w in v.items()} for v in vectors]
    np.testing.assert_array_equal(
        fingerprint(scaled, bits=bits, device="cpu"), fingerprint(vectors, bits=bits, device="cpu")
    )


@settings(max_examples=40)
@given(
    st.dictionaries(features, st.floats(-1e6, 1e6, allow_nan=False), max_size=10),
    st.integers(-60, 60),
)
def test_scaling_float_weights_by_a_power_of_two_changes_nothing(vector, exponent):
    scaled = {f: float(np.ldexp(w, exponent)) for f, w in vector.items()}
    # a subnormal weight scaled down loses bits (5e-324 / 2 is 0): then it is another vector
    assume(all(np.ldexp(scaled[f], -exponent) == w for f, w in vector.items()))
    np.testing.assert_array_equal(
        fingerprint([scaled], bits=128, device="cpu"), fingerprint([vector], bits=128, device="cpu")
    )


@settings(max_examples=40)
@given(int_vector, st.randoms(use_true_random=False))
def test_feature_order_changes_nothing_for_integer_weights(vector, rng):
    items = list(vector.items())
    rng.shuffle(items)
    np.testing.assert_array_equal(
        fingerprint([dict(items)], device="cpu"), fingerprint([vector], device="cpu")
    )


@settings(max_examples=40)
@given(int_vector, bits_values, st.integers(0, 2**32 - 1))
def test_negating_weights_flips_every_bit_that_is_not_a_tie(vector, bits, seed):
    negated = {f: -w for f, w in vector.items()}
    code, flipped = fingerprint([vector, negated], bits=bits, seed=seed, device="cpu")
    ties = np.array([s == 0 for s in exact_slots(vector, bits, seed)])
    original = np.unpackbits(code, bitorder="little").astype(bool)
    negative = np.unpackbits(flipped, bitorder="little").astype(bool)
    assert np.array_equal(original[~ties], ~negative[~ties])
    assert not original[ties].any()
    assert not negative[ties].any()


@given(st.lists(int_vector, min_size=1, max_size=8))
def test_identical_vectors_give_identical_codes(vectors):
    codes = fingerprint(vectors + vectors, bits=64, device="cpu")
    np.testing.assert_array_equal(codes[: len(vectors)], codes[len(vectors) :])


def test_all_input_kinds_agree():
    mappings = [{"apple": 3, "pie": 1.5, "🍎": -2}, {}, {"x": 0.25}]
    pairs = [list(m.items()) for m in mappings]
    vocabulary = ["apple", "pie", "🍎", "x"]
    dense = np.array([[3, 1.5, -2, 0], [0, 0, 0, 0], [0, 0, 0, 0.25]])
    expected = fingerprint(mappings, bits=128, seed=7, device="cpu")
    for vectors, kwargs in [
        (pairs, {}),
        (iter(mappings), {}),
        ((m for m in mappings), {"batch_size": 1}),
        (sp.csr_matrix(dense), {"vocabulary": vocabulary}),
        (sp.csr_matrix(dense), {"vocabulary": vocabulary, "batch_size": 2}),
    ]:
        got = fingerprint(vectors, bits=128, seed=7, device="cpu", **kwargs)
        np.testing.assert_array_equal(got, expected)


def test_duplicate_pairs_add_up_like_one_summed_entry_for_integers():
    pairs = [[("a", 2), ("b", 1), ("a", 3)]]
    np.testing.assert_array_equal(
        fingerprint(pairs, device="cpu"), fingerprint([{"a": 5, "b": 1}], device="cpu")
    )


@pytest.mark.parametrize("batch_size", [1, 2, 7, 1000])
def test_codes_do_not_depend_on_batching(batch_size):
    rng = np.random.default_rng(0)
    vectors = [
        {f"f{k}": float(rng.normal()) for k in rng.integers(0, 50, size=rng.integers(0, 9))}
        for _ in range(40)
    ]
    texts = [" ".join(f"w{k}" for k in rng.integers(0, 30, size=6)) for _ in range(40)]
    for documents in (vectors, texts):
        whole = fingerprint(documents, bits=96, device="cpu")
        split = fingerprint(iter(documents), bits=96, device="cpu", batch_size=batch_size)
        np.testing.assert_array_equal(split, whole)


def test_empty_input_gives_an_empty_array():
    for empty in ([], iter([]), sp.csr_matrix((0, 3))):
        kwargs = {"vocabulary": ["a", "b", "c"]} if sp.issparse(empty) else {}
        codes = fingerprint(empty, bits=32, device="cpu", **kwargs)
        assert codes.shape == (0, 4)
        assert codes.dtype == np.uint8


def test_every_multiple_of_eight_up_to_4096_bits_is_accepted():
    vector = [{"a": 1, "b": -2, "c": 3}]
    for bits in itertools.chain(range(8, 257, 8), [1024, 4096]):
        code = fingerprint(vector, bits=bits, device="cpu")
        expected = [int(s > 0) for s in exact_slots(vector[0], bits, 0)]
        assert code[0].tolist() == packed(expected)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"bits": 12}, ValueError, "multiple of 8"),
        ({"bits": 0}, ValueError, "bits"),
        ({"bits": 4104}, ValueError, "bits"),
        ({"bits": 64.0}, TypeError, "bits"),
        ({"bits": True}, TypeError, "bits"),
        ({"seed": -1}, ValueError, "seed"),
        ({"seed": 2**32}, ValueError, "seed"),
        ({"seed": "1"}, TypeError, "seed"),
        ({"device": "tpu"}, ValueError, "device"),
        ({"batch_size": 0}, ValueError, "batch_size"),
    ],
)
def test_bad_arguments_are_named(kwargs, error, match):
    with pytest.raises(error, match=match):
        fingerprint([{"a": 1}], **kwargs)


def test_asking_for_a_missing_gpu_raises_with_an_install_hint(monkeypatch):
    from gpusimhash import _backend

    monkeypatch.setattr(_backend, "gpu_available", lambda: False)
    with pytest.raises(RuntimeError, match="cupy"):
        fingerprint([{"a": 1}], device="gpu")
    # auto falls back to the CPU
    assert fingerprint([{"a": 1}], device="auto").shape == (1, 8)


@pytest.mark.parametrize(
    ("vectors", "error", "match"),
    [
        ([{"a": 1}, {"b": float("nan")}], ValueError, r"document 1, feature 'b'.*not finite"),
        ([{"a": float("inf")}], ValueError, "document 0, feature 'a'"),
        ([{"a": 10**400}], ValueError, "document 0, feature 'a'"),
        ([{"a": 1}, {3: 1}], TypeError, "document 1: feature 3 must be a str"),
        ([{"a": "2"}], TypeError, "document 0, feature 'a': weight must be a real number"),
        ([{"a": True}], TypeError, "weight must be a real number, got bool"),
        ([{"a": None}], TypeError, "NoneType"),
        ([{"a": 1}, "text"], TypeError, "document 1: expected a mapping"),
        ([[("a", 1)], {"a": 1}], TypeError, "document 1: expected a list of"),
        ([[("a", 1, 2)]], ValueError, r"document 0: expected \(feature, weight\) pairs"),
        ([[("a", 1)], [("b",)]], ValueError, "document 1"),
        (["a", {"a": 1}], TypeError, "document 1: expected text"),
        ([3.5], TypeError, "document 0"),
        ({"a": 1}, TypeError, "vectors must be a sequence"),
        ("just text", TypeError, "vectors must be a sequence"),
        (42, TypeError, "vectors must be a sequence"),
    ],
)
def test_bad_documents_are_named(vectors, error, match):
    with pytest.raises(error, match=match):
        fingerprint(vectors, device="cpu")


def test_bad_error_positions_count_across_batches():
    vectors = [{"a": 1}] * 5 + [{"a": float("nan")}]
    with pytest.raises(ValueError, match="document 5"):
        fingerprint(iter(vectors), batch_size=2, device="cpu")


def test_sparse_input_errors():
    matrix = sp.csr_matrix(np.array([[1.0, 0.0], [0.0, np.nan]]))
    with pytest.raises(ValueError, match="vocabulary="):
        fingerprint(matrix, device="cpu")
    with pytest.raises(ValueError, match="2 columns"):
        fingerprint(matrix, vocabulary=["a"], device="cpu")
    with pytest.raises(TypeError, match=r"vocabulary\[1\]"):
        fingerprint(matrix, vocabulary=["a", 2], device="cpu")
    with pytest.raises(ValueError, match="document 1, feature 'b'"):
        fingerprint(matrix, vocabulary=["a", "b"], device="cpu")
    with pytest.raises(ValueError, match="only for a scipy sparse"):
        fingerprint([{"a": 1}], vocabulary=["a"], device="cpu")


def test_sparse_matrix_from_scikit_learn_style_vectorizer_matches_text():
    # the vocabulary and counts a CountVectorizer would give, built by hand
    texts = ["red fish blue fish", "one fish"]
    vocabulary = ["blue", "fish", "one", "red"]
    counts = sp.csr_matrix(np.array([[1, 2, 0, 1], [0, 1, 1, 0]]))
    np.testing.assert_array_equal(
        fingerprint(counts, vocabulary=vocabulary, device="cpu"), fingerprint(texts, device="cpu")
    )


@pytest.mark.parametrize(
    ("indices", "indptr", "match"),
    [
        # SciPy keeps a decreasing indptr: row 1 of it, sliced, came back empty (a wrong code)
        ([0, 1, 2], [0, 3, 1, 3], "indptr must be a non-decreasing sequence"),
        ([0, 1, 7], [0, 1, 2, 3], "indices must be < 3"),
    ],
)
@pytest.mark.parametrize("batch_size", [1, 10])
def test_a_malformed_sparse_matrix_is_refused(indices, indptr, match, batch_size):
    matrix = sp.csr_matrix((np.ones(3), np.array(indices), np.array(indptr)), shape=(3, 3))
    with pytest.raises(ValueError, match=f"sparse matrix is malformed: {match}"):
        fingerprint(matrix, vocabulary=["a", "b", "c"], bits=64, batch_size=batch_size)

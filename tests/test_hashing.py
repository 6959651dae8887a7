import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpusimhash.hashing import (
    FNV_OFFSET_BASIS,
    feature_states,
    fnv1a_continue,
    seed_states,
    sign_bits,
    utf16_units,
    xorshift32_words,
)


def fnv1a_python(text: str) -> int:
    """The seed's fnv1a, in plain Python over UTF-16 code units."""
    h = 0x811C9DC5
    for unit in utf16_units(text).tolist():
        h = ((h ^ unit) * 0x01000193) & 0xFFFFFFFF
    return h


def xorshift32_python(seed: int, n: int) -> list[int]:
    s = seed or 1
    out = []
    for _ in range(n):
        s ^= (s << 13) & 0xFFFFFFFF
        s ^= s >> 17
        s ^= (s << 5) & 0xFFFFFFFF
        out.append(s)
    return out


def test_known_answers_pin_the_constants():
    # fnv1a("a") and fnv1a("") from the FNV reference values; xorshift32(1) first outputs.
    assert int(feature_states([""])[0]) == 0x811C9DC5
    assert int(feature_states(["a"])[0]) == 0xE40C292C
    assert int(feature_states(["foobar"])[0]) == 0xBF9CF968
    assert xorshift32_words(np.array([1], np.uint32), 3).tolist() == [
        [270369, 67634689, 2647435461]
    ]


def test_zero_hash_seeds_xorshift_with_one():
    zero = xorshift32_words(np.array([0], np.uint32), 4)
    one = xorshift32_words(np.array([1], np.uint32), 4)
    np.testing.assert_array_equal(zero, one)


@given(st.lists(st.text(max_size=12), max_size=20), st.integers(0, 2**32 - 1))
def test_seeded_hash_matches_plain_python(features, seed):
    hashes = seed_states(feature_states(features), seed)
    assert hashes.tolist() == [fnv1a_python(f"{f}:{seed}") for f in features]


@given(st.lists(st.integers(0, 2**32 - 1), min_size=1, max_size=10), st.integers(1, 9))
def test_xorshift_matches_plain_python(seeds, n_words):
    words = xorshift32_words(np.array(seeds, np.uint32), n_words)
    assert words.tolist() == [xorshift32_python(s, n_words) for s in seeds]


def test_astral_characters_hash_as_surrogate_pairs():
    text = "a\U0001f600b"
    assert utf16_units(text).tolist() == [0x61, 0xD83D, 0xDE00, 0x62]
    # code points (UTF-32) and UTF-16 units give the same state
    code_points = np.frombuffer(text.encode("utf-32-le"), np.uint32)
    basis = np.array([FNV_OFFSET_BASIS], np.uint32)
    from_code_points = fnv1a_continue(basis, code_points, np.array([0]), np.array([3]))
    assert int(from_code_points[0]) == fnv1a_python(text)


def test_continue_from_a_state_equals_hashing_the_concatenation():
    units = utf16_units("helloworld")
    head = fnv1a_continue(
        np.array([FNV_OFFSET_BASIS], np.uint32), units, np.array([0]), np.array([5])
    )
    tail = fnv1a_continue(head, units, np.array([5]), np.array([5]))
    assert int(tail[0]) == fnv1a_python("helloworld")


@pytest.mark.parametrize("bits", [8, 24, 32, 40, 64, 100 * 8])
def test_sign_bits_take_bit_i_from_word_i_div_32(bits):
    hashes = np.array([5, 77, 123456789], np.uint32)
    signs = sign_bits(hashes, bits)
    words = xorshift32_words(hashes, -(-bits // 32))
    expected = [[(w[i // 32] >> (i % 32)) & 1 for i in range(bits)] for w in words.tolist()]
    assert signs.tolist() == expected

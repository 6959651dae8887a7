"""The seed's feature hash, vectorized: FNV-1a over UTF-16 code units, then xorshift32.

This module is the specification the CUDA kernels (``kernels/common.cuh``) mirror line for line.
A feature ``f`` with global seed ``s`` gets the 32-bit hash ``fnv1a(f + ":" + str(s))`` over the
UTF-16 code units of the string (an astral character is two units, a surrogate pair). That hash
seeds a xorshift32 generator (a zero hash becomes 1) whose successive 32-bit words give the
feature's sign bits: bit ``i`` is bit ``i % 32`` of word ``i // 32``.

Because FNV-1a is a left-to-right state machine, a feature is fully described by its *state*: the
FNV-1a value after its own code units. Two features with the same state hash identically under
every seed, so featurizers emit states and ``seed_states`` appends the ``":" + seed`` suffix.
"""

from __future__ import annotations

import numpy as np

from gpusimhash import _segments
from gpusimhash._cpu._loops import fnv1a_spans

FNV_OFFSET_BASIS = np.uint32(0x811C9DC5)
FNV_PRIME = np.uint32(0x01000193)
MAX_SEED = 2**32


def fnv1a_step(states: np.ndarray, units: np.ndarray) -> np.ndarray:
    """Advance FNV-1a states by one UTF-16 code unit each.

    Parameters
    ----------
    states : ndarray, dtype uint32
        Current states.
    units : ndarray, dtype uint16 or uint32, same shape
        The next code unit of each state's string.

    Returns
    -------
    ndarray, dtype uint32
        ``(state ^ unit) * 0x01000193 mod 2**32``.
    """
    return (states ^ units.astype(np.uint32)) * FNV_PRIME


def fnv1a_continue(
    states: np.ndarray, units: np.ndarray, starts: np.ndarray, lengths: np.ndarray
) -> np.ndarray:
    """Run FNV-1a over many strings at once, each from its own starting state.

    String ``k`` is ``units[starts[k] : starts[k] + lengths[k]]``; the loop over its units is
    compiled (``_cpu._loops.fnv1a_spans``), so the cost is one multiply per code unit. ``units`` may
    also hold code points: one above U+FFFF is hashed as its UTF-16 surrogate pair.

    Parameters
    ----------
    states : ndarray, shape (m,), dtype uint32
        Starting state of each string (``FNV_OFFSET_BASIS`` for a fresh hash).
    units : ndarray, shape (total,), dtype uint16 or uint32
        UTF-16 code units (or code points) of all strings.
    starts, lengths : ndarray, shape (m,), dtype int64
        Where each string begins in ``units`` and how many units it has.

    Returns
    -------
    ndarray, shape (m,), dtype uint32
        The state after each string.

    Examples
    --------
    >>> import numpy as np
    >>> units = utf16_units("abc")
    >>> start = np.full(2, FNV_OFFSET_BASIS, np.uint32)
    >>> hashes = fnv1a_continue(start, units, np.array([0, 1]), np.array([1, 2]))
    >>> [hex(h) for h in hashes.tolist()] == [hex(int(feature_states([s])[0])) for s in ("a", "bc")]
    True
    """
    return fnv1a_spans(
        np.ascontiguousarray(states, dtype=np.uint32),
        np.ascontiguousarray(units, dtype=np.uint32),
        np.ascontiguousarray(starts, dtype=np.int64),
        np.ascontiguousarray(lengths, dtype=np.int64),
    )


def utf16_units(text: str) -> np.ndarray:
    """Return the UTF-16 code units of a string.

    Parameters
    ----------
    text : str
        Any string; lone surrogates are kept as single units.

    Returns
    -------
    ndarray, dtype uint16
    """
    return np.frombuffer(text.encode("utf-16-le", "surrogatepass"), dtype=np.uint16)


def feature_states(features: list[str]) -> np.ndarray:
    """Hash feature strings to their FNV-1a states (the hash before the seed suffix).

    Parameters
    ----------
    features : list of str
        Distinct or repeated feature strings.

    Returns
    -------
    ndarray, shape (len(features),), dtype uint32

    Examples
    --------
    >>> hex(int(feature_states(["a"])[0]))
    '0xe40c292c'
    """
    encoded = [f.encode("utf-16-le", "surrogatepass") for f in features]
    lengths = np.fromiter((len(e) // 2 for e in encoded), dtype=np.int64, count=len(encoded))
    units = np.frombuffer(b"".join(encoded), dtype=np.uint16)
    starts = _segments.starts(lengths)
    basis = np.full(len(encoded), FNV_OFFSET_BASIS, dtype=np.uint32)
    return fnv1a_continue(basis, units, starts, lengths)


def seed_states(states: np.ndarray, seed: int) -> np.ndarray:
    """Append the ``":" + str(seed)`` suffix to feature states, giving the final feature hashes.

    Parameters
    ----------
    states : ndarray, dtype uint32
        Feature states from a featurizer or ``feature_states``.
    seed : int
        Global seed in ``[0, 2**32)``.

    Returns
    -------
    ndarray, dtype uint32
        ``fnv1a(feature + ":" + str(seed))`` for each feature.
    """
    hashes = np.asarray(states, dtype=np.uint32)
    for unit in utf16_units(f":{seed}").tolist():
        hashes = fnv1a_step(hashes, np.uint32(unit))
    return hashes


def xorshift32_words(hashes: np.ndarray, n_words: int) -> np.ndarray:
    """Draw the first ``n_words`` outputs of xorshift32 seeded with each hash.

    Parameters
    ----------
    hashes : ndarray, shape (m,), dtype uint32
        Seeds; a zero seed becomes 1, as in the reference.
    n_words : int
        How many 32-bit words to draw (``ceil(bits / 32)``).

    Returns
    -------
    ndarray, shape (m, n_words), dtype uint32
        Word ``j`` holds sign bits ``32 * j`` to ``32 * j + 31``, least significant first.
    """
    state = np.where(hashes == 0, np.uint32(1), hashes).astype(np.uint32)
    words = np.empty((state.size, n_words), dtype=np.uint32)
    for j in range(n_words):
        state ^= state << np.uint32(13)
        state ^= state >> np.uint32(17)
        state ^= state << np.uint32(5)
        words[:, j] = state
    return words


def unpack_words(words: np.ndarray) -> np.ndarray:
    """Unpack sign words into one 0/1 column per bit, least significant bit of word 0 first.

    Parameters
    ----------
    words : ndarray, shape (m, n_words), dtype uint32
        Output of ``xorshift32_words`` (or a slice of its columns).

    Returns
    -------
    ndarray, shape (m, 32 * n_words), dtype uint8
    """
    little_endian = np.ascontiguousarray(words, dtype="<u4")
    return np.unpackbits(little_endian.view(np.uint8), axis=1, bitorder="little")


def sign_bits(hashes: np.ndarray, bits: int) -> np.ndarray:
    """Unpack each feature hash into its ``bits`` pseudo-random sign bits.

    Parameters
    ----------
    hashes : ndarray, shape (m,), dtype uint32
        Final feature hashes (``seed_states`` output).
    bits : int
        Fingerprint length.

    Returns
    -------
    ndarray, shape (m, bits), dtype uint8
        ``1`` where the feature adds its weight to slot ``i``, ``0`` where it subtracts.

    Examples
    --------
    >>> import numpy as np
    >>> sign_bits(np.array([1], np.uint32), 8)  # xorshift32(1) = 270369 = 0x42021
    array([[1, 0, 0, 0, 0, 1, 0, 0]], dtype=uint8)
    """
    return unpack_words(xorshift32_words(hashes, -(-bits // 32)))[:, :bits]

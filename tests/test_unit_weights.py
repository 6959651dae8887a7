"""The CPU's unit-weight accumulation (bit-sliced counters) against the int64 sums."""

from __future__ import annotations

import numpy as np
import pytest

from gpusimhash._cpu._loops import accumulate_codes, accumulate_unit_codes


@pytest.mark.parametrize("bits", [8, 24, 64, 72, 128, 256, 4096])
def test_unit_counters_equal_the_int64_sums(bits):
    rng = np.random.default_rng(bits)
    lengths = rng.integers(0, 30, 500)
    lengths[:4] = [0, 1, 2, 5000]  # empty, single, a tie-prone pair, many planes
    offsets = np.zeros(lengths.size + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    # few distinct hashes: many exact ties (a slot set by exactly half the entries stays 0)
    hashes = rng.integers(0, 4, offsets[-1]).astype(np.uint32) * np.uint32(2654435761)
    hashes[::5] = 0  # a zero hash seeds xorshift32 with 1
    expected = accumulate_codes(hashes, offsets, np.ones(offsets[-1], np.int64), bits)
    np.testing.assert_array_equal(accumulate_unit_codes(hashes, offsets, bits), expected)

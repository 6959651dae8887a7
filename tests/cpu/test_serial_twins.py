"""A compiled loop's serial twin gives the bits of its parallel form, and small calls use it."""

import numpy as np
import pytest

from gpusimhash._cpu import _cluster_loops, _loops, _runtime, _verify_loops
from gpusimhash._cpu._runtime import parallel_call, serial_twin


def random_batch(rng, n_docs=300):
    sizes = rng.integers(0, 40, n_docs)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    states = rng.integers(0, 50, int(offsets[-1]), dtype=np.uint32)  # many repeated states
    weights = rng.normal(size=states.size)
    return states, offsets, weights


def test_the_twin_is_the_loop_compiled_without_parallel_and_kept():
    twin = serial_twin(_verify_loops.merge_documents)
    assert twin is not _verify_loops.merge_documents
    assert twin is serial_twin(_verify_loops.merge_documents)
    assert twin.py_func.__qualname__ == "merge_documents_serial"
    assert not twin.targetoptions.get("parallel")
    assert twin.targetoptions.get("nogil")


def test_a_loop_calling_a_parallel_loop_gets_a_twin_calling_its_twin():
    twin = serial_twin(_cluster_loops.lazy_star)
    assert twin.py_func.__globals__["_tentative_passes"] is serial_twin(
        _cluster_loops._tentative_passes
    )
    assert _cluster_loops.lazy_star.py_func.__globals__["_tentative_passes"] is (
        _cluster_loops._tentative_passes
    )  # the module itself is unchanged


def test_a_loop_reaching_no_parallel_loop_and_a_plain_function_are_their_own_twins():
    assert serial_twin(_loops.word_runs) is _loops.word_runs
    assert serial_twin(len) is len


@pytest.mark.parametrize("seed", [0, 1])
def test_twins_give_the_same_bits(seed):
    rng = np.random.default_rng(seed)
    states, offsets, weights = random_batch(rng)
    merged = _verify_loops.merge_documents(states, offsets, weights)
    twin_merged = serial_twin(_verify_loops.merge_documents)(states, offsets, weights)
    for a, b in zip(merged, twin_merged, strict=True):
        np.testing.assert_array_equal(a, b)
    left = rng.integers(0, offsets.size - 1, 500)
    right = rng.integers(0, offsets.size - 1, 500)
    for loop in (_verify_loops.pair_similarities,):
        want = loop(*merged, left, right)
        got = serial_twin(loop)(*merged, left, right)
        for a, b in zip(want, got, strict=True):
            np.testing.assert_array_equal(a.view(np.uint64), b.view(np.uint64))
    hashes = rng.integers(0, 2**32, states.size, dtype=np.uint64).astype(np.uint32)
    fixed = rng.integers(-1000, 1000, states.size, dtype=np.int64)
    np.testing.assert_array_equal(
        _loops.accumulate_codes(hashes, offsets, fixed, 128),
        serial_twin(_loops.accumulate_codes)(hashes, offsets, fixed, 128),
    )
    np.testing.assert_array_equal(
        _loops.accumulate_unit_codes(hashes, offsets, 256),
        serial_twin(_loops.accumulate_unit_codes)(hashes, offsets, 256),
    )


def test_small_calls_run_the_twin_and_large_ones_the_parallel_form(monkeypatch):
    called = []

    def recording(name):
        def loop(*args):
            called.append(name)
            return name

        return loop

    parallel, twin = recording("parallel"), recording("twin")
    monkeypatch.setattr(_runtime, "serial_twin", {parallel: twin}.get)
    monkeypatch.setattr(_runtime, "threads", lambda: 2)
    assert parallel_call(parallel, items=_runtime.PARALLEL_MIN_ITEMS - 1) == "twin"
    assert parallel_call(parallel, items=_runtime.PARALLEL_MIN_ITEMS) == "parallel"
    monkeypatch.setattr(_runtime, "threads", lambda: 1)  # one thread: never parallel
    assert parallel_call(parallel, items=10 * _runtime.PARALLEL_MIN_ITEMS) == "twin"

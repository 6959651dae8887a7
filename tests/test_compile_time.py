"""Numba compile time is measured, so that throughput can leave it out."""

import sys
import time

import numba

from gpusimhash import _compile_time
from gpusimhash._cpu import _runtime


def test_a_fresh_compilation_is_counted_once_and_a_compiled_call_not_at_all():
    before = _compile_time.seconds()

    @numba.njit(cache=False)
    def inner(x):
        return x + 1

    @numba.njit(cache=False)
    def outer(x):
        return inner(x) * 2

    start = time.perf_counter()
    assert outer(3) == 8  # compiles outer, and inner inside it (nested: counted once)
    wall = time.perf_counter() - start
    spent = _compile_time.seconds() - before
    assert 0.0 < spent <= wall
    again = _compile_time.seconds()
    assert outer(4) == 10  # compiled already
    assert _compile_time.seconds() == again
    assert _runtime._CLOCK._local.depth == 0


def test_nothing_has_compiled_before_the_numba_loops_are_imported(monkeypatch):
    monkeypatch.delitem(sys.modules, "gpusimhash._cpu._runtime")
    assert _compile_time.seconds() == 0.0


def test_dedup_throughput_counts_compile_time_and_says_so(monkeypatch):
    from gpusimhash.dedup import pipeline

    clock = iter([10.0, 12.5])  # compile seconds at the start, then at the end
    monkeypatch.setattr(_compile_time, "seconds", lambda: next(clock))
    timer = pipeline.StageTimer()
    summary = {"results": {}}
    start = time.perf_counter() - 4.0  # four seconds of wall time, 2.5 of them compiling
    pipeline.finish_summary(summary, timer, start, n=1000)
    total = summary["timings_s"]["total"]
    results = summary["results"]
    assert summary["timings_s"]["compile"] == 2.5
    assert results["compile_seconds"] == 2.5
    assert results["seconds"] == round(total, 3)
    assert results["documents_per_second"] == round(1000 / total, 1)  # what the user timed
    assert results["documents_per_second_excluding_compile"] == round(1000 / (total - 2.5), 1)

"""One measured start of gpusimhash, run by `bench_startup.py` in a fresh process.

    python bench/_startup_probe.py {dedup,fingerprint} RESULT.json [CLI ARGS...]

Before gpusimhash is imported, Numba's ``Dispatcher.compile`` (every compilation and every load
from the on-disk cache goes through it) and the report's plot functions are wrapped with
timers. The scenario then runs as a user would run it (``dedup``: the command line's ``main``
with the given arguments; ``fingerprint``: ``gpusimhash.fingerprint`` of a few texts), and the
timings are written to RESULT.json: one entry per compiled function and signature (seconds
including and excluding the nested compilations it triggered, and whether the cache had it),
the plots' seconds, the scenario's own seconds and the threading layer Numba chose. The
process then ends as the measured program does (``dedup`` as the command line's ``exit_now``,
the fingerprinting process through the interpreter's teardown).
"""

from __future__ import annotations

import json
import sys
import threading
import time
from typing import Any

STARTED = time.perf_counter()

# Importing Numba here moves its import ahead of gpusimhash's: import times are measured apart
# (``python -X importtime`` in bench_startup.py), never from this probe.
from numba.core import dispatcher

_records: list[dict[str, Any]] = []
_local = threading.local()


def _timed_compile(original: Any) -> Any:
    def compile(self: Any, sig: Any) -> Any:
        stack = getattr(_local, "stack", None)
        if stack is None:
            stack = _local.stack = []
        hits_before = sum(self._cache_hits.values())
        misses_before = sum(self._cache_misses.values())
        known = len(self.overloads)
        stack.append(0.0)  # seconds of nested compilations
        start = time.perf_counter()
        try:
            return original(self, sig)
        finally:
            seconds = time.perf_counter() - start
            nested = stack.pop()
            if stack:
                stack[-1] += seconds
            if len(self.overloads) > known:  # not an overload found in memory
                hit = sum(self._cache_hits.values()) > hits_before
                miss = sum(self._cache_misses.values()) > misses_before
                _records.append(
                    {
                        "function": f"{self.py_func.__module__}.{self.py_func.__qualname__}",
                        "signature": str(sig),
                        "parallel": bool(self.targetoptions.get("parallel")),
                        "source": "cache" if hit and not miss else "compiled",
                        "seconds": round(seconds, 4),
                        "exclusive_seconds": round(seconds - nested, 4),
                        "nested": len(stack) > 0,
                    }
                )

    return compile


dispatcher.Dispatcher.compile = _timed_compile(dispatcher.Dispatcher.compile)

_plots: dict[str, float] = {}
_plots_cpu: dict[str, float] = {}


def _wrap_plots() -> None:
    from gpusimhash.dedup.report import _plots as plots

    for name in ("pyplot", "plot_hamming", "plot_cosines", "plot_cluster_sizes"):
        original = getattr(plots, name)

        def timed(*args: Any, _original: Any = original, _name: str = name, **kwargs: Any) -> Any:
            start, cpu = time.perf_counter(), time.process_time()
            try:
                return _original(*args, **kwargs)
            finally:
                _plots[_name] = _plots.get(_name, 0.0) + time.perf_counter() - start
                _plots_cpu[_name] = _plots_cpu.get(_name, 0.0) + time.process_time() - cpu

        setattr(plots, name, timed)


def main() -> int:
    scenario, result_path, *arguments = sys.argv[1:]
    code = 0
    start, cpu = time.perf_counter(), time.process_time()
    if scenario == "dedup":
        _wrap_plots()
        from gpusimhash.cli import main as cli_main

        code = cli_main(["dedup", *arguments])
    elif scenario == "fingerprint":
        import gpusimhash

        texts = ["The cat sat on the mat.", "the cat sat on the mat", "A dog ran in the park."]
        gpusimhash.fingerprint(texts, bits=64)
    else:
        raise SystemExit(f"unknown scenario {scenario!r}")
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu
    try:
        from numba.np.ufunc.parallel import threading_layer

        layer = threading_layer()
    except ValueError:
        layer = None  # no parallel code ran
    with open(result_path, "w", encoding="utf-8") as handle:
        json.dump(
            {
                "scenario_seconds": round(seconds, 4),
                "scenario_cpu_seconds": round(cpu_seconds, 4),
                "since_probe_start_seconds": round(time.perf_counter() - STARTED, 4),
                "compiles": _records,
                "plots_seconds": {k: round(v, 4) for k, v in _plots.items()},
                "plots_cpu_seconds": {k: round(v, 4) for k, v in _plots_cpu.items()},
                "threading_layer": layer,
                "exit_code": code,
            },
            handle,
        )
    return code


def finish(scenario: str, code: int) -> None:
    """Exit as the measured program does: ``dedup`` as ``python -m gpusimhash`` ends."""
    if scenario == "dedup":
        try:
            from gpusimhash.__main__ import exit_now
        except ImportError:  # a revision whose command exits through the interpreter's teardown
            sys.exit(code)
        exit_now(code)
    sys.exit(code)


if __name__ == "__main__":
    finish(sys.argv[1], main())

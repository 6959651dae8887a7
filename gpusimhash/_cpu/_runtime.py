"""Numba set-up shared by the compiled loops: a cache location that works, thread-safe calls.

* Cache: the loops are compiled once and cached on disk (``cache=True``) in the package's
  ``__pycache__`` or, where that is read-only, in the user's cache folder. Where neither can be
  written (a read-only installation used by an account without a home folder, a read-only
  container image), `ensure_cache_location` points Numba at a private temporary folder for the
  process, removed at exit: the loops compile on each start instead of failing at import.
  ``NUMBA_CACHE_DIR``, when set, always wins.
* Parallel only where it pays: compiling a ``parallel=True`` loop costs several times what its
  serial form costs (seconds per loop, on a first run without a cache), and on small inputs the
  threads gain nothing. `parallel_call` runs a call of fewer than `PARALLEL_MIN_ITEMS` items
  (or any call where one thread is available) on the loop's `serial_twin`: the same Python
  function compiled without ``parallel=True`` (``prange`` is then ``range``) and cached on its
  own, so a run compiles only the forms it uses. Every parallel loop here computes each result
  from its own document or pair alone, so both forms give the same bits.
* Threads: Numba's ``workqueue`` threading layer, the fallback where neither TBB nor the GNU
  OpenMP runtime is installed, aborts the process when two threads run ``parallel=True`` code
  at once. `parallel_call` runs such a function one call at a time under that layer (and for
  the first call, which chooses the layer) and concurrently under TBB and OpenMP.

A compiled loop that calls a ``parallel=True`` loop (``_cluster_loops.lazy_star``) is called
through `parallel_call` too: its serial twin calls the serial twin of that loop.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import threading
import types
from collections.abc import Callable
from typing import Any, TypeVar

import numba
from numba.core import caching, config
from numba.core.registry import CPUDispatcher
from numba.np.ufunc.parallel import threading_layer

__all__ = ["PARALLEL_MIN_ITEMS", "ensure_cache_location", "parallel_call", "serial_twin"]

Result = TypeVar("Result")

# Items (entries, documents or pairs, as each caller counts them) from which a call runs in
# parallel: below, a call takes milliseconds and its serial form is what a run compiles.
PARALLEL_MIN_ITEMS = 1 << 18

_SERIAL = threading.Lock()
_THREADSAFE_LAYERS = ("tbb", "omp")
_TWINS: dict[Any, Any] = {}
_TWINS_LOCK = threading.RLock()


def _probe() -> None:
    """Stand in for the compiled loops of this folder when asking Numba where it caches."""


def ensure_cache_location() -> str | None:
    """Give Numba a writable cache folder for this package's loops when it has none.

    Returns
    -------
    str or None
        The private temporary folder now used, or None when Numba's own choice works.
    """
    if config.CACHE_DIR:  # type: ignore[attr-defined]
        return None
    try:
        caching.FunctionCache(_probe)  # type: ignore[no-untyped-call]  # what cache=True runs
    except RuntimeError:
        folder = tempfile.mkdtemp(prefix="gpusimhash-numba-")
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        config.CACHE_DIR = folder  # type: ignore[attr-defined]
        return folder
    return None


def parallel_call(function: Callable[..., Result], *args: Any, items: int) -> Result:
    """Call a compiled ``parallel=True`` function: in parallel on large inputs, else its twin.

    In parallel, calls are serialized unless the threading layer is thread-safe.

    Parameters
    ----------
    function : callable
        The compiled function (``parallel=True``, or calling such a function).
    *args
        Its arguments.
    items : int
        The size of the call's work, in the caller's unit: below `PARALLEL_MIN_ITEMS`, or with
        one thread, the call runs on `serial_twin` of ``function``.

    Returns
    -------
    object
        What ``function`` returns.
    """
    if items < PARALLEL_MIN_ITEMS or threads() == 1:
        result: Result = serial_twin(function)(*args)
        return result
    try:
        threadsafe = threading_layer() in _THREADSAFE_LAYERS  # type: ignore[no-untyped-call]
    except ValueError:  # no parallel code has run yet: this call picks the layer
        threadsafe = False
    if threadsafe:
        return function(*args)
    with _SERIAL:
        return function(*args)


def serial_twin(loop: Any) -> Any:
    """Return a compiled loop's serial form: its function compiled without ``parallel=True``.

    Made on first use and kept. The twin is a copy of the loop's Python function named
    ``<name>_serial`` (so Numba caches it apart from the parallel form), whose globals send
    every compiled loop it calls that reaches a ``parallel=True`` loop to that loop's twin. A
    loop that reaches none, and a callable that is no compiled loop, is its own twin.

    Parameters
    ----------
    loop : numba dispatcher
        A function compiled with ``numba.njit``.

    Returns
    -------
    numba dispatcher
    """
    if not isinstance(loop, CPUDispatcher):
        return loop
    with _TWINS_LOCK:
        twin = _TWINS.get(loop)
        if twin is None:
            twin = _TWINS[loop] = _make_twin(loop) if _reaches_parallel(loop, set()) else loop
        return twin


def _callees(loop: Any) -> dict[str, Any]:
    """Return the compiled loops a compiled loop names among its globals."""
    names = loop.py_func.__globals__
    found = {name: names.get(name) for name in loop.py_func.__code__.co_names}
    return {name: value for name, value in found.items() if isinstance(value, CPUDispatcher)}


def _reaches_parallel(loop: Any, seen: set[int]) -> bool:
    """Whether a compiled loop is ``parallel=True`` or calls one that reaches such a loop."""
    if loop.targetoptions.get("parallel"):
        return True
    seen.add(id(loop))
    return any(
        _reaches_parallel(callee, seen)
        for callee in _callees(loop).values()
        if id(callee) not in seen
    )


def _make_twin(loop: Any) -> Any:
    """Compile a copy of a loop's function without ``parallel=True``, its callees' twins called."""
    function = loop.py_func
    names = dict(function.__globals__)
    names.update({name: serial_twin(callee) for name, callee in _callees(loop).items()})
    copy = types.FunctionType(
        function.__code__, names, function.__name__, function.__defaults__, function.__closure__
    )
    copy.__qualname__ = f"{function.__qualname__}_serial"
    copy.__module__ = function.__module__
    copy.__doc__ = function.__doc__
    options = {k: v for k, v in loop.targetoptions.items() if k not in ("parallel", "nopython")}
    return numba.njit(cache=True, **options)(copy)


def threads() -> int:
    """Return the worker threads of a join: the CPUs this process may run on, capped.

    The cap is ``NUMBA_NUM_THREADS`` when set (``gpusimhash --threads N`` sets it).
    """
    if hasattr(os, "sched_getaffinity"):
        cpus = max(1, len(os.sched_getaffinity(0)))
    else:
        cpus = max(1, os.cpu_count() or 1)
    cap = os.environ.get("NUMBA_NUM_THREADS", "")
    return min(cpus, int(cap)) if cap.isdigit() and int(cap) > 0 else cpus

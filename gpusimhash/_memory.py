"""Memory: refuse what cannot fit before allocating it, and give freed arrays back at once.

* `check_memory` refuses an allocation larger than the memory available (`available_memory`,
  ``MemAvailable``) with a `MemoryRefusal` naming what needed it; `check_result_size` refuses a
  kNN result larger than the machine's physical memory (a ValueError: ask for fewer).
* `resident_memory` is what this process holds (what a Dask worker's memory limit counts).
* `return_freed_memory` fixes glibc's mapping threshold. glibc's ``malloc`` maps large blocks
  on their own and unmaps them when freed, but after the first such block is freed it raises
  that size limit (up to 32 MiB), and the heap's trim threshold with it (to twice that), so
  that later arrays below it come from heaps that keep their freed pages. A dedup run frees and
  allocates arrays of tens of megabytes stage after stage; with the moving limits its resident
  memory grew by what earlier stages had freed. A fixed limit (`MAPPED_FROM`, the adaptive
  one's ceiling) keeps the trim threshold at glibc's 128 KiB, so the heap gives its freed top
  back, and every array of 32 MiB or more is mapped on its own. A lower limit maps more arrays
  on their own, each one's pages faulted in afresh: at 1 MiB the command took 1.05x to 1.10x
  as long on 200,000 PyPI summaries and 1.12x to 1.24x on 1,000,000 synthetic documents
  (800,000 summaries: within the runs' spread), for 2.5% to 2.7% and 0.5% to 2.1% less peak
  memory than at 32 MiB; glibc's moving limits held 18% to 20% more at the peak on the
  synthetic ones (`bench/results/cli_malloc_cpu.json`, best of 3 fresh processes).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os

__all__ = [
    "MAPPED_FROM",
    "MemoryRefusal",
    "available_memory",
    "check_memory",
    "check_result_size",
    "resident_memory",
    "return_freed_memory",
]

# allocations of this many bytes or more are mapped on their own, unmapped when freed
MAPPED_FROM = 32 << 20
_M_MMAP_THRESHOLD = -3  # mallopt's parameter number (malloc.h)


def return_freed_memory() -> bool:
    """Fix glibc's mapping threshold at `MAPPED_FROM` for this process.

    A fixed threshold also stops glibc from moving it. Elsewhere (another C library, or no
    ``mallopt``) nothing changes.

    Returns
    -------
    bool
        Whether the threshold was set.
    """
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
    except (OSError, AttributeError, TypeError):  # no C library found, or not glibc's
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, MAPPED_FROM))


class MemoryRefusal(MemoryError):
    """An allocation refused before it was made: the message says what needs how much."""


def available_memory() -> int | None:
    """Return the bytes the system can still give (``MemAvailable``), or None where unknown.

    Examples
    --------
    >>> available = available_memory()
    >>> available is None or available > 0
    True
    """
    try:
        with open("/proc/meminfo", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        return None
    return None


def resident_memory() -> int | None:
    """Return the bytes this process holds in memory (its resident set), or None where unknown.

    Examples
    --------
    >>> held = resident_memory()
    >>> held is None or held > 0
    True
    """
    try:
        with open("/proc/self/statm", encoding="ascii") as handle:
            return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def check_memory(
    nbytes: float, what: str, worker_room: int | None = None, *, each: str = ""
) -> None:
    """Refuse, before allocating, what the system's available memory cannot hold.

    Parameters
    ----------
    nbytes : float
        Bytes about to be allocated.
    what : str
        What needs them, for the message (``"... need"``).
    worker_room : int, optional
        The bytes a Dask worker had left of its memory limit (its limit less what it held),
        checked first.
    each : str, optional
        Where the bytes are needed, after them in the message (``" on every worker"``).

    Raises
    ------
    MemoryRefusal
        A `MemoryError` with a message naming `what`, over ``worker_room`` or
        `available_memory` (no check where that is unknown).

    Examples
    --------
    >>> check_memory(1000, "a small array needs")
    >>> check_memory(2e6, "an array needs", worker_room=10**6)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    gpusimhash._memory.MemoryRefusal: an array needs about 2 MB, more than the 1 MB this Dask ...
    """
    if worker_room is not None and nbytes > worker_room:
        raise MemoryRefusal(
            f"{what} about {nbytes / 1e6:,.0f} MB{each}, more than the "
            f"{worker_room / 1e6:,.0f} MB this Dask worker had left of its memory limit"
        )
    available = available_memory()
    if available is not None and nbytes > available:
        raise MemoryRefusal(
            f"{what} about {nbytes / 1e6:,.0f} MB{each}, more than the "
            f"{available / 1e6:,.0f} MB of memory available"
        )


# bytes per cell of a kNN result while it is built (distances, ids, cosines and working copies)
RESULT_CELL_BYTES = 64


def check_result_size(n_queries: int, k: int) -> None:
    """Refuse a kNN result that cannot fit in this machine's memory, before allocating it."""
    need = n_queries * k * RESULT_CELL_BYTES
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    if need > memory:
        raise ValueError(
            f"k={k} for {n_queries} queries needs about {need / 2**30:,.1f} GiB for its result, "
            f"more than this machine's {memory / 2**30:,.1f} GiB: ask for fewer neighbours"
        )

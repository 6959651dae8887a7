"""Give freed arrays back to the system at once (glibc), so a job's peak memory is what it holds.

glibc's ``malloc`` maps large blocks on their own and unmaps them when freed, but after the first
such block is freed it raises that size limit (up to 32 MiB), so that later arrays below it come
from heaps that keep their freed pages. A dedup run frees and allocates arrays of tens of
megabytes stage after stage; with the moving limit its resident memory grew by what earlier
stages had freed (599 MiB against 512 MiB at the peak of an unverified run on 1M documents).
A fixed limit keeps every array of `MAPPED_FROM` bytes or more mapped on its own.
"""

from __future__ import annotations

import ctypes
import ctypes.util

__all__ = ["MAPPED_FROM", "return_freed_memory"]

# allocations of this many bytes or more are mapped on their own, unmapped when freed
MAPPED_FROM = 1 << 20
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

"""A local cluster of worker processes whose compiled loops and FAISS get a set number of threads.

The compiled loops take their thread cap from ``NUMBA_NUM_THREADS`` (`gpusimhash._cpu._threads`;
Numba, which compiles the codes' join, reads it too), and OpenMP (FAISS) reads
``OMP_NUM_THREADS`` once, when a process starts using it. `dask.distributed.LocalCluster`'s
``env=`` sets variables inside the worker process after it has started, too late for the
libraries that read them once: each worker then runs on every core of the machine, so ``N``
workers start ``N`` times too many threads. The
variables must be in ``distributed.nanny.pre-spawn-environ``, which the nanny sets before it
spawns (and respawns) its worker; `local_cluster` does that. A variable already set in the
calling process's environment would win over that setting, and the nanny sets them in that
environment too: `local_cluster` sets them there while the workers start, then puts the
process's own values back (a worker the nanny respawns later sets them there again: Dask's
behaviour).

Dask's nannies also set ``MALLOC_TRIM_THRESHOLD_=65536`` in their workers by default, to hand
freed memory back to the system sooner. Set at all, it stops glibc from raising its mmap
threshold from 128 KiB as large blocks are freed, so every larger array is mapped and unmapped
afresh. One worker's work on 200,000 PyPI summaries in 16 partitions (each fingerprinted,
then the feature index built and probed, on one thread) took 2.77 s with it, 2.57 s with
glibc's defaults and 2.44 s with `local_cluster`'s (best of 5,
`bench/results/malloc_cpu.json`): it sets both thresholds to the ceilings glibc's adaptive ones
reach on 64-bit systems (mmap 32 MiB, trim 64 MiB), the same way as the thread counts, so a
respawned worker gets them too.
"""

from __future__ import annotations

import os
from typing import Any

__all__ = ["local_cluster"]

_VARIABLES = ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS")
# glibc's adaptive thresholds at their 64-bit ceilings, not Dask's trim threshold (see above)
_MALLOC = {"MALLOC_MMAP_THRESHOLD_": str(32 << 20), "MALLOC_TRIM_THRESHOLD_": str(64 << 20)}


def local_cluster(n_workers: int, threads: int, **kwargs: Any) -> Any:
    """Start a local cluster of ``n_workers`` processes, each running tasks one at a time.

    Parameters
    ----------
    n_workers : int
        Worker processes, ``>= 1``.
    threads : int
        Threads of each worker's compiled loops, Numba's join and FAISS (OpenMP), ``>= 1``.
    **kwargs
        Further arguments of `dask.distributed.LocalCluster` (not ``n_workers``,
        ``threads_per_worker`` or ``processes``).

    Returns
    -------
    dask.distributed.LocalCluster
        Started; close it (or use it as a context manager).

    Raises
    ------
    ValueError
        ``n_workers`` or ``threads`` below 1.

    Notes
    -----
    The workers' glibc thresholds are its adaptive ones' ceilings, not Dask's trim threshold,
    which slows the compiled loops' allocations (see the module's description).

    Examples
    --------
    >>> import numba
    >>> from dask.distributed import Client
    >>> with local_cluster(1, threads=1, dashboard_address=":0") as cluster:
    ...     with Client(cluster) as client:
    ...         list(client.run(lambda: numba.config.NUMBA_NUM_THREADS).values())
    [1]
    """
    from dask import config
    from dask.distributed import LocalCluster

    for name, value in (("n_workers", n_workers), ("threads", threads)):
        if value < 1:
            raise ValueError(f"local_cluster: {name} must be >= 1, got {value}")
    count = str(threads)
    environ = {**config.get("distributed.nanny.pre-spawn-environ", {})}
    ours = dict.fromkeys(_VARIABLES, count) | _MALLOC
    environ |= ours
    # the nannies read this when they are made (a variable already in this process's
    # environment wins over it, so it is set there too) and keep it for every respawn; they set
    # it in this process's environment before they spawn, so this process's values come back
    # after (else its Numba would see another thread count at its next compilation)
    before = {name: os.environ.get(name) for name in ours}
    os.environ.update(ours)
    try:
        with config.set({"distributed.nanny.pre-spawn-environ": environ}):
            return LocalCluster(  # type: ignore[no-untyped-call]
                n_workers=n_workers, threads_per_worker=1, processes=True, **kwargs
            )
    finally:
        for name, previous in before.items():
            if previous is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = previous

"""Beyond one machine, with Dask: fingerprint collections, or run the whole dedup on a cluster.

* `fingerprint_collection` fingerprints the partitions of a Dask bag or Series where they live.
* `dedup` runs the whole deduplication on a `dask.distributed` cluster, from partitioned files
  (one partition per file) to one output part per partition, with the single-machine result.
* `JoinWorkWarning` is what a run says before a join of the codes estimated far above the
  single machine's.
* `local_cluster` starts worker processes on this machine whose compiled loops and FAISS use
  a given number of threads each.

Install with ``pip install 'gpusimhash[dask]'``.
"""

from __future__ import annotations

from gpusimhash.distributed._collection import fingerprint_collection
from gpusimhash.distributed._join_plan import JoinWorkWarning
from gpusimhash.distributed._local import local_cluster
from gpusimhash.distributed._pipeline import DistributedResult, dedup

__all__ = [
    "DistributedResult",
    "JoinWorkWarning",
    "dedup",
    "fingerprint_collection",
    "local_cluster",
]

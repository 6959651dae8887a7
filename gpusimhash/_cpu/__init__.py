"""The compiled loops: every Numba kernel of the CPU engine, the joins and the clustering.

Importing this package points Numba at a writable cache folder (`_runtime`) before any loop of
it is defined. It imports nothing else of gpusimhash, so any module may use a loop of it.

- `_fingerprint`: the CPU fingerprint engine, the one every other engine is tested against;
- `_loops`, `_utf8_loops`: feature hashing, sign accumulation, tokenization;
- `_verify_loops`: exact pair similarities and feature merging;
- `_mih_loops`, `_cluster_loops`: the multi-index hashing join and the clusterings;
- `_allpairs_loops`: the exact feature join;
- `_sorting`, `_copy`: a stable argsort and run copies that compile in a fraction of what
  ``np.argsort`` and slice assignment cost;
- `_runtime`, `_prefetch`: the cache location, thread-safe calls, a prefetch intrinsic.
"""

from __future__ import annotations

from gpusimhash._cpu._runtime import ensure_cache_location

ensure_cache_location()  # before any compiled loop of this package is defined

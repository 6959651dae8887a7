"""The compiled loops of the CPU engine, the joins and the clustering.

Most are C, compiled from Cython when the package is built (``hatch_build.py``): importing them
costs milliseconds and nothing is compiled at run time. The multi-index hashing join of the
codes is Numba, compiled on first use and cached (`_runtime` points Numba at a writable cache
folder before it defines them). This package imports nothing else of gpusimhash, so any module
may use a loop of it.

- `_fingerprint`: the CPU fingerprint engine, the one every other engine is tested against;
- `_loops`, `_utf8_loops`: feature hashing, sign accumulation, tokenization;
- `_verify_loops`: exact pair similarities and feature merging;
- `_allpairs_loops`: the exact feature join;
- `_cluster_loops`: the star and component clusterings;
- `_mih_loops` (Numba): the multi-index hashing join of the codes;
- `_sorting`, `_minmax`, `_prefetch`, `_similarity` (``.pxd``): what the compiled loops share:
  a stable argsort, Python's ``min`` and ``max``, a prefetch hint, the exact pair similarity;
- ``_signs.h``: the weighted sign accumulation, in C, built for several instruction sets;
- `_threads`: how many threads the loops run on;
- `_runtime`: Numba's cache location.
"""

"""`SimHashIndex`: a FAISS binary index of fingerprints, with ids, settings and persistence.

- `SimHashIndex`: add documents, codes or vectors under int or string ids; search the ``k``
  nearest (`SearchResult`) or every entry within a radius (`RangeResult`); remove, compact,
  save atomically and load, checked (``_storage``);
- `Hits`: one query's results; `KINDS`: the FAISS index kinds.

Tested in ``tests/index/``.
"""

from gpusimhash._choices import KINDS
from gpusimhash.index._index import SimHashIndex
from gpusimhash.index._results import Hits, RangeResult, SearchResult

__all__ = ["KINDS", "Hits", "RangeResult", "SearchResult", "SimHashIndex"]

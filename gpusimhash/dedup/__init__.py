"""The main job: near-duplicate removal from files, as named stages, and its report.

- `dedup_file` and `run`: read files in batches, fingerprint, join, verify, cluster and write
  the kept records, the clusters and ``summary.json`` (``pipeline``: the stages in order);
- `DedupOptions`: how the input is read, which pairs are near-duplicates, what is written;
  `DedupResult`: what a run found and wrote;
- `annotate_table`: the same on an in-memory table (pandas or Arrow), annotated in place of
  files.

The stages' record files are in ``outputs``, the summary in ``summary``, the report in
``report``; ``against`` removes documents an existing index already holds.

Tested in ``tests/dedup/``.
"""

from gpusimhash.dedup.options import DedupOptions
from gpusimhash.dedup.pipeline import dedup_file, run
from gpusimhash.dedup.results import DedupResult
from gpusimhash.dedup.tables import annotate_table

__all__ = ["DedupOptions", "DedupResult", "annotate_table", "dedup_file", "run"]

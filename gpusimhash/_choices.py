"""The choice lists and stated bounds of the public options, in one import-free module.

The library validates against these, and the command line offers (and states) exactly these,
without importing the heavy modules that use them (so ``gpusimhash --help`` stays fast).
"""

from __future__ import annotations

MIN_BITS = 8
MAX_BITS = 4096
DEVICES = ("auto", "cpu", "gpu")
ANALYZERS = ("word", "char")
WEIGHTINGS = ("count", "binary", "logtf", "tfidf")
# input formats of the readers, output formats of the writers
FORMATS = ("jsonl", "parquet", "csv", "tsv", "text")
OUTPUT_FORMATS = ("jsonl", "parquet", "csv")
# SimHashIndex kinds, which document of a cluster is kept, and how dedup clusters
KINDS = ("flat", "multihash", "hnsw", "ivf")
POLICIES = ("first", "longest", "score")
CLUSTERINGS = ("star", "components")
# where dedup's candidate pairs come from (gpusimhash.dedup.candidates)
CANDIDATE_SOURCES = ("auto", "features", "codes")
# input bytes (as stored) up to which a distributed dedup is the driver's: about 225,000 PyPI
# summaries in JSONL, 2 s of one machine's work at the defaults, where the stages' fixed costs
# on the cluster (about 0.3 s on 2 local workers) exceed their share of the work; at 128 bits
# radius 3 the driver beat the stages of 2 one-core workers at 200,000 summaries (14.8 MB:
# 0.94 s against 1.29 s), and the stages won at 800,000 (58.1 MB: 3.44 s against 3.70 s); at
# 400,000 (29.3 MB) the driver, its partitions fingerprinted by the 2 local workers, took
# 1.76 s against the stages' 1.85 s, within their spread, where a remote cluster's driver
# would read every partition itself (medians of 3, `bench/results/distributed_real.json`)
DRIVER_INPUT_BYTES = 16 << 20

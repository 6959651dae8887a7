"""The names of the files a dedup run writes, in one import-free module.

The pipelines write them and the command line replaces exactly these in an output folder,
without importing the modules that write them.
"""

from __future__ import annotations

from gpusimhash._choices import OUTPUT_FORMATS

# record files, each ``<stem>.<output format>``: kept or annotated records, clusters, matches
# against an index, pairs
RECORD_STEMS = ("kept", "annotated", "duplicates", "in_index", "pairs")
SUMMARY = "summary.json"
# every file and folder a run wrote into its output folder, so that --overwrite replaces only those
MANIFEST = ".gpusimhash-outputs.json"
REPORT = "report.md"
PLOTS = {
    "hamming": "hamming_distances.png",
    "cosine": "estimated_vs_true_cosine.png",
    "clusters": "cluster_sizes.png",
}
# a distributed run writes its kept or annotated records as folders of part files, and its
# duplicates in these formats
CLUSTER_RECORD_FOLDERS = ("kept", "annotated")
CLUSTER_DUPLICATES_FORMATS = ("jsonl", "parquet")


def written_by_dedup(name: str) -> bool:
    """Whether a run on one machine writes an entry of this name into its output folder.

    Examples
    --------
    >>> written_by_dedup("kept.parquet"), written_by_dedup("notes.txt")
    (True, False)
    """
    stem, _, suffix = name.partition(".")
    records = stem in RECORD_STEMS and suffix in OUTPUT_FORMATS
    return records or name in (SUMMARY, REPORT, *PLOTS.values())


def written_by_cluster_dedup(name: str) -> bool:
    """Whether a distributed run writes an entry of this name into its output folder.

    Examples
    --------
    >>> written_by_cluster_dedup("kept"), written_by_cluster_dedup("kept.jsonl")
    (True, False)
    """
    stem, _, suffix = name.partition(".")
    duplicates = stem == "duplicates" and suffix in CLUSTER_DUPLICATES_FORMATS
    return duplicates or name in (*CLUSTER_RECORD_FOLDERS, SUMMARY, REPORT, *PLOTS.values())

"""`DedupOptions`: how a deduplication reads its input, which pairs it removes, what it writes."""

from __future__ import annotations

import os
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np

from gpusimhash import _validate
from gpusimhash._choices import CLUSTERINGS, FORMATS, MIN_BITS, OUTPUT_FORMATS, POLICIES
from gpusimhash.dedup.candidates import candidate_source
from gpusimhash.io.sources import Reading
from gpusimhash.join._budget import MAX_CANDIDATE_PAIRS
from gpusimhash.verify._threshold import (
    DEFAULT_CANDIDATE_RECALL,
    Threshold,
    candidate_radius,
    plan_threshold,
)


@dataclass(frozen=True)
class DedupOptions:
    """How to read the input, which pairs are near-duplicates, and what to write.

    Attributes
    ----------
    format, text_field, id_field, batch_size
        How to read the input (see ``gpusimhash.io.readers.read_batches``).
    truth_field : str, optional
        Field with ground-truth group labels: precision and recall are added to the summary.
    score_field : str, optional
        Numeric field for ``keep="score"``.
    max_distance, min_cosine, min_jaccard
        The near-duplicate threshold. With verification: an exact minimum cosine of the
        weighted features or Jaccard similarity of the feature sets (at most one; default:
        cosine 0.8), and optionally the Hamming radius of the candidates. Without: one of a
        Hamming radius, a minimum estimated cosine or Jaccard similarity (default: cosine 0.8).
    verify : bool
        Verify every candidate pair on its features (`gpusimhash.verify_pairs`).
    candidates : {"auto", "features", "codes"}
        Where candidate pairs come from (`gpusimhash.dedup.candidates`): the exact feature
        join, which misses no pair at the threshold, or the codes within the candidate
        radius. ``auto``: the features when verifying a threshold above 0 on the CPU without
        ``max_distance``, ``recall`` or a ``candidate_recall`` other than the default, else
        the codes.
    candidate_recall : float
        With candidates from the codes and no ``max_distance``: the probability that a pair
        exactly at the threshold is a candidate (`gpusimhash.candidate_radius`).
    cluster : {"star", "components"}
        Star clusters, in which every removed document is a near-duplicate of the document kept
        for it, or connected components (which chain: the summary warns when their members
        are below the threshold against the kept document).
    empty_as_duplicates : bool
        Featureless documents (no word) are duplicates of each other; otherwise each is kept.
    force : bool
        Join even when the number of candidate pairs is over the budget.
    max_candidate_pairs : int
        The budget (at least 1), without ``force``: most pairs of distinct codes the codes' join may
        produce (estimated from a sample before it runs; the join holds about 40 bytes per
        pair at its peak), or most pairs of documents at the threshold the feature join may
        find (counted as it runs).
    recall : float, optional
        Use the approximate join (every pair within the radius found with at least this
        probability, none beyond it reported); default: the exact join.
    keep : {"first", "longest", "score"}
        Which document of a cluster is kept: the first in the file, the longest text, or the
        highest ``score_field`` (ties go to the first).
    device : {"auto", "cpu", "gpu"}
        Where to fingerprint and run the exact join (the approximate join runs on the CPU).
    output_format : {"jsonl", "parquet"}
        Format of the kept and duplicates files.
    report : bool
        Write ``report.md`` with plots (sampling pairs and their true cosines costs a little).
    skip_invalid : bool
        Skip invalid records (bad JSON or UTF-8, a missing or non-text text field, a bad id, a
        CSV row of the wrong length, a null Parquet text) instead of stopping: the summary
        counts them (``results.skipped_invalid``) and lists the first few (``skipped``).
    annotate : bool
        Write every record, none dropped, to ``annotated.<fmt>`` instead of ``kept.<fmt>``, with
        ``cluster`` (its number in the duplicates file, null alone), ``duplicate_of`` (the id of
        the document kept for it, null when kept) and ``similarity`` (to that document).
    against : str or Path, optional
        A saved `SimHashIndex` folder: clusters whose kept document it already holds (within
        the threshold's estimated-cosine radius, `gpusimhash.dedup.against`) are removed and
        listed in ``in_index.<fmt>``. The settings must be the index's.
    add_kept : bool
        Add the documents kept to the ``against`` index (their ids, or consecutive int64 ids
        without an id field).
    pairs : bool
        Write ``pairs.<fmt>``: every near-duplicate pair with its distance and exact similarity
        (`gpusimhash.dedup.outputs.write_pairs`; verifies every candidate pair).

    Raises
    ------
    TypeError
        An option of the wrong kind: a switch that is not a bool, a field name or format that is
        not a str, a count that is not an int, a threshold or recall that is not a real number, an
        ``against`` that is not a path.
    ValueError
        An unknown input format, keep policy, clustering, output format or device, a batch
        size or budget below 1, a recall outside ``(0, 1)`` or candidate recall outside
        ``(0, 1]``, ``keep="score"`` without a score
        field, or a contradictory or out-of-range threshold; ``add_kept`` without ``against``;
        ``annotate`` with ``against``.
    """

    format: str | None = None
    text_field: str = "text"
    id_field: str | None = None
    truth_field: str | None = None
    score_field: str | None = None
    batch_size: int = 10_000
    max_distance: int | None = None
    min_cosine: float | None = None
    min_jaccard: float | None = None
    verify: bool = True
    candidates: str = "auto"
    candidate_recall: float = DEFAULT_CANDIDATE_RECALL
    cluster: str = "star"
    empty_as_duplicates: bool = False
    force: bool = False
    max_candidate_pairs: int = MAX_CANDIDATE_PAIRS
    recall: float | None = None
    keep: str = "first"
    device: str = "auto"
    output_format: str = "jsonl"
    report: bool = False
    skip_invalid: bool = False
    annotate: bool = False
    against: str | Path | None = None
    add_kept: bool = False
    pairs: bool = False

    def __post_init__(self) -> None:
        """Check the options."""
        self._check_kinds()
        if self.keep not in POLICIES:
            raise ValueError(f"keep must be one of {', '.join(POLICIES)}, got {self.keep!r}")
        if self.keep == "score" and self.score_field is None:
            raise ValueError("keep='score' needs a score field")
        if self.output_format not in OUTPUT_FORMATS:
            raise ValueError(
                f"output format must be one of {', '.join(OUTPUT_FORMATS)}, "
                f"got {self.output_format!r}"
            )
        if self.cluster not in CLUSTERINGS:
            raise ValueError(
                f"cluster must be one of {', '.join(CLUSTERINGS)}, got {self.cluster!r}"
            )
        if self.add_kept and self.against is None:
            raise ValueError("add_kept needs an index to add to (against)")
        if self.annotate and self.against is not None:
            raise ValueError("annotate does not show matches against an index yet: not both")
        limit = self.threshold(8)  # checks the threshold options (the radius depends on bits)
        self.candidate_source(limit, "cpu")  # checks the candidates against them

    def _check_kinds(self) -> None:
        """Check the kinds and ranges of the options that the other checks take as given."""
        for field in fields(self):
            if field.type == "bool":  # the switches (annotations are strings here)
                _flag(getattr(self, field.name), field.name)
        _string(self.text_field, "text_field")
        for name in ("format", "id_field", "truth_field", "score_field"):  # or None
            if getattr(self, name) is not None:
                _string(getattr(self, name), name)
        if self.format is not None and self.format not in FORMATS:
            raise ValueError(f"format must be one of {', '.join(FORMATS)}, got {self.format!r}")
        _validate.positive_integer(self.batch_size, "batch_size")
        _validate.positive_integer(self.max_candidate_pairs, "max_candidate_pairs")
        if self.recall is not None:
            _validate.recall(self.recall)
        # checks candidate_recall, which the threshold uses only where it plans the radius
        candidate_radius(MIN_BITS, candidate_recall=self.candidate_recall)
        _validate.device(self.device)
        if self.against is not None and not isinstance(self.against, str | os.PathLike):
            raise TypeError(
                f"against must be a path (str or Path), got {type(self.against).__name__} "
                f"{self.against!r}"
            )

    def candidate_source(self, limit: Threshold, device: str) -> str:
        """Return where the candidates come from on ``device``: ``"features"`` or ``"codes"``.

        Parameters
        ----------
        limit : Threshold
            The run's threshold (`threshold`).
        device : {"cpu", "gpu"}
            Where the run joins.

        Returns
        -------
        str
        """
        return candidate_source(
            self.candidates,
            limit,
            device,
            max_distance=self.max_distance,
            recall=self.recall,
            candidate_recall=self.candidate_recall,
        )

    @property
    def reading(self) -> Reading:
        """How the input files are read (`gpusimhash.io.sources.Reading`)."""
        return Reading(
            format=self.format,
            text_field=self.text_field,
            id_field=self.id_field,
            batch_size=self.batch_size,
            skip_invalid=self.skip_invalid,
        )

    def threshold(self, bits: int) -> Threshold:
        """Return the threshold and the Hamming radius of codes of ``bits`` bits.

        Parameters
        ----------
        bits : int
            Code length.

        Returns
        -------
        Threshold
        """
        return plan_threshold(
            bits,
            verify=self.verify,
            max_distance=self.max_distance,
            min_cosine=self.min_cosine,
            min_jaccard=self.min_jaccard,
            candidate_recall=self.candidate_recall,
        )


def _flag(value: Any, name: str) -> None:
    """Refuse a switch that is not a bool (``"no"`` would be true)."""
    if not isinstance(value, bool | np.bool_):
        raise TypeError(f"{name} must be a bool, got {type(value).__name__} {value!r}")


def _string(value: Any, name: str) -> None:
    """Refuse a name (of a field, of a format) that is not a str."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {type(value).__name__} {value!r}")

"""The similarity threshold and the Hamming radius of its candidates.

`threshold` resolves ``min_cosine`` / ``min_jaccard``; `candidate_radius` is the smallest radius
that finds a pair exactly at the threshold with a given probability under the binomial SimHash
model (see `gpusimhash.verify`), from the binomial probabilities of `binomial_pmf` (summed here
rather than taken from SciPy, whose statistics module takes a second to import);
`plan_threshold` turns dedup's options into a `Threshold`.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpusimhash import _validate
from gpusimhash.join._radius import check_radius, cosine_radius

DEFAULT_MIN_COSINE = 0.8


DEFAULT_CANDIDATE_RECALL = 0.99


MEASURES = ("cosine", "jaccard")


def threshold(min_cosine: Any = None, min_jaccard: Any = None) -> tuple[str, float]:
    """Resolve the similarity threshold.

    Parameters
    ----------
    min_cosine : float, optional
        Minimum cosine of the weighted feature vectors, in ``[-1, 1]``.
    min_jaccard : float, optional
        Minimum Jaccard similarity of the feature sets, in ``[0, 1]``. Give at most one; with
        neither, ``min_cosine = DEFAULT_MIN_COSINE``.

    Returns
    -------
    measure : {"cosine", "jaccard"}
        Which similarity the threshold is on.
    value : float
        The threshold.

    Raises
    ------
    TypeError
        A threshold that is not a real number.
    ValueError
        Both thresholds, or one out of range.

    Examples
    --------
    >>> threshold()
    ('cosine', 0.8)
    >>> threshold(min_jaccard=0.8)
    ('jaccard', 0.8)
    """
    if min_cosine is not None and min_jaccard is not None:
        raise ValueError("give at most one of min_cosine and min_jaccard")
    if min_jaccard is not None:
        return "jaccard", _real_in(min_jaccard, "min_jaccard", 0.0, 1.0)
    if min_cosine is None:
        return "cosine", DEFAULT_MIN_COSINE
    return "cosine", _real_in(min_cosine, "min_cosine", -1.0, 1.0)


def _real_in(value: Any, name: str, low: float, high: float) -> float:
    """Return a real number in ``[low, high]`` as a float, or raise naming it."""
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__} {value!r}")
    number = float(value)
    if not low <= number <= high:
        raise ValueError(f"{name} must be in [{low:g}, {high:g}], got {value!r}")
    return number


def search_cosine(measure: str, value: float) -> float:
    """Return the cosine the fingerprints are searched at: the value, or ``2 J / (1 + J)``.

    Parameters
    ----------
    measure : {"cosine", "jaccard"}
        As `threshold` returns.
    value : float
        The threshold.

    Returns
    -------
    float

    Examples
    --------
    >>> search_cosine("jaccard", 0.5)
    0.6666666666666666
    """
    return 2 * value / (1 + value) if measure == "jaccard" else value


def candidate_radius(
    bits: int,
    *,
    min_cosine: Any = None,
    min_jaccard: Any = None,
    candidate_recall: Any = DEFAULT_CANDIDATE_RECALL,
) -> int:
    """Smallest Hamming radius that finds a pair exactly at the threshold with a given probability.

    A pair at true cosine ``c`` differs in ``d ~ Binomial(bits, acos(c) / pi)`` bits under the
    SimHash model, optimistic for short or heavily weighted documents (see the module notes).
    A Jaccard threshold ``J`` is first turned into the cosine bound ``2 J / (1 + J)`` of sets.

    Parameters
    ----------
    bits : int
        Code length.
    min_cosine, min_jaccard : float, optional
        The threshold, as in `threshold`.
    candidate_recall : float
        Probability in ``(0, 1]`` of finding a pair at the threshold; 1 needs every bit
        (unless the threshold is a cosine of 1).

    Returns
    -------
    radius : int
        In ``[0, bits]``.

    Raises
    ------
    TypeError, ValueError
        A bad threshold, `bits` or `candidate_recall`.

    Examples
    --------
    >>> candidate_radius(256, min_cosine=0.9)
    50
    >>> candidate_radius(256, min_cosine=0.9, candidate_recall=0.5)
    37
    >>> candidate_radius(256, min_jaccard=0.8)
    53
    """
    bits = _validate.positive_integer(bits, "bits")
    measure, value = threshold(min_cosine, min_jaccard)
    recall = _real_in(candidate_recall, "candidate_recall", 0.0, 1.0)
    if recall == 0.0:
        raise ValueError("candidate_recall must be in (0, 1], got 0")
    p = math.acos(min(1.0, search_cosine(measure, value))) / math.pi
    if p == 0.0 or p == 1.0 or recall == 1.0:  # p == 1: every pair differs in every bit
        return bits if p > 0.0 else 0
    cumulative = itertools.accumulate(binomial_pmf(bits, p))
    return next((r for r, total in enumerate(cumulative) if total >= recall), bits)


def binomial_pmf(n: int, p: float) -> list[float]:
    """Return ``P(X = k)`` for ``k = 0 .. n``, ``X ~ Binomial(n, p)``, ``0 < p < 1``.

    Each term is computed in log space (``lgamma``), to about 1e-13 relative: the candidate
    radius depends on it only where a cumulative sum lies that close to the recall asked for.

    Examples
    --------
    >>> [round(x, 6) for x in binomial_pmf(2, 0.5)]
    [0.25, 0.5, 0.25]
    """
    log_p, log_q, top = math.log(p), math.log1p(-p), math.lgamma(n + 1)
    return [
        math.exp(top - math.lgamma(k + 1) - math.lgamma(n - k + 1) + k * log_p + (n - k) * log_q)
        for k in range(n + 1)
    ]


@dataclass(frozen=True)
class Threshold:
    """Which pairs are near-duplicates and how candidates are searched.

    Attributes
    ----------
    measure : {"cosine", "jaccard"}
        The similarity the threshold is on (Jaccard of feature sets, or weighted cosine).
    value : float
        The threshold.
    radius : int
        Hamming radius of the join.
    verify : bool
        Whether every candidate is verified on its features.
    """

    measure: str
    value: float
    radius: int
    verify: bool


def plan_threshold(
    bits: int,
    *,
    verify: bool = True,
    max_distance: int | None = None,
    min_cosine: float | None = None,
    min_jaccard: float | None = None,
    candidate_recall: float = DEFAULT_CANDIDATE_RECALL,
) -> Threshold:
    """Turn dedup's threshold options into a threshold and a radius.

    With verification, the threshold is exact (default: cosine 0.8) and the radius is
    `max_distance`, or the candidate radius of `candidate_recall`. Without, give at most one of
    `max_distance`, `min_cosine` and `min_jaccard`: the radius is the given one or that of the
    estimated similarity, and the threshold (used only to count the documents removed below it)
    is the given one or the estimated cosine of the radius.

    Parameters
    ----------
    bits : int
        Code length.
    verify : bool
        Verify the candidates.
    max_distance : int, optional
        Hamming radius.
    min_cosine, min_jaccard : float, optional
        The threshold (at most one).
    candidate_recall : float
        Probability that a pair at the threshold is a candidate.

    Returns
    -------
    Threshold

    Raises
    ------
    TypeError, ValueError
        A bad or contradictory threshold.

    Examples
    --------
    >>> plan_threshold(256)
    Threshold(measure='cosine', value=0.8, radius=68, verify=True)
    >>> plan_threshold(64, verify=False, max_distance=16)
    Threshold(measure='cosine', value=0.7071067811865476, radius=16, verify=False)
    """
    given = min_cosine is not None or min_jaccard is not None
    if not verify and max_distance is not None:
        if given:
            raise ValueError(
                "without verification, give one of max_distance, min_cosine and min_jaccard"
            )
        radius = min(check_radius(max_distance), bits)
        return Threshold("cosine", math.cos(math.pi * radius / bits), radius, verify)
    measure, value = threshold(min_cosine if given else DEFAULT_MIN_COSINE, min_jaccard)
    if max_distance is not None:
        radius = min(check_radius(max_distance), bits)
    elif verify:
        radius = candidate_radius(
            bits,
            min_cosine=value if measure == "cosine" else None,
            min_jaccard=value if measure == "jaccard" else None,
            candidate_recall=candidate_recall,
        )
    else:
        radius = cosine_radius(bits, search_cosine(measure, value))
    return Threshold(measure, value, radius, verify)

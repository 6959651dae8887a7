"""Hamming radius arithmetic: estimated cosine to radius, radius to recall, radius checks."""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from gpusimhash import _validate


def cosine_radius(bits: int, min_cosine: float) -> int:
    """Largest Hamming radius whose estimated cosine is still at least `min_cosine`.

    The estimated cosine of two codes ``d`` bits apart is ``cos(pi * d / bits)``, decreasing in
    ``d``, so ``estimate >= min_cosine`` exactly when ``d <= floor(bits * acos(min_cosine) / pi)``
    (computed so that it agrees with the estimate at the boundary, whatever the rounding).

    Parameters
    ----------
    bits : int
        Code length in bits.
    min_cosine : float
        Minimum estimated cosine, in ``[-1, 1]``.

    Returns
    -------
    radius : int
        In ``[0, bits]``.

    Raises
    ------
    ValueError
        `min_cosine` outside ``[-1, 1]`` or not finite, or `bits` not positive.

    Examples
    --------
    >>> cosine_radius(64, 0.9)
    9
    >>> cosine_radius(256, min_cosine=1.0)
    0
    """
    if _old_argument_order(bits, min_cosine):  # deprecated: cosine_radius(min_cosine, bits)
        warnings.warn(
            "cosine_radius(min_cosine, bits) is deprecated and will be removed in the next "
            "release: use cosine_radius(bits, min_cosine), as candidate_radius(bits, ...)",
            DeprecationWarning,
            stacklevel=2,
        )
        bits, min_cosine = int(min_cosine), float(bits)
    bits = _validate.positive_integer(bits, "bits")
    c = float(min_cosine)
    if not (-1.0 <= c <= 1.0):
        raise ValueError(f"min_cosine must be in [-1, 1], got {min_cosine!r}")
    radius = min(bits, max(0, math.floor(bits * math.acos(c) / math.pi)))
    while radius < bits and math.cos(math.pi * (radius + 1) / bits) >= c:
        radius += 1
    while radius > 0 and math.cos(math.pi * radius / bits) < c:
        radius -= 1
    return radius


def radius_recall(true_cosine: Any, *, bits: int, max_distance: int) -> Any:
    """Probability that two vectors with a given true cosine land within a Hamming radius.

    Under the SimHash model each of the `bits` bits differs independently with probability
    ``theta / pi``, ``theta = acos(true_cosine)``, so the recall of a radius-`max_distance`
    search is ``P[Binomial(bits, theta / pi) <= max_distance]``.

    Parameters
    ----------
    true_cosine : float or array_like of float
        Cosine similarity of the weighted feature vectors, in ``[-1, 1]``.
    bits : int
        Code length in bits.
    max_distance : int
        Hamming radius, ``0 <= max_distance``.

    Returns
    -------
    recall : float or ndarray of float
        Same shape as `true_cosine`.

    Raises
    ------
    ValueError
        A cosine outside ``[-1, 1]``, a negative radius or non-positive bits.

    Examples
    --------
    A 64-bit radius-3 search finds one pair in ten at true cosine 0.95; 256 bits with the
    radius of estimated cosine 0.9 find nearly all of them:

    >>> round(radius_recall(0.95, bits=64, max_distance=3), 3)
    0.101
    >>> round(radius_recall(0.95, bits=256, max_distance=cosine_radius(256, 0.9)), 3)
    0.983
    """
    bits = _validate.positive_integer(bits, "bits")
    radius = check_radius(max_distance)
    c = np.asarray(true_cosine, dtype=np.float64)
    if not np.all((c >= -1.0) & (c <= 1.0)):
        raise ValueError("true_cosine must be in [-1, 1]")
    from scipy.stats import binom  # 0.5 s to import: only when asked

    recall = binom.cdf(radius, bits, np.arccos(c) / np.pi)
    return float(recall) if recall.ndim == 0 else recall


def resolve_radius(
    bits: int, *, max_distance: int | None = None, min_cosine: float | None = None
) -> int:
    """Turn a Hamming radius or a minimum estimated cosine into a radius in ``[0, bits]``.

    Parameters
    ----------
    bits : int
        Code length in bits.
    max_distance : int, optional
        A Hamming radius (clipped to ``bits``).
    min_cosine : float, optional
        A minimum estimated cosine (see `cosine_radius`). Give exactly one of the two.

    Returns
    -------
    int

    Raises
    ------
    ValueError
        Both or neither given, or one out of range.
    TypeError
        A radius that is not an integer.

    Examples
    --------
    >>> resolve_radius(64, min_cosine=0.9), resolve_radius(64, max_distance=100)
    (9, 64)
    """
    if (max_distance is None) == (min_cosine is None):
        raise ValueError("give exactly one of max_distance and min_cosine")
    if min_cosine is not None:
        return cosine_radius(bits, min_cosine)
    return min(check_radius(max_distance), bits)


def check_radius(max_distance: Any) -> int:
    """Return a Hamming radius as an int, refusing non-integers and negatives."""
    if isinstance(max_distance, bool) or not isinstance(max_distance, int | np.integer):
        raise TypeError(f"max_distance must be an integer, got {type(max_distance).__name__}")
    if max_distance < 0:
        raise ValueError(f"max_distance must be >= 0, got {max_distance}")
    return int(max_distance)


def _old_argument_order(bits: Any, min_cosine: Any) -> bool:
    """Whether ``cosine_radius(bits, min_cosine)`` was called as ``(min_cosine, bits)``.

    Valid arguments in one order are invalid in the other (bits is an integer >= 1, the cosine
    is in ``[-1, 1]``), except ``(1, 1)``, which gives radius 0 either way.
    """

    def is_bits(value: Any) -> bool:
        integral = isinstance(value, int | np.integer) and not isinstance(value, bool)
        return integral and value >= 1

    def is_cosine(value: Any) -> bool:
        real = isinstance(value, int | float | np.integer | np.floating)
        return real and not isinstance(value, bool) and -1.0 <= value <= 1.0

    return not (is_bits(bits) and is_cosine(min_cosine)) and is_bits(min_cosine) and is_cosine(bits)

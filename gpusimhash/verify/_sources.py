"""Where near-duplicate candidates come from: the documents' features, or their codes.

* ``features``: the exact feature join (`gpusimhash.verify._feature_join`) pairs every two
  documents whose exact similarity reaches the threshold, found by prefix filtering on their
  own features; no pair is missed, and no radius is involved.
* ``codes``: every pair of codes within the candidate radius (the Hamming join, exact or with
  ``recall``); a pair at the threshold is a candidate with the probability the radius gives.

``auto`` (the default) takes the features when the threshold is verified, above 0, on the
CPU and no radius is asked for, and the codes otherwise: on a GPU the exhaustive Hamming join
is cheap, an unverified threshold is on the codes themselves, and an explicit
``max_distance`` or ``recall`` asks for the codes' join.
"""

from __future__ import annotations

from gpusimhash._choices import CANDIDATE_SOURCES
from gpusimhash.verify._threshold import Threshold


def candidate_source(
    candidates: str,
    limit: Threshold,
    device: str,
    *,
    max_distance: int | None,
    recall: float | None,
) -> str:
    """Resolve ``candidates`` to ``"features"`` or ``"codes"`` (see the module's description).

    Parameters
    ----------
    candidates : {"auto", "features", "codes"}
        What was asked for.
    limit : Threshold
        The run's threshold.
    device : {"cpu", "gpu"}
        Where the run fingerprints and joins.
    max_distance : int, optional
        An explicit candidate radius.
    recall : float, optional
        The approximate join's recall.

    Returns
    -------
    str
        ``"features"`` or ``"codes"``.

    Raises
    ------
    ValueError
        ``"features"`` without verification, with a threshold at or below 0, or with a radius
        or an approximate join (which only the codes' join has); an unknown source.

    Examples
    --------
    >>> from gpusimhash.verify._threshold import plan_threshold
    >>> limit = plan_threshold(256, verify=True)
    >>> candidate_source("auto", limit, "cpu", max_distance=None, recall=None)
    'features'
    >>> candidate_source("auto", limit, "gpu", max_distance=None, recall=None)
    'codes'
    """
    if candidates not in CANDIDATE_SOURCES:
        raise ValueError(
            f"candidates must be one of {', '.join(CANDIDATE_SOURCES)}, got {candidates!r}"
        )
    usable = limit.verify and limit.value > 0.0
    if candidates == "features":
        if not usable:
            raise ValueError(
                "candidates='features' needs a verified similarity threshold above 0 "
                "(not --no-verify, not a cosine at or below 0)"
            )
        if max_distance is not None or recall is not None:
            raise ValueError(
                "candidates='features' uses no Hamming radius: drop max_distance and recall, "
                "or use candidates='codes'"
            )
        return "features"
    if candidates == "codes":
        return "codes"
    explicit = max_distance is not None or recall is not None
    return "features" if usable and device == "cpu" and not explicit else "codes"

"""Where a deduplication's candidate pairs come from: the features, or the codes.

* ``features``: the exact feature join (`gpusimhash.verify._feature_join`) pairs every two
  documents whose exact similarity reaches the threshold, found by prefix filtering on their
  own features; no pair is missed, and no radius is involved.
* ``codes``: every pair of codes within the candidate radius (the Hamming join, exact or with
  ``recall``); a pair at the threshold is a candidate with the probability the radius gives.

``auto`` (the default) takes the features when the run verifies a similarity threshold above
0 on the CPU and no radius is asked for, and the codes otherwise: on a GPU the exhaustive
Hamming join is cheap, an unverified run's threshold is on the codes themselves, and an
explicit ``max_distance`` or ``recall`` asks for the codes' join.

Either way the result is a `CodeGraph`, which the clustering verifies as it goes.
"""

from __future__ import annotations

import numpy as np

from gpusimhash._choices import CANDIDATE_SOURCES
from gpusimhash.codes import code_words
from gpusimhash.join._graph import CodeGraph, adjacency
from gpusimhash.join._groups import collapse, keys_to_pairs, pair_keys
from gpusimhash.verify._feature_join import feature_join
from gpusimhash.verify._features import DocumentFeatures
from gpusimhash.verify._threshold import Threshold
from gpusimhash.verify._units import feature_units


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


def feature_graph(
    codes: np.ndarray,
    features: DocumentFeatures,
    limit: Threshold,
    *,
    max_pairs: int | None = None,
) -> CodeGraph:
    """Link the distinct codes of which some pair of documents reaches the threshold.

    Documents of one code with identical features are joined once, through one of them.

    Parameters
    ----------
    codes : ndarray, shape (n, bits // 8), dtype uint8
        The documents' codes.
    features : DocumentFeatures
        Their features (all ``n``), every document with at least one.
    limit : Threshold
        A verified threshold above 0.
    max_pairs : int, optional
        Refuse more pairs of documents at the threshold than this (`feature_join`).

    Returns
    -------
    CodeGraph
        ``max_distance`` is the code length: the pairs are not bounded by a radius.

    Examples
    --------
    >>> from gpusimhash.fingerprinting import featurize, fingerprint_batch
    >>> from gpusimhash.verify._threshold import plan_threshold
    >>> batch = featurize(["red fox", "red fox jumps", "blue sky", "red fox"])
    >>> codes = fingerprint_batch(batch, "cpu", bits=64, seed=0)
    >>> graph = feature_graph(codes, DocumentFeatures.from_batch(batch), plan_threshold(64))
    >>> graph.document_pairs()
    3
    """
    words, inverse = collapse(code_words(codes))
    n_unique = words.shape[0]
    _, representative = feature_units(inverse, features, np.arange(features.n_docs), False)
    found = feature_join(
        features.take(representative), limit.measure, limit.value, max_pairs=max_pairs
    )
    a = inverse[representative[found.pairs[:, 0]]]
    b = inverse[representative[found.pairs[:, 1]]]
    differ = a != b
    keys = np.unique(pair_keys(np.minimum(a, b)[differ], np.maximum(a, b)[differ], n_unique))
    offsets, neighbours = adjacency([keys_to_pairs(keys, n_unique)], n_unique)
    return CodeGraph(inverse, offsets, neighbours, codes.shape[1] * 8)

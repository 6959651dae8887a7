"""A deduplication's candidate graph from the documents' features.

`candidate_source` (`gpusimhash.verify._sources`) says whether a run's candidates come from the
features or the codes; `feature_graph` builds the features' `CodeGraph`, which the clustering
verifies as it goes, as it does the codes' graph.
"""

from __future__ import annotations

import numpy as np

from gpusimhash._unique import distinct_values
from gpusimhash.codes import code_words
from gpusimhash.join._graph import CodeGraph, adjacency
from gpusimhash.join._groups import collapse, keys_to_pairs, pair_keys
from gpusimhash.verify._feature_join import feature_join
from gpusimhash.verify._features import DocumentFeatures
from gpusimhash.verify._sources import candidate_source
from gpusimhash.verify._threshold import Threshold
from gpusimhash.verify._units import feature_units

__all__ = ["candidate_source", "feature_graph"]


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
        features, limit.measure, limit.value, rows=representative, max_pairs=max_pairs
    )
    a = inverse[representative[found.pairs[:, 0]]]
    b = inverse[representative[found.pairs[:, 1]]]
    differ = a != b
    keys = distinct_values(pair_keys(np.minimum(a, b)[differ], np.maximum(a, b)[differ], n_unique))
    offsets, neighbours = adjacency([keys_to_pairs(keys, n_unique)], n_unique)
    return CodeGraph(inverse, offsets, neighbours, codes.shape[1] * 8)

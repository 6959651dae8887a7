"""Star clusters and connected components of a code graph, each candidate verified only if needed.

Clustering needs far fewer verified pairs than the join proposes. Greedy star clustering only
ever asks about a kept document and a still-unassigned candidate, so `graph_stars` verifies
inside the star loop (`gpusimhash._cpu._cluster_loops.lazy_star`): a dense cluster of ``k``
documents costs about ``k`` comparisons, not ``k**2 / 2``. The result is exactly that of
verifying every candidate pair first and clustering the pairs that pass (`star_clusters` of
`verify_candidates`), because each pair's similarity depends on its two documents alone.
`graph_components` skips the pairs whose ends already share a component.

Documents with the same code and the same features are one *unit*
(`gpusimhash.verify._units.feature_units`), verified once through its representative; without
verification, the units are the distinct codes.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpusimhash import _progress
from gpusimhash._cpu._cluster_loops import (
    COSINE,
    JACCARD,
    NOT_VERIFIED,
    flatten_forest,
    lazy_components,
    lazy_star,
)
from gpusimhash._unique import distinct_values
from gpusimhash.cluster._pairs import StarClusters, policy_order, star_documents, star_order
from gpusimhash.join._graph import CodeGraph
from gpusimhash.join._groups import first_seen_labels, index_dtype
from gpusimhash.verify._features import DocumentFeatures
from gpusimhash.verify._units import feature_units

_MEASURES = {None: NOT_VERIFIED, "cosine": COSINE, "jaccard": JACCARD}
# the star loop verifies up to this many units against their candidates at once, in parallel,
_TENTATIVE_CENTRES = 4096
# until their unassigned candidates reach this many: each parallel round is milliseconds of work,
# so waiting for its slowest thread costs little even when other programs share the cores
_TENTATIVE_CANDIDATES = 32768
# calls the loops are cut into, each reported to a dedup stage's progress bar
_PROGRESS_STEPS = 64


@dataclass(frozen=True)
class UnitGraph:
    """The units of a code graph: what the clustering loops walk.

    Every array is of `index_dtype` of the number of documents: int32 (4 bytes per document
    and per unit) below ``2**31`` documents.

    Attributes
    ----------
    unit : ndarray, shape (n,)
        Unit of each document, numbered in order of each unit's lowest document.
    unit_code : ndarray, shape (n_units,)
        Distinct code of each unit that has candidates, -1 for the others (featureless or
        alone).
    local : ndarray, shape (n_units,)
        Row of each unit's representative in the features (-1 where none is needed).
    code_offsets : ndarray, shape (n_unique + 1,)
        Row starts of `code_units`.
    code_units : ndarray
        The units of each distinct code that have candidates.
    first_document : ndarray, shape (n_units,)
        The lowest document of each unit.
    """

    unit: np.ndarray
    unit_code: np.ndarray
    local: np.ndarray
    code_offsets: np.ndarray
    code_units: np.ndarray
    first_document: np.ndarray

    @property
    def n_units(self) -> int:
        """Number of units."""
        return int(self.unit_code.size)


def unit_graph(
    graph: CodeGraph,
    features: DocumentFeatures,
    rows: np.ndarray,
    *,
    verify: bool,
    empty_as_duplicates: bool = False,
) -> UnitGraph:
    """Group the documents of a code graph into units.

    Parameters
    ----------
    graph : CodeGraph
        The join result over all ``n`` documents.
    features : DocumentFeatures
        Features of the documents `rows` (at least every candidate document).
    rows : ndarray, dtype int64
        Ascending document indices of `features`.
    verify : bool
        Units of identical features within a code (to be verified); otherwise the distinct
        codes.
    empty_as_duplicates : bool
        With `verify`: all featureless documents form one unit.

    Returns
    -------
    UnitGraph
    """
    n_codes = graph.n_unique
    index = index_dtype(graph.inverse.size)
    if not verify:
        codes = np.arange(n_codes, dtype=index)
        first = np.empty(n_codes, dtype=index)
        first[graph.inverse[::-1]] = np.arange(graph.inverse.size - 1, -1, -1)
        return UnitGraph(
            graph.inverse.astype(index),
            codes,
            np.zeros(n_codes, index),
            np.arange(n_codes + 1, dtype=index),
            codes,
            first,
        )
    unit, representative = feature_units(graph.inverse, features, rows, empty_as_duplicates)
    unit, representative = unit.astype(index), representative.astype(index)
    featured = distinct_values(unit[rows[features.sizes > 0]])
    unit_code = np.full(representative.size, -1, dtype=index)
    unit_code[featured] = graph.inverse[representative[featured]]
    local = np.full(representative.size, -1, dtype=index)
    local[featured] = np.searchsorted(rows, representative[featured])
    code_units = featured[np.argsort(unit_code[featured], kind="stable")]
    code_offsets = np.zeros(n_codes + 1, dtype=index)
    code_offsets[1:] = np.cumsum(np.bincount(unit_code[featured], minlength=n_codes))
    return UnitGraph(unit, unit_code, local, code_offsets, code_units, representative)


def _loop_arguments(
    graph: CodeGraph, units: UnitGraph, features: DocumentFeatures, measure: str | None
) -> tuple[Any, ...]:
    """Return the arguments the compiled loops share, after the unit order."""
    if measure not in _MEASURES:
        raise ValueError(f"measure must be one of cosine, jaccard or None, got {measure!r}")
    return (
        units.unit_code,
        units.code_offsets,
        units.code_units.copy(),  # the star loop compacts it
        graph.offsets,
        graph.neighbours,
        units.local,
        features.states,
        features.offsets,
        features.weights,
        features.exponents,
        features.squared_norms,
        _MEASURES[measure],
    )


def graph_stars(
    graph: CodeGraph,
    units: UnitGraph,
    features: DocumentFeatures,
    *,
    measure: str | None,
    value: float = 0.0,
    policy: str = "first",
    lengths: Any = None,
    scores: Any = None,
) -> tuple[StarClusters, int]:
    """Star clusters of the candidates that reach the threshold, verified in the star loop.

    Units are visited in keep-policy order (of their preferred document); an unassigned unit is
    kept and takes every unassigned candidate unit whose similarity reaches `value`. The result
    equals `gpusimhash.star_clusters` of every verified pair of units (`verify_candidates`).

    Parameters
    ----------
    graph : CodeGraph
        The candidates.
    units : UnitGraph
        Its units (`unit_graph`).
    features : DocumentFeatures
        The features `units.local` points into.
    measure : {"cosine", "jaccard", None}
        The similarity verified; None takes every candidate unverified (similarity NaN).
    value : float
        The threshold.
    policy : {"first", "longest", "score"}
        Which document is kept (`gpusimhash.keep_one`).
    lengths, scores : array_like, optional
        For the policies that need them.

    Returns
    -------
    stars : StarClusters
    verified : int
        Pairs of units compared on their features.

    Raises
    ------
    ValueError
        An unknown measure or policy.

    Examples
    --------
    >>> from gpusimhash.join._exact import near_duplicate_graph
    >>> from gpusimhash.fingerprinting import featurize
    >>> from gpusimhash._cpu._fingerprint import fingerprint_batch
    >>> batch = featurize(["a b c", "a b c d", "a b x y", "a b c"])
    >>> graph = near_duplicate_graph(fingerprint_batch(batch, bits=64, seed=0), max_distance=64)
    >>> features = DocumentFeatures.from_batch(batch)
    >>> units = unit_graph(graph, features, np.arange(4), verify=True)
    >>> stars, verified = graph_stars(graph, units, features, measure="cosine", value=0.8)
    >>> stars.kept_for.tolist(), stars.similarity.round(3).tolist(), verified
    ([0, 0, 2, 0], [1.0, 0.866, 1.0, 1.0], 2)
    """
    best, unit_kept, unit_similarity, verified = unit_stars(
        graph,
        units,
        features,
        measure=measure,
        value=value,
        policy=policy,
        lengths=lengths,
        scores=scores,
    )
    return star_documents(units.unit, best, unit_kept, unit_similarity), verified


def unit_stars(
    graph: CodeGraph,
    units: UnitGraph,
    features: DocumentFeatures,
    *,
    measure: str | None,
    value: float = 0.0,
    policy: str = "first",
    lengths: Any = None,
    scores: Any = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Star clusters of units (`graph_stars` before its documents' arrays are made).

    A caller that makes its own arrays per document (`gpusimhash.cluster._pairs.star_documents`
    makes all of them) can let go of the features first.

    Parameters
    ----------
    graph, units, features, measure, value, policy, lengths, scores
        As in `graph_stars`.

    Returns
    -------
    best : ndarray, shape (n_units,)
        The document that speaks for each unit (`star_order`).
    unit_kept : ndarray, shape (n_units,)
        Kept unit of each unit (itself when kept).
    unit_similarity : ndarray, shape (n_units,), dtype float64
        Each unit's similarity to its kept unit.
    verified : int
        Pairs of units compared on their features.

    Raises
    ------
    ValueError
        An unknown measure or policy.
    """
    n = units.unit.size
    arguments = _loop_arguments(graph, units, features, measure)
    if policy == "first":  # each unit's lowest document speaks for it, lowest first
        best = units.first_document
        order = np.argsort(best, kind="stable")
    else:
        rank = np.empty(n, dtype=np.int64)
        rank[policy_order(n, policy=policy, lengths=lengths, scores=scores)] = np.arange(n)
        best, order = star_order(units.unit, units.n_units, rank)
        del rank
    star: Any = lazy_star  # untyped here: called with the shared arguments unpacked
    index = units.unit_code.dtype
    order = order.astype(index)
    unit_kept = np.full(units.n_units, -1, dtype=index)
    unit_similarity = np.ones(units.n_units)
    live = np.diff(units.code_offsets)
    verified = 0
    for part in _progress_steps(order.size):  # the state carries over from part to part
        verified += star(
            order[part],
            unit_kept,
            unit_similarity,
            live,
            *arguments,
            float(value),
            _TENTATIVE_CENTRES,
            _TENTATIVE_CANDIDATES,
        )
    return best, unit_kept, unit_similarity, verified


def graph_components(
    graph: CodeGraph,
    units: UnitGraph,
    features: DocumentFeatures,
    *,
    measure: str | None,
    value: float = 0.0,
) -> tuple[np.ndarray, int]:
    """Label the connected components of the candidates that reach the threshold (these chain).

    Parameters
    ----------
    graph, units, features, measure, value
        As in `graph_stars`.

    Returns
    -------
    labels : ndarray, shape (n,), dtype int64
        Cluster of each document, numbered in order of each cluster's first document.
    verified : int
        Pairs of units compared (a pair already in one component is not).

    Raises
    ------
    ValueError
        An unknown measure.

    Examples
    --------
    >>> from gpusimhash.join._exact import near_duplicate_graph
    >>> codes = np.array([[0b0000], [0b0001], [0b0011], [0b1111_0000]], dtype=np.uint8)
    >>> graph = near_duplicate_graph(codes, max_distance=1)
    >>> from gpusimhash.fingerprinting import featurize
    >>> empty = DocumentFeatures.from_batch(featurize(["", "", "", ""]))
    >>> units = unit_graph(graph, empty, np.arange(4), verify=False)
    >>> graph_components(graph, units, empty, measure=None)[0].tolist()
    [0, 0, 0, 1]
    """
    arguments = _loop_arguments(graph, units, features, measure)
    components: Any = lazy_components  # untyped here: called with the shared arguments unpacked
    parent = np.arange(units.n_units, dtype=units.unit_code.dtype)
    verified = 0
    for part in _progress_steps(units.code_offsets.size - 1):  # the forest carries over
        verified += components(parent, part.start, part.stop, *arguments, float(value))
    return first_seen_labels(flatten_forest(parent)[units.unit]), verified


def _progress_steps(n: int) -> Iterator[slice]:
    """Yield ``range(n)`` cut into at most `_PROGRESS_STEPS` slices, each reported when done.

    The slices are announced to the current progress bar (`gpusimhash._progress`, a dedup
    stage's bar; nothing without one) and each is reported done when the caller asks for the
    next, so the bar of a long clustering loop has a total and an ETA.
    """
    step = max(1, -(-n // _PROGRESS_STEPS))
    starts = range(0, n, step)
    _progress.expect(len(starts))
    for start in starts:
        yield slice(start, min(start + step, n))
        _progress.advance()

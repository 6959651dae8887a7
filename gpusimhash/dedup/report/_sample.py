"""What the report samples: the largest clusters, pairs around the radius, their true cosines.

The pipeline samples (`sample_pairs`) before its second pass, which collects the texts of the
rows named, then computes the true cosines of the sampled pairs (`sampled_cosines`); the
neighbourhoods of sampled documents (`neighbours`) are searched up to `reach`, a margin past the
candidate radius.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpusimhash import _segments
from gpusimhash.codes import estimate_cosine, hamming
from gpusimhash.evaluation import row_pair_cosines
from gpusimhash.join._groups import DuplicateGroups
from gpusimhash.text import TextFeaturizer

_LOGGER = logging.getLogger(__name__)
# near-duplicate pairs, pairs just beyond the radius and random pairs sampled, at most (each)
SAMPLED_PAIRS = 1500
# documents whose whole neighbourhood is searched, and the (query x code) work allowed for it;
# none where the candidates have no Hamming radius (from the features): every code is then
# within reach, and the neighbourhood would hold 24 bytes per (query, code), all of them
NEIGHBOURHOOD_QUERIES = 1000
NEIGHBOURHOOD_WORK = 400_000_000
CODES_PER_SCAN = 1 << 20  # codes in one FAISS flat index at a time (bounds the copy)
EXAMPLE_CLUSTERS = 10  # the largest clusters shown
EXAMPLE_MEMBERS = 5  # members shown per cluster: the least similar to the kept one first


@dataclass(frozen=True)
class ClusterView:
    """What the report needs of a clustering.

    Attributes
    ----------
    labels : ndarray, shape (n,), dtype int64
        Cluster of every document, ``0 .. n_clusters - 1``.
    kept_rows : ndarray, shape (n_clusters,), dtype int64
        The kept document of every cluster.
    similarity : ndarray, shape (n,), dtype float64
        Every document's similarity to its kept document (NaN where not measured).
    """

    labels: np.ndarray
    kept_rows: np.ndarray
    similarity: np.ndarray


def reach(bits: int, radius: int) -> int:
    """Return the largest distance the neighbourhood sample looks at: a margin past the radius.

    Examples
    --------
    >>> reach(64, 3), reach(256, 68), reach(64, 64)
    (7, 85, 64)
    """
    return min(bits, radius + max(4, radius // 4))


def neighbours(
    codes: np.ndarray, query_codes: np.ndarray, limit: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every (query, row, distance) with distance <= limit, `CODES_PER_SCAN` codes at a time.

    Parameters
    ----------
    codes : ndarray, shape (n, bits // 8), dtype uint8
        The codes searched.
    query_codes : ndarray, shape (q, bits // 8), dtype uint8
        The queries.
    limit : int
        The largest distance.

    Returns
    -------
    query, row, distance : ndarray, dtype int64
        Query positions and rows of ``codes``: by scan, then query, then row.

    Examples
    --------
    >>> codes = np.array([[0], [1], [3], [255]], dtype=np.uint8)
    >>> [a.tolist() for a in neighbours(codes, codes[[0]], 1)]
    [[0, 0], [0, 1], [0, 1]]
    """
    import faiss  # only when a report is drawn: a run without one never loads it

    bits = codes.shape[1] * 8
    found: list[tuple[np.ndarray, ...]] = [(np.zeros(0, np.int64),) * 3]
    for start in range(0, codes.shape[0], CODES_PER_SCAN):
        flat = faiss.IndexBinaryFlat(bits)
        flat.add(np.ascontiguousarray(codes[start : start + CODES_PER_SCAN]))
        lims, distances, rows = flat.range_search(query_codes, limit + 1)  # FAISS: d < limit
        query = _segments.segment_of(np.diff(lims.astype(np.int64)))
        found.append((query, rows.astype(np.int64) + start, distances.astype(np.int64)))
    query, rows, distances = (np.concatenate(parts) for parts in zip(*found, strict=True))
    return query.astype(np.int64), rows, distances


def _neighbourhood(codes: np.ndarray, queries: np.ndarray, limit: int) -> tuple[np.ndarray, ...]:
    """Every (query, row, distance) with distance <= limit, the query's own row left out."""
    at, rows, distances = neighbours(codes, codes[queries], limit)
    query = queries[at]
    other = query != rows
    return query[other], rows[other], distances[other]


def largest_clusters(clusters: ClusterView, codes: np.ndarray) -> list[dict[str, Any]]:
    """Pick the largest clusters: kept row and the members least similar to it, with edges.

    Parameters
    ----------
    clusters : ClusterView
        The clustering (of any documents: rows are positions in it).
    codes : ndarray, shape (n, bits // 8), dtype uint8
        The documents' codes.

    Returns
    -------
    list of dict
        Up to `EXAMPLE_CLUSTERS` clusters of two or more documents, the largest first (ties:
        lowest label): ``size``, ``kept`` (row), and up to `EXAMPLE_MEMBERS` ``members``, the
        least similar to the kept one first, with their ``similarities`` and ``distances``.

    Examples
    --------
    >>> view = ClusterView(np.array([0, 0, 1, 0]), np.array([0, 2]), np.array([1, 0.9, 1, 0.8]))
    >>> codes = np.array([[0], [1], [7], [3]], dtype=np.uint8)
    >>> [(e["size"], e["kept"], e["members"], e["distances"]) for e in largest_clusters(view, codes)]
    [(3, 0, [3, 1], [2, 1])]
    """
    sizes = np.bincount(clusters.labels) if clusters.labels.size else np.zeros(0, np.int64)
    largest = np.lexsort((np.arange(sizes.size), -sizes))[:EXAMPLE_CLUSTERS]
    largest = largest[sizes[largest] > 1]
    order = np.argsort(clusters.labels, kind="stable")
    starts = _segments.starts(sizes) if sizes.size else np.zeros(0, np.int64)
    examples = []
    for label in largest.tolist():
        kept = int(clusters.kept_rows[label])
        rows = order[starts[label] : starts[label] + sizes[label]]
        rows = rows[rows != kept]
        similarity = np.nan_to_num(clusters.similarity[rows], nan=np.inf)
        rows = rows[np.lexsort((rows, similarity))][:EXAMPLE_MEMBERS]
        distances = hamming(codes[rows], np.broadcast_to(codes[kept], (rows.size, codes.shape[1])))
        examples.append(
            {
                "size": int(sizes[label]),
                "kept": kept,
                "members": rows.tolist(),
                "similarities": clusters.similarity[rows].tolist(),
                "distances": np.asarray(distances).tolist(),
            }
        )
    return examples


def sample_pairs(
    groups: DuplicateGroups,
    codes: np.ndarray,
    seed: int,
    *,
    clusters: ClusterView | None = None,
) -> dict[str, Any]:
    """Pick what the report shows: pairs found, pairs just beyond the radius, random pairs.

    Parameters
    ----------
    groups : DuplicateGroups
        The near-duplicate pairs (distinct codes), and the radius (``max_distance``).
    codes : ndarray, shape (n, bits // 8), dtype uint8
        Every document's code.
    seed : int
        Seed of the sampling.
    clusters : ClusterView, optional
        The clustering: adds the largest clusters as examples.

    Returns
    -------
    dict
        ``pairs`` (int64, (m, 2)) and ``kind`` (``"found"``, ``"beyond"`` or ``"random"`` per
        pair); ``rows`` (every document whose text the report needs, sorted);
        ``found_distances`` (of every pair found) and ``random_distances``; ``estimated``
        (the pairs' estimated cosines); ``neighbourhood`` (distances from sampled documents
        to all documents up to `reach`), ``radius``, ``reach`` and ``sampled_documents``;
        ``examples`` (the largest clusters).

    Examples
    --------
    >>> from gpusimhash import near_duplicate_groups
    >>> codes = np.array([[0], [0], [1], [255]], dtype=np.uint8)
    >>> sample = sample_pairs(near_duplicate_groups(codes, max_distance=0), codes, seed=0)
    >>> sample["found_distances"].tolist(), sample["reach"], sample["neighbourhood"].tolist()
    ([0], 4, [0, 1, 0, 1, 1, 1])
    """
    found, found_distances = _found_pairs(groups, codes)
    return draw_sample(
        found,
        found_distances,
        largest_clusters(clusters, codes) if clusters is not None else [],
        n=codes.shape[0],
        bits=codes.shape[1] * 8,
        radius=int(groups.max_distance),
        seed=seed,
        codes_of=codes.__getitem__,
        neighbourhood=functools.partial(_neighbourhood, codes),
    )


def draw_sample(
    found: np.ndarray,
    found_distances: np.ndarray,
    examples: list[dict[str, Any]],
    *,
    n: int,
    bits: int,
    radius: int,
    seed: int,
    codes_of: Callable[[np.ndarray], np.ndarray],
    neighbourhood: Callable[[np.ndarray, int], tuple[np.ndarray, ...]],
) -> dict[str, Any]:
    """Draw the sample of `sample_pairs` wherever the codes live.

    Parameters
    ----------
    found : ndarray, shape (m, 2), dtype int64
        One document pair per pair of distinct units found, then one per repeated unit.
    found_distances : ndarray
        Their Hamming distances.
    examples : list of dict
        The largest clusters.
    n, bits, radius, seed
        Documents, code length, the candidate radius and the sampling's seed. A radius of the
        code length (candidates from the features) samples no neighbourhood: every code would
        be in it.
    codes_of : callable
        ``codes_of(rows)``: the codes of some rows (int64 array).
    neighbourhood : callable
        ``neighbourhood(queries, limit)``: (query, row, distance) of every pair of a query
        row and another row at most ``limit`` apart, by scan of `CODES_PER_SCAN` rows, then
        query, then row.

    Returns
    -------
    dict
        As `sample_pairs`.

    Examples
    --------
    >>> codes = np.array([[0], [0], [1], [255]], dtype=np.uint8)
    >>> sample = draw_sample(np.array([[0, 1]]), np.array([0]), [], n=4, bits=8, radius=0,
    ...     seed=0, codes_of=codes.__getitem__,
    ...     neighbourhood=lambda q, limit: _neighbourhood(codes, q, limit))
    >>> sample["found_distances"].tolist(), sample["neighbourhood"].tolist()
    ([0], [0, 1, 0, 1, 1, 1])
    """
    rng = np.random.default_rng(seed)
    if len(found) > SAMPLED_PAIRS:
        found = found[rng.choice(len(found), SAMPLED_PAIRS, replace=False)]
    random = rng.integers(0, n, size=(SAMPLED_PAIRS if n > 1 else 0, 2))
    random = random[random[:, 0] != random[:, 1]]
    random_distances = (
        hamming(codes_of(random[:, 0]), codes_of(random[:, 1]))
        if len(random)
        else np.zeros(0, np.int32)
    )
    limit = reach(bits, radius)
    n_queries = min(n, NEIGHBOURHOOD_QUERIES, max(20, NEIGHBOURHOOD_WORK // max(n, 1)))
    queries = np.sort(rng.choice(n, n_queries if radius < bits else 0, replace=False))
    query, row, distance = (
        neighbourhood(queries, limit) if queries.size else (np.zeros(0, np.int64),) * 3
    )
    _LOGGER.info(
        "report: neighbours of %d sampled documents up to distance %d: %d",
        queries.size,
        limit,
        distance.size,
    )
    beyond_at = np.flatnonzero(distance > radius)
    if beyond_at.size > SAMPLED_PAIRS:
        beyond_at = rng.choice(beyond_at, SAMPLED_PAIRS, replace=False)
    beyond = np.stack([query[beyond_at], row[beyond_at]], axis=1)
    pairs = np.concatenate([found, beyond, random]).astype(np.int64).reshape(-1, 2)
    kind = np.repeat(["found", "beyond", "random"], [len(found), len(beyond), len(random)])
    shown = [r for e in examples for r in (e["kept"], *e["members"])]
    return {
        "pairs": pairs,
        "kind": kind,
        "rows": np.unique(np.concatenate([pairs.ravel(), np.array(shown, np.int64)])),
        "found_distances": np.asarray(found_distances),
        "random_distances": np.asarray(random_distances),
        "estimated": (
            estimate_cosine(codes_of(pairs[:, 0]), codes_of(pairs[:, 1]))
            if len(pairs)
            else np.zeros(0)
        ),
        "neighbourhood": distance,
        "radius": radius,
        "reach": limit,
        "sampled_documents": int(queries.size),
        "examples": examples,
    }


def _found_pairs(groups: DuplicateGroups, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One document pair per pair of distinct codes, and one per repeated code; distances."""
    n = codes.shape[0]
    first_row = np.full(groups.n_unique, -1, dtype=np.int64)
    first_row[groups.inverse[::-1]] = np.arange(n)[::-1]
    found = first_row[groups.unique_pairs] if len(groups.unique_pairs) else np.zeros((0, 2), int)
    sizes = np.bincount(groups.inverse) if n else np.zeros(0, np.int64)
    repeated = np.flatnonzero(sizes > 1)
    second_row = np.full(groups.n_unique, -1, dtype=np.int64)
    if repeated.size:
        order = np.argsort(groups.inverse, kind="stable")
        second_row[repeated] = order[_segments.starts(sizes)[repeated] + 1]
    identical = np.stack([first_row[repeated], second_row[repeated]], axis=1)
    pairs = np.concatenate([found, identical]).astype(np.int64)
    distances = hamming(codes[pairs[:, 0]], codes[pairs[:, 1]]) if len(pairs) else np.zeros(0)
    return pairs, np.asarray(distances)


def sampled_cosines(
    sample: dict[str, Any],
    texts: dict[int, str],
    featurizer: TextFeaturizer,
    ids: Mapping[int, Any] | None = None,
) -> dict[str, Any]:
    """Estimated and true cosines of the sampled pairs, and the examples' texts.

    Parameters
    ----------
    sample : dict
        From `sample_pairs`.
    texts : dict
        The text of every row in ``sample["rows"]``.
    featurizer : TextFeaturizer
        The featurizer of the codes.
    ids : mapping of int to id, optional
        The ids of the examples' rows (the report shows them next to the rows).

    Returns
    -------
    dict
        The keyword arguments of `write_report` but ``cluster_sizes``.
    """
    rows = np.unique(sample["pairs"])  # a text in many pairs is featurized once
    left, right = (
        np.searchsorted(rows, sample["pairs"][:, 0]),
        np.searchsorted(rows, sample["pairs"][:, 1]),
    )
    true = row_pair_cosines(featurizer, [texts[int(r)] for r in rows], left, right)
    examples = [
        {
            **example,
            "kept_text": texts[example["kept"]],
            "member_texts": [texts[r] for r in example["members"]],
            "kept_id": (ids or {}).get(example["kept"], example["kept"]),
            "member_ids": [(ids or {}).get(r, r) for r in example["members"]],
        }
        for example in sample["examples"]
    ]
    return {
        "found_distances": sample["found_distances"],
        "random_distances": sample["random_distances"],
        "estimated": sample["estimated"],
        "true": true,
        "sampled_found": sample["kind"] == "found",
        "sampled_beyond": sample["kind"] == "beyond",
        "neighbourhood": {key: sample[key] for key in ("neighbourhood", "radius", "reach")}
        | {"documents": sample["sampled_documents"]},
        "examples": examples,
    }

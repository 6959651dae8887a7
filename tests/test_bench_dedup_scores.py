"""The removal scores of bench/bench_peers.py, on tiny generated corpora."""

from __future__ import annotations

import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.append(str(Path(__file__).resolve().parents[1] / "bench"))

from _dedup_scores import doc_pairs, group_identical, keep_first_truth, removal_scores

THRESHOLD = Fraction(4, 5)


def true_doc_pairs(sets: list[frozenset[int]]) -> set[tuple[int, int]]:
    """Every document pair whose Jaccard reaches the threshold, by brute force."""
    return {
        (u, v)
        for u in range(len(sets))
        for v in range(u + 1, len(sets))
        if sets[u]
        and sets[v]
        and Fraction(len(sets[u] & sets[v]), len(sets[u] | sets[v])) >= THRESHOLD
    }


def truth_graph(sets: list[frozenset[int]]) -> tuple[np.ndarray, np.ndarray]:
    """Groups of identical sets and the pairs between distinct sets, as the bench builds them."""
    keys = [np.array(sorted(s), dtype=np.uint32).tobytes() for s in sets]
    groups = group_identical(keys, np.array([not s for s in sets]))
    first = {int(g): doc for doc, g in reversed(list(enumerate(groups)))}
    reps = [frozenset(sets[first[g]]) for g in range(len(first))]
    pairs = np.array(sorted(true_doc_pairs(reps)), dtype=np.int64).reshape(-1, 2)
    return groups, pairs


def reference_scores(sets: list[frozenset[int]], kept: np.ndarray) -> dict[str, float]:
    """The definitions, applied to document pairs directly."""
    pairs = true_doc_pairs(sets)
    partners: dict[int, set[int]] = {d: set() for d in range(len(sets))}
    for u, v in pairs:
        partners[u].add(v)
        partners[v].add(u)
    removed = [d for d in range(len(sets)) if not kept[d]]
    correct = sum(any(kept[p] for p in partners[d]) for d in removed)
    greedy_kept: list[int] = []
    for d in range(len(sets)):
        if not partners[d] & set(greedy_kept):
            greedy_kept.append(d)
    perfect = len(sets) - len(greedy_kept)
    return {
        "removed": len(removed),
        "removed_correctly": correct,
        "perfect_removals": perfect,
        "removal_precision": correct / len(removed) if removed else 1.0,
        "removal_recall": correct / perfect if perfect else 1.0,
    }


def test_hand_example() -> None:
    # docs 0, 2 identical; 1 and 3 share 4 of 5 words with 0; 4 unrelated; 5 and 6 empty
    base = frozenset(range(5))
    sets = [
        base,
        frozenset(range(4)),
        base,
        frozenset(range(1, 5)),
        frozenset({9}),
        frozenset(),
        frozenset(),
    ]
    groups, pairs = truth_graph(sets)
    assert groups.tolist() == [0, 1, 0, 2, 3, 4, 5]
    assert pairs.tolist() == [[0, 1], [0, 2]]  # {0..3} and {1..4}: Jaccard 3/5
    assert keep_first_truth(6, pairs).tolist() == [True, False, False, True, True, True]
    # the perfect dedup removes 1, 2 and 3; this tool keeps 1 and removes 0, 2 (backed by 1:
    # 0 directly, 2 as 0's twin), 3 (not backed: its only partner, 0, is removed) and 5
    kept = np.array([False, True, False, False, True, False, True])
    scores = removal_scores(kept, groups, pairs)
    assert scores == {
        "removed": 4,
        "removed_correctly": 2,
        "perfect_removals": 3,
        "removal_precision": 0.5,
        "removal_recall": 2 / 3,
    }
    assert scores == reference_scores(sets, kept)


def test_keeping_everything_or_the_greedy_pass() -> None:
    sets = [frozenset({1, 2, 3, 4, 5}), frozenset({1, 2, 3, 4}), frozenset({1, 2, 3, 4})]
    groups, pairs = truth_graph(sets)
    assert keep_first_truth(2, pairs).tolist() == [True, False]
    everything = removal_scores(np.ones(3, bool), groups, pairs)
    assert (everything["removed"], everything["removal_recall"]) == (0, 0.0)
    greedy = removal_scores(np.array([True, False, False]), groups, pairs)
    assert (greedy["removal_precision"], greedy["removal_recall"]) == (1.0, 1.0)


def test_lengths_must_match() -> None:
    with pytest.raises(ValueError, match="kept has 2 documents, groups 3"):
        removal_scores(np.ones(2, bool), np.arange(3), np.zeros((0, 2), np.int64))


corpora = st.lists(st.frozensets(st.integers(0, 6), max_size=6), min_size=1, max_size=14)


@settings(max_examples=200, deadline=None)
@given(sets=corpora, data=st.data())
def test_grouped_scores_match_the_document_definitions(sets, data) -> None:
    kept = np.array(data.draw(st.lists(st.booleans(), min_size=len(sets), max_size=len(sets))))
    groups, pairs = truth_graph(sets)
    assert removal_scores(kept, groups, pairs) == reference_scores(sets, kept)
    assert doc_pairs(groups, pairs, np.arange(len(sets))) == true_doc_pairs(sets)

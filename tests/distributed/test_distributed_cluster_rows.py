"""The write stage's clusters: every kept document with those removed for it, in report order."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from gpusimhash.distributed._write_stage import cluster_rows


@st.composite
def removals(draw):
    """Disjoint clusters of two or more rows: the removed rows, ascending, and each one's kept."""
    n = draw(st.integers(0, 60))
    label = draw(st.lists(st.integers(0, 8), min_size=n, max_size=n))
    rows = np.array(draw(st.permutations(range(200)))[:n], dtype=np.int64)
    removed, kept_for = [], []
    for c in set(label):
        members = rows[np.array(label) == c]
        if members.size < 2:
            continue
        kept = members[draw(st.integers(0, members.size - 1))]
        removed += [m for m in members.tolist() if m != kept]
        kept_for += [int(kept)] * (members.size - 1)
    order = np.argsort(removed, kind="stable")
    return np.array(removed, np.int64)[order], np.array(kept_for, np.int64)[order]


@given(removals())
def test_cluster_rows_are_each_kept_document_with_those_removed_for_it_by_lowest_row(found):
    removed, kept_for = found
    expected = sorted(
        (sorted([int(k), *removed[kept_for == k].tolist()]) for k in np.unique(kept_for)),
        key=lambda rows: rows[0],
    )
    clusters = cluster_rows(removed, kept_for)
    assert [rows.tolist() for rows in clusters.split()] == expected
    assert clusters.sizes.tolist() == [len(rows) for rows in expected]
    assert clusters.firsts.tolist() == [rows[0] for rows in expected]
    assert len(clusters) == len(expected)
    assert clusters.members.dtype == clusters.bounds.dtype == np.int64

"""RowIds answers exactly as the dict of row to id it replaces."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusimhash.dedup.row_ids import RowIds

ids_of = st.one_of(st.integers(-(2**70), 2**70), st.text(max_size=3), st.none())


@settings(max_examples=80, deadline=None)
@given(st.lists(st.lists(st.tuples(st.integers(1, 5), ids_of), max_size=6), max_size=6), st.data())
def test_row_ids_answer_as_a_dict(chunks, data):
    ids, want, row = RowIds(), {}, -1
    for chunk in chunks:
        rows = []
        for step, value in chunk:
            row += step
            rows.append(row)
            want[row] = value
        ids.append(np.array(rows, dtype=np.int64), [value for _, value in chunk])
    assert len(ids) == len(want)
    assert list(ids) == sorted(want)
    for r in range(row + 2):
        assert ids.get(r, "absent") == want.get(r, "absent")
        if r in want:
            assert type(ids[r]) is type(want[r])
    if want:
        asked = data.draw(st.lists(st.sampled_from(sorted(want)), max_size=10))
        taken = ids.take(np.array(asked, dtype=np.int64))
        got = taken.tolist() if isinstance(taken, np.ndarray) else taken
        assert got == [want[r] for r in asked]
        assert [type(v) for v in got] == [type(want[r]) for r in asked]
        with pytest.raises(KeyError):
            ids.take(np.array([row + 1]))


def test_rows_must_ascend_across_appends():
    ids = RowIds()
    ids.append(np.array([3, 4]), ["a", "b"])
    with pytest.raises(ValueError, match="ascending"):
        ids.append(np.array([4]), ["c"])
    with pytest.raises(ValueError, match="ascending"):
        ids.append(np.array([7, 6]), ["c", "d"])
    with pytest.raises(ValueError, match="2 rows and 1 ids"):
        ids.append(np.array([8, 9]), ["c"])
    with pytest.raises(KeyError):
        RowIds().take(np.array([0]))

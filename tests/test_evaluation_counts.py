import pytest

"""Removal scores from per-group counts summed over any split of the groups equal removal_scores."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusimhash.distributed._partitions import label_task
from gpusimhash.evaluation import removal_counts, removal_figures, removal_scores


@settings(max_examples=80, deadline=None)
@given(
    truth=st.lists(st.integers(0, 12), min_size=0, max_size=60),
    seed=st.integers(0, 2**32 - 1),
    n_splits=st.integers(1, 5),
)
def test_counts_summed_over_any_split_give_removal_scores(truth, seed, n_splits):
    truth = np.array(truth, dtype=np.int64)
    kept = np.random.default_rng(seed).random(truth.size) < 0.6
    sizes = np.bincount(truth) if truth.size else np.zeros(0, np.int64)
    kept_per_group = np.bincount(truth[kept], minlength=sizes.size) if truth.size else sizes
    split = np.random.default_rng(seed + 1).integers(0, n_splits, sizes.size)
    counts = [
        removal_counts(sizes[split == s], kept_per_group[split == s]) for s in range(n_splits)
    ]
    summed = {key: sum(c[key] for c in counts) for key in counts[0]}
    assert removal_figures(summed) == removal_scores(truth, kept)


@pytest.mark.slow
def test_equal_labels_go_to_the_same_task_in_every_process():
    """Python salts str and bytes hashes per process: the routing must not depend on it."""
    import os
    import subprocess
    import sys

    labels = ["spam", "é", 7, 7.0, True, None, b"x", 2**70, -3.5]
    code = (
        "from gpusimhash.distributed._partitions import label_task; "
        f"print([label_task(v, 13) for v in {labels!r}])"
    )
    runs = {
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": str(seed)},
        ).stdout
        for seed in (1, 2, 3)
    }
    assert runs == {str([label_task(v, 13) for v in labels]) + "\n"}
    assert label_task(7, 13) == label_task(7.0, 13)
    assert label_task(1, 13) == label_task(True, 13)

"""Shared setup of the distributed tests: the stages on the cluster, and a chosen join.

Every corpus of these tests is small enough for the driver to run (`_pipeline.DRIVER_INPUT_BYTES`):
they run the stages on the cluster unless a test says otherwise.
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from gpusimhash.distributed import _join_stage, _pipeline


@pytest.fixture(autouse=True)
def stages_on_the_cluster():
    """Run every stage on the cluster, not the driver, unless a test says so.

    Its own patch, which a test's ``monkeypatch.undo()`` leaves in place.
    """
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_pipeline, "DRIVER_INPUT_BYTES", -1)
        yield


@pytest.fixture
def force_join(monkeypatch):
    """Return a function that makes every run on this driver take the given join.

    The plan is made as usual (its estimates are still the planner's); only its method is
    replaced, so a test of the tables or of the tiles runs them on any corpus.
    """

    def force(method: str) -> None:
        choose = _join_stage.choose_join

        def forced(*args, **kwargs):
            return dataclasses.replace(choose(*args, **kwargs), method=method)

        monkeypatch.setattr(_join_stage, "choose_join", forced)

    return force


@pytest.fixture(scope="session")
def write_partitioned():
    """Return a function writing records as ``all.jsonl`` and as ``n_parts`` JSONL partitions.

    ``write(root, records, n_parts)`` writes ``root/all.jsonl`` and ``root/parts/partP.jsonl``
    (consecutive records, as even as can be) and returns ``root``.
    """

    def write(root, records, n_parts):
        lines = [json.dumps(record) + "\n" for record in records]
        (root / "all.jsonl").write_text("".join(lines))
        (root / "parts").mkdir()
        for p, rows in enumerate(np.array_split(np.arange(len(lines)), n_parts)):
            (root / "parts" / f"part{p}.jsonl").write_text("".join(lines[r] for r in rows))
        return root

    return write

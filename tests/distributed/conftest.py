"""Shared setup of the distributed tests: run a chosen join whatever the planner prefers."""

from __future__ import annotations

import dataclasses

import pytest

from gpusimhash.distributed import _join_stage


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

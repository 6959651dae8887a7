"""`StageTimer`: the wall-clock seconds of a run's named stages, each with a progress bar."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterator
from typing import Any

from tqdm import tqdm

from gpusimhash import _compile_time, _progress

_LOGGER = logging.getLogger(__name__)

Progress = Callable[..., Any]


class StageTimer:
    """Wall-clock seconds of named stages, with an optional progress bar per stage.

    Parameters
    ----------
    progress : callable, optional
        ``tqdm``-like factory ``progress(desc=..., unit=..., total=...)``; None for no bars.

    Examples
    --------
    >>> timer = StageTimer()
    >>> with timer.stage("join"):
    ...     pass
    >>> list(timer.seconds)
    ['join']
    """

    def __init__(self, progress: Progress | None = None) -> None:
        self.progress = progress
        self.seconds: dict[str, float] = {}
        self.compiled_before = _compile_time.seconds()  # Numba compile time until now

    @contextlib.contextmanager
    def stage(self, name: str, *, unit: str = "doc", total: int | None = None) -> Iterator[Any]:
        """Time the block as stage ``name``; yield its progress bar (disabled without one)."""
        bar = tqdm(disable=True) if self.progress is None else self.progress(desc=name, unit=unit)
        if total is not None:
            bar.total = total
        start = time.perf_counter()
        try:
            with bar, _progress.reporting(bar):  # loops deep in the stage report to its bar
                yield bar
        finally:
            self.seconds[name] = time.perf_counter() - start
            _LOGGER.info("%s: %.3f s", name, self.seconds[name])

"""The index's readers-writer lock and the decorators that take it around methods."""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Callable, Iterator
from typing import Concatenate, ParamSpec, Protocol, TypeVar

Params = ParamSpec("Params")
Result = TypeVar("Result")


class ReadWriteLock:
    """Many readers or one writer; a waiting writer holds back new readers (no starvation)."""

    def __init__(self) -> None:
        self._condition = threading.Condition()
        self._readers = 0
        self._writing = False
        self._writers_waiting = 0

    @contextlib.contextmanager
    def read(self) -> Iterator[None]:
        """Hold the lock shared."""
        with self._condition:
            while self._writing or self._writers_waiting:
                self._condition.wait()
            self._readers += 1
        try:
            yield
        finally:
            with self._condition:
                self._readers -= 1
                if not self._readers:
                    self._condition.notify_all()

    @contextlib.contextmanager
    def write(self) -> Iterator[None]:
        """Hold the lock exclusively."""
        with self._condition:
            self._writers_waiting += 1
            try:
                while self._writing or self._readers:
                    self._condition.wait()
            finally:
                self._writers_waiting -= 1
            self._writing = True
        try:
            yield
        finally:
            with self._condition:
                self._writing = False
                self._condition.notify_all()


class Locked(Protocol):
    """An object whose methods take its ``_lock``."""

    _lock: ReadWriteLock


Owner = TypeVar("Owner", bound=Locked)


def reads(
    method: Callable[Concatenate[Owner, Params], Result],
) -> Callable[Concatenate[Owner, Params], Result]:
    """Run a method under its object's lock, shared."""

    @functools.wraps(method)
    def locked(self: Owner, /, *args: Params.args, **kwargs: Params.kwargs) -> Result:
        with self._lock.read():
            return method(self, *args, **kwargs)

    return locked


def writes(
    method: Callable[Concatenate[Owner, Params], Result],
) -> Callable[Concatenate[Owner, Params], Result]:
    """Run a method under its object's lock, exclusively."""

    @functools.wraps(method)
    def locked(self: Owner, /, *args: Params.args, **kwargs: Params.kwargs) -> Result:
        with self._lock.write():
            return method(self, *args, **kwargs)

    return locked

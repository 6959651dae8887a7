"""The Dask client calls of a distributed deduplication, run at once in this process.

A corpus small enough is deduplicated by the driver (`gpusimhash.distributed._pipeline`): the
same stages run through an `InlineClient`, whose ``submit`` calls the function at once, so
every task of the run is a call in this process, with no scheduling, no transfer and no
serialization, and the outputs are those of the stages on the cluster.

Only what the stages call is offered: ``submit``, ``gather``, ``scatter``, ``run`` and
``scheduler_info``, and a future's ``result``. As on a cluster, a task's exception is raised
where its result is asked for, and a task given a failed future fails with its exception.
`taken` brings the results of tasks left to a cluster into this process as such futures.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["InlineClient", "InlineFuture", "taken"]

WORKER = "inline"  # the one worker's name
# `client.submit`'s own keywords: the rest go to the function
_SCHEDULING = frozenset({"key", "workers", "allow_other_workers", "pure", "priority", "retries"})


class InlineFuture:
    """The result of a call made at once: its value, or the exception it raised."""

    def __init__(self, value: Any = None, error: BaseException | None = None) -> None:
        self._value = value
        self._error = error

    def result(self) -> Any:
        """Return the value, or raise the call's exception.

        Examples
        --------
        >>> InlineFuture(3).result()
        3
        """
        if self._error is not None:
            raise self._error
        return self._value


class InlineClient:
    """Run each submitted call at once, in this process (the calls a deduplication makes).

    Examples
    --------
    >>> client = InlineClient()
    >>> two = client.submit(len, [1, 2], key="length")
    >>> client.gather([client.submit(sum, [two, 3]), two])
    [5, 2]
    """

    def submit(self, function: Callable[..., Any], *args: Any, **kwargs: Any) -> InlineFuture:
        """Call ``function`` now, futures among its arguments replaced by their values.

        Keywords of Dask's scheduling (``key``, ``workers``, ...) are ignored. A failed future
        among the arguments fails this one with its exception, as on a cluster.
        """
        kwargs = {name: value for name, value in kwargs.items() if name not in _SCHEDULING}
        try:
            args, kwargs = _resolved(args), _resolved(kwargs)
            return InlineFuture(function(*args, **kwargs))
        # any error of the task is raised where its result is asked for, as on a cluster
        except Exception as error:  # noqa: BLE001
            return InlineFuture(error=error)

    def gather(self, futures: Any) -> Any:
        """Return the values of the futures, in the same nesting of lists and tuples."""
        return _resolved(futures)

    def scatter(self, data: list[Any], **_: Any) -> list[InlineFuture]:
        """Return a future of each item (``broadcast`` and ``hash`` change nothing here)."""
        return [InlineFuture(item) for item in data]

    def run(self, function: Callable[[], Any]) -> dict[str, Any]:
        """Call ``function`` on the one worker: this process."""
        return {WORKER: function()}

    def scheduler_info(self) -> dict[str, Any]:
        """Describe the one worker."""
        return {"workers": {WORKER: {}}}


def taken(client: Any, futures: list[Any]) -> list[InlineFuture]:
    """Bring a cluster's results into this process, each as its task ends, as `InlineFuture`.

    Each result moves while the other tasks still run. A task's error is kept, to be raised
    where its result is asked for, as `InlineClient.submit` keeps it; anything raised while
    waiting (Ctrl-C, a lost task) cancels the tasks not yet taken, and is raised.

    Parameters
    ----------
    client : dask.distributed.Client
        The cluster running the tasks.
    futures : list of dask.distributed.Future
        The tasks.

    Returns
    -------
    list of InlineFuture
        In the order of ``futures``.
    """
    from dask.distributed import as_completed

    done: dict[Any, InlineFuture] = {}
    try:
        for future in as_completed(futures):  # type: ignore[no-untyped-call]
            try:
                done[future.key] = InlineFuture(future.result())
            # the task's error, raised where its result is asked for, as on the cluster
            except Exception as error:  # noqa: BLE001
                done[future.key] = InlineFuture(error=error)
    except BaseException:
        client.cancel([future for future in futures if future.key not in done])
        raise
    return [done[future.key] for future in futures]


def _resolved(value: Any) -> Any:
    """Replace futures by their values in nested lists, tuples and dicts (raising their errors)."""
    if isinstance(value, InlineFuture):
        return value.result()
    if type(value) in (list, tuple):  # as Dask: these types exactly, not their subclasses
        return type(value)(_resolved(v) for v in value)
    if type(value) is dict:
        return {k: _resolved(v) for k, v in value.items()}
    return value

"""``gpusimhash dedup --scheduler ADDRESS | --workers N``: the same dedup on a Dask cluster."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import sys
from pathlib import Path
from typing import Any

from gpusimhash._choices import DRIVER_INPUT_BYTES
from gpusimhash.cli import options


def add_cluster_options(parser: argparse.ArgumentParser) -> None:
    """Add ``--scheduler`` and ``--workers`` to the dedup command.

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The ``dedup`` command's parser.
    """
    group = parser.add_argument_group(
        "beyond one machine (Dask; INPUT may then be a folder, a glob or a file, one "
        "partition per file, and --out gets kept/part-NNNNN.<fmt>, one part per partition)"
    ).add_mutually_exclusive_group()
    group.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="run on an existing dask.distributed cluster (tcp://host:8786); the workers "
        "must see INPUT and --out at the same paths",
    )
    group.add_argument(
        "--workers",
        type=lambda text: options.integer(text, "workers", 1),
        metavar="N",
        help="run on a local cluster of N worker processes, started and stopped here (an "
        f"input of at most {DRIVER_INPUT_BYTES >> 20} MiB is deduplicated by this process, "
        "starting none, and so is any input with the feature join, the defaults': every "
        "worker would build its whole index on this machine's cores)",
    )


def uses_cluster(args: argparse.Namespace) -> bool:
    """Whether the command runs on a Dask cluster."""
    return args.scheduler is not None or args.workers is not None


def run_distributed(
    args: argparse.Namespace, settings: Any, dedup_options: Any, out: Path
) -> dict[str, Any]:
    """Run the distributed dedup into ``out``; return its summary.

    Raises
    ------
    UsageError
        An option the distributed dedup does not support (``--recall``, ``--against``,
        ``--pairs``, ``--weighting tfidf``).
    UserError
        No input, or a scheduler that cannot be reached.
    """
    from gpusimhash.distributed import dedup
    from gpusimhash.distributed._pipeline import whole_index

    if args.input is None:
        raise options.UsageError("--scheduler and --workers need an INPUT (files, folder, glob)")
    unsupported = (
        ("--recall", args.recall),
        ("--against", args.against),
        ("--pairs", args.pairs or None),
        ("--weighting tfidf", args.weighting if args.weighting == "tfidf" else None),
    )
    for flag, value in unsupported:
        if value is not None:
            raise options.UsageError(f"{flag} is not supported with --scheduler or --workers")
    fields = dataclasses.asdict(dedup_options)
    if dedup_options.report and not dedup_options.verify:
        fields["report"] = False
        print(
            "gpusimhash: note: no report.md with --no-verify on a cluster (its sample needs "
            "every candidate pair); --no-report silences this",
            file=sys.stderr,
        )
    # work the driver does itself starts no local cluster
    needs_cluster = _needs_cluster(args, whole_index(dedup_options, settings.bits))
    cluster = _client(args) if needs_cluster else contextlib.nullcontext(None)
    with cluster as client:  # the outputs replace an earlier run's as a set
        result = dedup(
            args.input,
            out,
            client=client,
            driver_input_bytes=None if needs_cluster else sys.maxsize,
            bits=settings.bits,
            seed=settings.seed,
            featurizer=settings.featurizer,
            **fields,
        )
    return result.summary


def _needs_cluster(args: argparse.Namespace, whole_index: bool) -> bool:
    """Whether the run needs its cluster: a scheduler named, or work the driver would not take.

    The driver takes an input of few bytes, and, where every worker would build the whole
    feature index (``whole_index``), the work of local workers that have no more threads in
    all than it has (`gpusimhash.distributed._pipeline.outnumbers`). An input that cannot be
    listed needs the cluster too: the distributed dedup names the problem.
    """
    from gpusimhash.distributed._pipeline import outnumbers, runs_on_driver
    from gpusimhash.io.inputs import STDIN, input_files

    if args.scheduler is not None:
        return True
    if whole_index and outnumbers(args.workers * _worker_threads(args), whole_index=True):
        return False
    try:
        paths = input_files(args.input)
        return Path(STDIN) in paths or not runs_on_driver(paths)
    except (OSError, ValueError):
        return True


def _worker_threads(args: argparse.Namespace) -> int:
    """Return each local worker's threads: the cores shared out between ``--workers``."""
    return max(1, (os.cpu_count() or 1) // args.workers)


def _client(args: argparse.Namespace) -> Any:
    """Connect to the scheduler, or start a local cluster that closes with the client."""
    from dask.distributed import Client

    from gpusimhash.distributed import local_cluster

    if args.scheduler is not None:
        try:
            return Client(args.scheduler, timeout="30s")  # type: ignore[no-untyped-call]
        except OSError as error:
            raise options.UserError(
                f"cannot reach the Dask scheduler {args.scheduler}: {error}"
            ) from None
    # the cores shared out: each worker's compiled loops and FAISS get cores / workers threads
    cluster = local_cluster(args.workers, _worker_threads(args), dashboard_address=":0")
    return _Closing(Client(cluster), cluster)  # type: ignore[no-untyped-call]


class _Closing:
    """A client whose local cluster closes with it."""

    def __init__(self, client: Any, cluster: Any) -> None:
        self.client, self.cluster = client, cluster

    def __enter__(self) -> Any:
        return self.client

    def __exit__(self, *exc: object) -> None:
        self.client.close()
        self.cluster.close()


def print_summary(args: argparse.Namespace, summary: dict[str, Any], out: Path) -> None:
    """Print the run's results and files as the single-machine command does."""
    tables = {f"gpusimhash dedup: {' '.join(args.input)} on Dask": summary["results"]}
    if summary.get("ground_truth"):
        tables["against the ground truth"] = summary["ground_truth"]
    tables["beyond one machine"] = {
        k: v for k, v in summary["distributed"].items() if not isinstance(v, list)
    }
    tables[f"written to {out}/"] = summary["files"]
    options.emit(args, summary, tables)
    options.warn_skipped(summary)
    if summary["results"]["removed_below_threshold"] and args.cluster == "components":
        print(
            "gpusimhash: warning: removed documents below the threshold against their kept "
            "one: components chain",
            file=sys.stderr,
        )

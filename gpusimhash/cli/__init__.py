"""The ``gpusimhash`` command line: dedup, index and compare.

Exit codes: 0 success; 1 a problem with the input, an output folder or the machine (the message
says which); 2 a bad command line (unknown option, value out of range, options that do not go
together, nothing to do); 130 interrupted (Ctrl-C at any moment, start-up included, ends with the
one line ``gpusimhash: interrupted``); 141 the reader of stdout went away (``| head``), silently,
as for any program a broken pipe stops. Errors are one line on stderr, never a traceback (set
``GPUSIMHASH_TRACEBACK=1`` to see one); a bad command line names the command whose ``--help``
shows its usage.
Progress bars go to stderr; ``--quiet`` turns them and the tables off, ``--json`` prints one JSON
object on stdout instead of tables.

Each command lives in its own module (`dedup`, `compare`, `index`), all built on the leaf
module `options`; heavy modules are imported only when a command runs.
"""

from __future__ import annotations

import argparse
import errno
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from gpusimhash import __version__, _interrupts
from gpusimhash._memory import return_freed_memory
from gpusimhash.cli import options
from gpusimhash.cli.compare import add_compare_command
from gpusimhash.cli.dedup import add_dedup_command
from gpusimhash.cli.index import add_index_commands
from gpusimhash.cli.options import UsageError, UserError

EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what a shell reports for a program a closed pipe stops
USER_ERRORS = (UserError, ValueError, TypeError, ImportError, RuntimeError, OSError, MemoryError)


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line, exit code 2 (its subparsers too)."""

    def error(self, message: str) -> NoReturn:
        """Print ``<prog>: error: <message>`` and where the usage is; exit 2."""
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see: {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    """Build the argument parser.

    Returns
    -------
    argparse.ArgumentParser
        The ``gpusimhash`` command and its subcommands.
    """
    parser = _Parser(
        prog="gpusimhash",
        description="Weighted SimHash fingerprints: near-duplicate removal and Hamming search.",
    )
    parser.add_argument("--version", action="version", version=f"gpusimhash {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add_dedup_command(commands)
    add_compare_command(commands)
    add_index_commands(commands)
    return parser


def _message(error: BaseException) -> str:
    """Turn an exception from a user mistake into one readable line."""
    if isinstance(error, FileNotFoundError):
        return f"cannot read {error.filename}: no such file" if error.filename else str(error)
    if isinstance(error, PermissionError):
        return f"permission denied: {error.filename}"
    if isinstance(error, IsADirectoryError):
        return f"{error.filename} is a folder, not a file"
    if isinstance(error, OSError) and error.strerror:
        where = f"{error.filename}: " if error.filename else ""
        return f"{where}{error.strerror}"
    from gpusimhash._memory import MemoryRefusal

    if isinstance(error, MemoryError) and not isinstance(error, MemoryRefusal):
        return (
            "out of memory: a threshold that pairs up many documents needs memory for every "
            "pair (try a smaller --max-distance or a higher --min-cosine); --batch-size bounds "
            "the reading and fingerprinting"
        )
    text = str(error).strip().splitlines()
    return text[0] if text else type(error).__name__


def interrupted() -> int:
    """Say that the command was interrupted; return the exit code for it.

    Returns
    -------
    int
        130.
    """
    print("gpusimhash: interrupted", file=sys.stderr)
    return EXIT_INTERRUPTED


def _caused_by_interrupt(error: BaseException) -> bool:
    """Whether a KeyboardInterrupt is in an exception's chain.

    A Ctrl-C that lands inside a compiled call (Numba's, Cython's) surfaces as ``SystemError: ... returned
    a result with an exception set`` whose context is the KeyboardInterrupt.
    """
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        if isinstance(current, KeyboardInterrupt):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


def _stdout_gone() -> int:
    """End quietly after the reader of stdout closed it; return the exit code for it.

    Standard output is pointed at the null device, so that the interpreter's final flush of
    what is still buffered cannot fail again with a message.
    """
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, sys.stdout.fileno())
    except (OSError, ValueError):  # a replaced sys.stdout without a descriptor
        pass
    finally:
        os.close(null)
    return EXIT_BROKEN_PIPE


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``gpusimhash`` command.

    Parameters
    ----------
    argv : sequence of str, optional
        Arguments (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        The exit code.
    """
    args = argparse.Namespace()
    try:
        args = build_parser().parse_args(argv)
        options.configure_logging(getattr(args, "verbose", 0))
        options.use_threads(getattr(args, "threads", None))
        return_freed_memory()  # the command's peak memory is what it holds, not what it freed
        code = int(args.handler(args))
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's last flush
        return code
    except KeyboardInterrupt:
        return interrupted()
    except Exception as error:
        if _caused_by_interrupt(error) or _interrupts.seen():
            return interrupted()
        if isinstance(error, BrokenPipeError) or (
            isinstance(error, OSError) and error.errno == errno.EPIPE
        ):
            return _stdout_gone()
        if not isinstance(error, USER_ERRORS) or os.environ.get("GPUSIMHASH_TRACEBACK"):
            raise
        if isinstance(error, UsageError):
            words = (
                "gpusimhash",
                getattr(args, "command", None),
                getattr(args, "index_command", None),
            )
            command = " ".join(word for word in words if word)
            print(f"{command}: error: {error} (see: {command} --help)", file=sys.stderr)
            return EXIT_USAGE
        print(f"gpusimhash: error: {_message(error)}", file=sys.stderr)
        return EXIT_ERROR

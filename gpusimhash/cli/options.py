"""What every command shares: argument types, option groups, errors, output helpers.

A leaf module: the command modules (`dedup`, `compare`, `index`) import it, and it imports none of
them. Choice lists come from the library (`gpusimhash._choices`), never retyped here.
"""

from __future__ import annotations

import argparse
import functools
import json
import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpusimhash._choices import ANALYZERS, DEVICES, FORMATS, MAX_BITS, MIN_BITS, WEIGHTINGS

if TYPE_CHECKING:
    from gpusimhash.text import TextFeaturizer

DEFAULT_BITS = 128
_LOGGER = logging.getLogger(__name__)


class UserError(Exception):
    """A problem the person running the command can fix; printed as one line, exit 1."""


class UsageError(UserError):
    """A bad command line that argparse cannot see (options that do not go together); exit 2."""


# ---------------------------------------------------------------- argument types


def integer(text: str, name: str, low: int, high: int | None = None) -> int:
    """Parse an integer in ``[low, high]`` for argparse."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{name} must be an integer, got {text!r}") from None
    if value < low or (high is not None and value > high):
        bound = f"in [{low}, {high}]" if high is not None else f">= {low}"
        raise argparse.ArgumentTypeError(f"{name} must be {bound}, got {value}")
    return value


def bits(text: str) -> int:
    """Parse a fingerprint length (a multiple of 8) for argparse."""
    value = integer(text, "bits", MIN_BITS, MAX_BITS)
    if value % 8:
        raise argparse.ArgumentTypeError(
            f"bits must be a multiple of 8 in [{MIN_BITS}, {MAX_BITS}], got {value}"
        )
    return value


def number(text: str, name: str, low: float, high: float, *, open_interval: bool) -> float:
    """Parse a number in ``[low, high]`` (or ``(low, high)``) for argparse."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{name} must be a number, got {text!r}") from None
    inside = low < value < high if open_interval else low <= value <= high
    if not inside:
        interval = f"({low:g}, {high:g})" if open_interval else f"[{low:g}, {high:g}]"
        raise argparse.ArgumentTypeError(f"{name} must be in {interval}, got {value}")
    return value


cosine = functools.partial(number, name="min-cosine", low=-1.0, high=1.0, open_interval=False)
recall = functools.partial(number, name="recall", low=0.0, high=1.0, open_interval=True)
seed = functools.partial(integer, name="seed", low=0, high=2**32 - 1)
ngram = functools.partial(integer, name="ngram", low=1)
batch_size = functools.partial(integer, name="batch-size", low=1)
threads = functools.partial(integer, name="threads", low=1)
positive_k = functools.partial(integer, name="k", low=1)
radius = functools.partial(integer, name="max-distance", low=0)


class Given(argparse.Action):
    """Store an option's value and note that the command line gave it (see `given`)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        """Store ``values`` and add the option's destination to ``namespace.given``."""
        setattr(namespace, self.dest, values)
        namespace.given = {*getattr(namespace, "given", ()), self.dest}


def given(args: argparse.Namespace, dest: str) -> bool:
    """Whether the command line gave the option stored in ``dest`` (one with `Given`)."""
    return dest in getattr(args, "given", ())


class HelpFormatter(argparse.HelpFormatter):
    """Show an option's default in its help, where it has a real one."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        real = action.default not in (None, argparse.SUPPRESS) and action.default is not False
        if real and "default" not in text:
            text += " (default: %(default)s)"
        return text


def common(parser: argparse.ArgumentParser) -> None:
    """Add ``--quiet``, ``--json``, ``--verbose`` and ``--threads``."""
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bars or tables")
    parser.add_argument(
        "--json", action="store_true", help="print one JSON object on stdout instead of tables"
    )
    parser.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=0,
        help="log what each step does and how long it takes on stderr (-vv: more)",
    )
    parser.add_argument(
        "--threads",
        type=threads,
        help="CPU threads of the compiled loops and of FAISS (default: every core)",
    )


def use_threads(n: int | None) -> None:
    """Cap the threads of the compiled loops, of Numba's join and of FAISS (OpenMP) at ``n``.

    The compiled loops read ``NUMBA_NUM_THREADS`` at every call; Numba and FAISS read their
    variables when the command imports them (the command line imports them only when a command
    runs), and where they are loaded already their runtime settings are changed too.
    """
    if n is None:
        return
    os.environ["NUMBA_NUM_THREADS"] = os.environ["OMP_NUM_THREADS"] = str(n)
    if "numba" in sys.modules:
        import numba

        numba.set_num_threads(min(n, numba.config.NUMBA_NUM_THREADS))  # type: ignore[attr-defined]
    if "faiss" in sys.modules:
        import faiss

        faiss.omp_set_num_threads(n)
    _LOGGER.info("threads: %d", n)


def configure_logging(verbosity: int) -> None:
    """Send the ``gpusimhash`` loggers to stderr: INFO for ``-v``, DEBUG for ``-vv``."""
    logger = logging.getLogger("gpusimhash")
    for handler in [h for h in logger.handlers if getattr(h, "gpusimhash_cli", False)]:
        logger.removeHandler(handler)
    if verbosity <= 0:
        logger.setLevel(logging.NOTSET)
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("gpusimhash: %(message)s"))
    handler.gpusimhash_cli = True  # type: ignore[attr-defined]
    logger.addHandler(handler)
    logger.setLevel(logging.INFO if verbosity == 1 else logging.DEBUG)


def input_options(parser: argparse.ArgumentParser) -> None:
    """Add the options that say how to read an input file."""
    group = parser.add_argument_group("input")
    group.add_argument("--format", choices=FORMATS, help="input format (default: from the name)")
    group.add_argument(
        "--text-field",
        default="text",
        action=Given,
        help="field or column with the text (meta.text: nested; title,body: several, joined)",
    )
    group.add_argument("--id-field", help="field or column with document ids (default: row)")
    group.add_argument(
        "--batch-size", type=batch_size, default=10_000, help="documents per batch (memory)"
    )


def device_option(parser: Any) -> None:
    """Add ``--device`` to a parser or argument group."""
    parser.add_argument(
        "--device", choices=DEVICES, default="auto", help="where to fingerprint (dedup: and join)"
    )


def hashing_options(
    parser: argparse.ArgumentParser, *, weightings: tuple[str, ...] = WEIGHTINGS
) -> None:
    """Add the options that say how to fingerprint text (``weightings``: those offered)."""
    group = parser.add_argument_group("fingerprints")
    group.add_argument("--bits", type=bits, default=DEFAULT_BITS, help="fingerprint length")
    group.add_argument("--seed", type=seed, default=0, help="hash seed in [0, 2**32)")
    device_option(group)
    group.add_argument(
        "--analyzer", choices=ANALYZERS, default="word", help="word or character n-grams"
    )
    group.add_argument("--ngram", type=ngram, default=1, help="words or characters per feature")
    fitted = " (tfidf is fitted on the input first)" if "tfidf" in weightings else ""
    group.add_argument(
        "--weighting", choices=weightings, default="count", help=f"feature weights{fitted}"
    )
    group.add_argument("--no-lowercase", action="store_true", help="keep case")


def threshold_options(parser: argparse.ArgumentParser) -> None:
    """Add ``--max-distance`` and ``--min-cosine`` (mutually exclusive, no default)."""
    group = parser.add_argument_group("threshold (one of)").add_mutually_exclusive_group()
    group.add_argument("--max-distance", type=radius, help="Hamming radius in bits")
    group.add_argument(
        "--min-cosine",
        type=cosine,
        help="minimum estimated cosine cos(pi * distance / bits)",
    )


def progress_factory(quiet: bool) -> Callable[..., Any] | None:
    """Return a tqdm factory writing to stderr, or None when quiet."""
    if quiet:
        return None
    from tqdm import tqdm

    return functools.partial(tqdm, file=sys.stderr, mininterval=0.5, dynamic_ncols=True)


def featurizer_from(args: argparse.Namespace) -> TextFeaturizer:
    """Build the TextFeaturizer the options describe."""
    from gpusimhash import TextFeaturizer

    return TextFeaturizer(
        analyzer=args.analyzer,
        ngram=args.ngram,
        weighting=args.weighting,
        lowercase=not args.no_lowercase,
    )


def check_fields(args: argparse.Namespace, paths: list[Any]) -> None:
    """Raise UsageError if ``--text-field`` or ``--id-field`` was given for plain text.

    A plain-text file (``--format text``, or a name with no other format's ending; ``-``, read
    as plain text unless ``--format`` says) holds one document a line and no fields.
    """
    fields = (
        ("--text-field", given(args, "text_field")),
        ("--id-field", args.id_field is not None),
    )
    named = [flag for flag, is_given in fields if is_given]
    if not named:
        return
    from gpusimhash.io.inputs import STDIN, STDIN_NAME
    from gpusimhash.io.readers import detect_format

    for path in paths:
        stdin = str(path) == STDIN
        if (args.format or ("text" if stdin else detect_format(path))) == "text":
            where = STDIN_NAME if stdin else str(path)
            raise UsageError(
                f"{' and '.join(named)}: {where} is plain text, one document a line with no "
                "fields (give --format if it is not)"
            )


def check_readable(path: str) -> Path:
    """Return the input path, or raise UserError if it is not a readable file."""
    target = Path(path)
    if not target.exists():
        raise UserError(f"cannot read {path}: no such file")
    if target.is_dir():
        raise UserError(f"cannot read {path}: it is a folder, not a file")
    if not os.access(target, os.R_OK):
        raise UserError(f"cannot read {path}: permission denied")
    return target


def prepare_folder(path: str) -> Path:
    """Create an output folder (and parents; a dangling link's target), or raise UserError."""
    target = Path(path)
    if target.is_symlink() and not target.exists():  # a dangling link: make its target
        target = Path(os.path.realpath(target))
    if target.exists() and not target.is_dir():
        raise UserError(f"cannot write to {path}: it is a file, not a folder")
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise UserError(f"cannot create folder {path}: {error.strerror}") from None
    if not os.access(target, os.W_OK):
        raise UserError(f"cannot write to {path}: permission denied")
    return Path(path)


def print_table(title: str, rows: dict[str, Any]) -> None:
    """Print a two-column table on stdout."""
    width = max(map(len, rows), default=0)
    print(title)
    for key, value in rows.items():
        if isinstance(value, float):
            value = f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}"
        elif isinstance(value, int) and not isinstance(value, bool):
            value = f"{value:,}"
        print(f"  {key.replace('_', ' '):<{width}}  {value}")


def warn_skipped(summary: dict[str, Any]) -> None:
    """Warn on standard error of the invalid records a dedup skipped (``--skip-invalid``)."""
    skipped = summary["results"].get("skipped_invalid", 0)
    if skipped:
        print(
            f"gpusimhash: warning: skipped {skipped:,} invalid records, the first: "
            f"{summary['skipped'][0]} (all counted, the first {len(summary['skipped'])} "
            "listed, in summary.json)",
            file=sys.stderr,
        )


def emit(
    args: argparse.Namespace, payload: dict[str, Any], tables: dict[str, dict[str, Any]]
) -> None:
    """Print the result: JSON, tables, or nothing when quiet."""
    if args.json:
        print(json.dumps(payload, ensure_ascii=False, default=str))
    elif not args.quiet:
        for n, (title, rows) in enumerate(tables.items()):
            if n:
                print()
            print_table(title, rows)

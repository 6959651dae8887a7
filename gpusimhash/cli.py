"""The ``gpusimhash`` command line: dedup, index and compare.

Exit codes: 0 success; 1 a problem with the input, an output folder or the machine (the message
says which); 2 a bad command line (unknown option, value out of range); 130 interrupted.
Errors are one line on stderr, never a traceback (set ``GPUSIMHASH_TRACEBACK=1`` to see one).
Progress bars go to stderr; ``--quiet`` turns them and the tables off, ``--json`` prints one JSON
object on stdout instead of tables.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gpusimhash._validate import DEVICES
from gpusimhash.readers import FORMATS, InputError
from gpusimhash.text import ANALYZERS, WEIGHTINGS

DEFAULT_BITS = 128
DEFAULT_MIN_COSINE = 0.9
DEFAULT_REPORT_DIR = "gpusimhash-report"
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


class UserError(Exception):
    """A problem the person running the command can fix; printed as one line."""


# ---------------------------------------------------------------- argument types


def _integer(text: str, name: str, low: int, high: int | None = None) -> int:
    """Parse an integer in ``[low, high]`` for argparse."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{name} must be an integer, got {text!r}") from None
    if value < low or (high is not None and value > high):
        bound = f"in [{low}, {high}]" if high is not None else f">= {low}"
        raise argparse.ArgumentTypeError(f"{name} must be {bound}, got {value}")
    return value


def _bits(text: str) -> int:
    value = _integer(text, "bits", 8, 4096)
    if value % 8:
        raise argparse.ArgumentTypeError(f"bits must be a multiple of 8 in [8, 4096], got {value}")
    return value


def _number(text: str, name: str, low: float, high: float, *, open_interval: bool) -> float:
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


_cosine = functools.partial(_number, name="min-cosine", low=-1.0, high=1.0, open_interval=False)
_recall = functools.partial(_number, name="recall", low=0.0, high=1.0, open_interval=True)
_seed = functools.partial(_integer, name="seed", low=0, high=2**32 - 1)
_ngram = functools.partial(_integer, name="ngram", low=1)
_batch_size = functools.partial(_integer, name="batch-size", low=1)
positive_k = functools.partial(_integer, name="k", low=1)
_radius = functools.partial(_integer, name="max-distance", low=0)


# ---------------------------------------------------------------- parser


class HelpFormatter(argparse.HelpFormatter):
    """Show an option's default in its help, where it has a real one."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        real = action.default not in (None, argparse.SUPPRESS) and action.default is not False
        if real and "default" not in text:
            text += " (default: %(default)s)"
        return text


def common(parser: argparse.ArgumentParser) -> None:
    """Add ``--quiet`` and ``--json``."""
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bars or tables")
    parser.add_argument(
        "--json", action="store_true", help="print one JSON object on stdout instead of tables"
    )


def input_options(parser: argparse.ArgumentParser) -> None:
    """Add the options that say how to read an input file."""
    group = parser.add_argument_group("input")
    group.add_argument("--format", choices=FORMATS, help="input format (default: from the name)")
    group.add_argument("--text-field", default="text", help="field or column with the text")
    group.add_argument("--id-field", help="field or column with document ids (default: row)")
    group.add_argument(
        "--batch-size", type=_batch_size, default=10_000, help="documents per batch (memory)"
    )


def device_option(parser: Any) -> None:
    """Add ``--device`` to a parser or argument group."""
    parser.add_argument("--device", choices=DEVICES, default="auto", help="where to fingerprint")


def hashing_options(parser: argparse.ArgumentParser) -> None:
    """Add the options that say how to fingerprint text."""
    group = parser.add_argument_group("fingerprints")
    group.add_argument("--bits", type=_bits, default=DEFAULT_BITS, help="fingerprint length")
    group.add_argument("--seed", type=_seed, default=0, help="hash seed in [0, 2**32)")
    device_option(group)
    group.add_argument(
        "--analyzer", choices=ANALYZERS, default="word", help="word or character n-grams"
    )
    group.add_argument("--ngram", type=_ngram, default=1, help="words or characters per feature")
    group.add_argument(
        "--weighting",
        choices=WEIGHTINGS,
        default="count",
        help="feature weights (tfidf is fitted on the input first)",
    )
    group.add_argument("--no-lowercase", action="store_true", help="keep case")


def threshold_options(parser: argparse.ArgumentParser) -> None:
    """Add ``--max-distance`` and ``--min-cosine`` (mutually exclusive)."""
    group = parser.add_argument_group("threshold (one of)").add_mutually_exclusive_group()
    group.add_argument("--max-distance", type=_radius, help="Hamming radius in bits")
    group.add_argument(
        "--min-cosine",
        type=_cosine,
        help=f"minimum estimated cosine (default: {DEFAULT_MIN_COSINE} unless --max-distance)",
    )


def build_parser() -> argparse.ArgumentParser:
    """Build the argument parser.

    Returns
    -------
    argparse.ArgumentParser
        The ``gpusimhash`` command and its subcommands.
    """
    parser = argparse.ArgumentParser(
        prog="gpusimhash",
        description="Weighted SimHash fingerprints: near-duplicate removal and Hamming search.",
    )
    from gpusimhash import __version__

    parser.add_argument("--version", action="version", version=f"gpusimhash {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    dedup = commands.add_parser(
        "dedup",
        help="remove near-duplicate documents from a file",
        description="Remove near-duplicates; without INPUT, run on the bundled sample corpus.",
        formatter_class=HelpFormatter,
    )
    dedup.add_argument("input", nargs="?", help="JSONL, Parquet, CSV/TSV or text file")
    input_options(dedup)
    hashing_options(dedup)
    threshold_options(dedup)
    dedup.add_argument_group("join").add_argument(
        "--recall",
        type=_recall,
        help="approximate join: find each pair within the threshold with at least this "
        "probability (faster for large radii over large corpora; default: exact)",
    )
    out = dedup.add_argument_group("output")
    out.add_argument("--out", default=DEFAULT_REPORT_DIR, help="output folder")
    out.add_argument(
        "--output-format", choices=("jsonl", "parquet"), default="jsonl", help="output files"
    )
    out.add_argument(
        "--keep",
        choices=("first", "longest", "score"),
        default="first",
        help="which document of a cluster to keep",
    )
    out.add_argument("--score-field", help="numeric field for --keep score (highest wins)")
    out.add_argument("--truth-field", help="field with true group labels: adds precision/recall")
    out.add_argument("--no-report", action="store_true", help="skip report.md and the plots")
    common(dedup)
    dedup.set_defaults(handler=run_dedup)

    compare = commands.add_parser(
        "compare",
        help="fingerprint two texts and compare them",
        description="Fingerprint two texts: Hamming distance, estimated and true cosine.",
        formatter_class=HelpFormatter,
    )
    compare.add_argument("text_a")
    compare.add_argument("text_b")
    hashing_options(compare)
    common(compare)
    compare.set_defaults(handler=run_compare)

    from gpusimhash.cli_index import add_index_commands

    add_index_commands(commands, sys.modules[__name__])
    return parser


# ---------------------------------------------------------------- helpers


def progress_factory(quiet: bool):
    """Return a tqdm factory writing to stderr, or None when quiet."""
    if quiet:
        return None
    from tqdm import tqdm

    return functools.partial(tqdm, file=sys.stderr, mininterval=0.5, dynamic_ncols=True)


def featurizer_from(args: argparse.Namespace):
    """Build the TextFeaturizer the options describe."""
    from gpusimhash import TextFeaturizer

    return TextFeaturizer(
        analyzer=args.analyzer,
        ngram=args.ngram,
        weighting=args.weighting,
        lowercase=not args.no_lowercase,
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
    """Create an output folder (and parents), or raise UserError."""
    target = Path(path)
    if target.exists() and not target.is_dir():
        raise UserError(f"cannot write to {path}: it is a file, not a folder")
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise UserError(f"cannot create folder {path}: {error.strerror}") from None
    if not os.access(target, os.W_OK):
        raise UserError(f"cannot write to {path}: permission denied")
    return target


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


def emit(args: argparse.Namespace, payload: dict[str, Any], tables: dict[str, dict]) -> None:
    """Print the result: JSON, tables, or nothing when quiet."""
    if args.json:
        print(json.dumps(payload, ensure_ascii=False, default=str))
    elif not args.quiet:
        for n, (title, rows) in enumerate(tables.items()):
            if n:
                print()
            print_table(title, rows)


# ---------------------------------------------------------------- dedup


def run_dedup(args: argparse.Namespace) -> int:
    """Run ``gpusimhash dedup``."""
    from gpusimhash.dedup import dedup_file
    from gpusimhash.report import write_report
    from gpusimhash.writers import write_json

    if args.input is None:
        from gpusimhash import sample

        path = sample.sample_corpus_path()
        args.id_field = args.id_field or sample.ID_FIELD
        args.truth_field = args.truth_field or sample.TRUTH_FIELD
        args.format = args.format or "jsonl"
    else:
        path = check_readable(args.input)
    if args.keep == "score" and not args.score_field:
        raise UserError("--keep score needs --score-field FIELD")
    if args.max_distance is None and args.min_cosine is None:
        args.min_cosine = DEFAULT_MIN_COSINE
    out = prepare_folder(args.out)
    result = dedup_file(
        path,
        out,
        format=args.format,
        text_field=args.text_field,
        id_field=args.id_field,
        truth_field=args.truth_field,
        score_field=args.score_field,
        bits=args.bits,
        seed=args.seed,
        device=args.device,
        featurizer=featurizer_from(args),
        max_distance=args.max_distance,
        min_cosine=args.min_cosine,
        recall=args.recall,
        keep=args.keep,
        output_format=args.output_format,
        batch_size=args.batch_size,
        progress=progress_factory(args.quiet),
    )
    summary = result.summary
    summary["files"]["summary.json"] = "this summary, as JSON"
    if not args.no_report:
        summary["files"]["report.md"] = "the report, with plots (PNG)"
        write_report(out, summary, **result.report_data)
    write_json(out / "summary.json", summary)
    label = "the bundled sample corpus" if args.input is None else str(path)
    tables = {f"gpusimhash dedup: {label}": summary["results"]}
    if summary.get("ground_truth"):
        tables["against the ground truth"] = summary["ground_truth"]
    tables[f"written to {out}/"] = summary["files"]
    emit(args, summary, tables)
    return 0


# ---------------------------------------------------------------- compare


def big_int_hex(code) -> str:
    """Write a packed code as the seed's BigInt in hex (bit i is the value's bit i).

    Parameters
    ----------
    code : ndarray, shape (bits // 8,), dtype uint8
        One code, FAISS layout.

    Returns
    -------
    str
        ``0x`` and ``bits / 4`` hex digits.

    Examples
    --------
    >>> import numpy as np
    >>> big_int_hex(np.array([1, 0], np.uint8)), big_int_hex(np.array([0, 0x80], np.uint8))
    ('0x0001', '0x8000')
    """
    return f"0x{int.from_bytes(code.tobytes(), 'little'):0{code.size * 2}x}"


def run_compare(args: argparse.Namespace) -> int:
    """Run ``gpusimhash compare``."""
    from gpusimhash import estimate_cosine, fingerprint, hamming
    from gpusimhash.report import true_cosines

    if args.weighting == "tfidf":
        raise UserError("--weighting tfidf needs a corpus to fit; compare two texts with another")
    featurizer = featurizer_from(args)
    texts = [args.text_a, args.text_b]
    codes = fingerprint(
        texts, bits=args.bits, seed=args.seed, device=args.device, featurizer=featurizer
    )
    distance = int(hamming(codes[:1], codes[1:])[0])
    estimated = float(estimate_cosine(codes[:1], codes[1:])[0])
    true = float(true_cosines(featurizer, texts[:1], texts[1:])[0])
    payload = {
        "bits": args.bits,
        "seed": args.seed,
        "fingerprint_a": big_int_hex(codes[0]),
        "fingerprint_b": big_int_hex(codes[1]),
        "hamming_distance": distance,
        "estimated_cosine": estimated,
        "true_cosine": None if math.isnan(true) else true,
    }
    rows = dict(payload)
    if rows["true_cosine"] is None:
        rows["true_cosine"] = "undefined (a text without features)"
    emit(args, payload, {"gpusimhash compare": rows})
    return 0


# ---------------------------------------------------------------- entry point


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
    if isinstance(error, MemoryError):
        return "out of memory: try a smaller --batch-size or fewer bits"
    text = str(error).strip().splitlines()
    return text[0] if text else type(error).__name__


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
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.handler(args)
    except KeyboardInterrupt:
        print("gpusimhash: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except (
        UserError,
        InputError,
        ValueError,
        TypeError,
        ImportError,
        RuntimeError,
        OSError,
        MemoryError,
    ) as error:
        if os.environ.get("GPUSIMHASH_TRACEBACK"):
            raise
        print(f"gpusimhash: error: {_message(error)}", file=sys.stderr)
        return EXIT_ERROR

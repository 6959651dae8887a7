"""``gpusimhash dedup``: near-duplicate removal from a file (or the bundled sample)."""

from __future__ import annotations

import argparse
import contextlib
import functools
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from gpusimhash._choices import CANDIDATE_SOURCES, CLUSTERINGS, OUTPUT_FORMATS, POLICIES
from gpusimhash.cli import options
from gpusimhash.cli.distributed import add_cluster_options, uses_cluster

DEFAULT_REPORT_DIR = "gpusimhash-report"
# chosen by measurement (bench/bench_quality.py; docs/dedup.md): with verification, 256 bits need far
# fewer candidates than 128; an exact cosine of 0.8 reaches removal precision 1.0 at recall 0.978
# on the bundled sample. The library's own defaults (gpusimhash.verify), restated here so
# that the command line starts without importing NumPy; a test checks that they agree.
DEFAULT_BITS = 256
DEFAULT_MIN_COSINE = 0.8
DEFAULT_CANDIDATE_RECALL = 0.99

jaccard = functools.partial(
    options.number, name="min-jaccard", low=0.0, high=1.0, open_interval=False
)


def candidate_recall(text: str) -> float:
    """Parse a probability in ``(0, 1]`` for argparse."""
    value = options.number(text, "candidate-recall", 0.0, 1.0, open_interval=False)
    if value == 0.0:
        raise argparse.ArgumentTypeError("candidate-recall must be in (0, 1], got 0.0")
    return value


def add_dedup_command(commands: Any) -> None:
    """Register ``dedup`` on the CLI's subparsers.

    Parameters
    ----------
    commands : argparse subparsers action
        The ``gpusimhash`` command's subparsers.
    """
    dedup = commands.add_parser(
        "dedup",
        help="remove near-duplicate documents from a file",
        description="Remove near-duplicates; without INPUT, run on the bundled sample corpus.",
        formatter_class=options.HelpFormatter,
    )
    dedup.add_argument(
        "input",
        nargs="*",
        help="JSONL, Parquet, CSV/TSV or text files, folders (their files) or glob patterns, "
        "read as one corpus; - reads standard input (plain text unless --format says)",
    )
    options.input_options(dedup)
    options.hashing_options(dedup)
    dedup.set_defaults(bits=DEFAULT_BITS)
    threshold = dedup.add_argument_group("threshold")
    similarity = threshold.add_mutually_exclusive_group()
    similarity.add_argument(
        "--min-cosine",
        type=options.cosine,
        help=f"minimum exact cosine of the weighted features (default: {DEFAULT_MIN_COSINE}; "
        "with --no-verify, the minimum estimated cosine)",
    )
    similarity.add_argument(
        "--min-jaccard",
        type=jaccard,
        help="minimum Jaccard similarity of the feature sets, instead",
    )
    threshold.add_argument(
        "--max-distance",
        type=options.radius,
        help="Hamming radius of the candidates (default: from --candidate-recall; with "
        "--no-verify, the near-duplicate radius, instead of a similarity)",
    )
    verification = dedup.add_argument_group("verification")
    verification.add_argument(
        "--verify",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="check every candidate pair on its features: only pairs at or above the "
        "threshold are near-duplicates",
    )
    verification.add_argument(
        "--candidates",
        choices=CANDIDATE_SOURCES,
        default="auto",
        help="where candidate pairs come from: features (an exact join on the documents' "
        "features: no pair at the threshold is missed), codes (pairs of codes within the "
        "candidate radius), or auto: features when verifying on the CPU without "
        "--max-distance, --candidate-recall or --recall, else codes",
    )
    verification.add_argument(
        "--candidate-recall",
        type=candidate_recall,
        default=DEFAULT_CANDIDATE_RECALL,
        help="candidates from the codes at the radius where a pair exactly at the threshold "
        "becomes a candidate with this probability (binomial SimHash model; optimistic for "
        "very short documents; default 0.99)",
    )
    verification.add_argument(
        "--cluster",
        choices=CLUSTERINGS,
        default="star",
        help="star: every removed document is a near-duplicate of the one kept for it; "
        "components: chains of pairs (warns when members are far from the kept one)",
    )
    verification.add_argument(
        "--empty-as-duplicates",
        action="store_true",
        help="featureless documents (no word) are duplicates of each other",
    )
    verification.add_argument(
        "--force",
        action="store_true",
        help="join even when the estimated number of candidate pairs is over the budget",
    )
    dedup.add_argument_group("join").add_argument(
        "--recall",
        type=options.recall,
        help="approximate join: find each pair within the threshold with at least this "
        "probability (faster for large radii over large corpora; default: exact)",
    )
    out = dedup.add_argument_group("output")
    out.add_argument(
        "--out",
        default=DEFAULT_REPORT_DIR,
        help="output folder; - writes the kept (or annotated) records to standard output and "
        "the summary table to standard error, nothing else",
    )
    out.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an earlier run's outputs in --out, those its manifest "
        ".gpusimhash-outputs.json lists (without it, --out must be empty)",
    )
    out.add_argument(
        "--output-format", choices=OUTPUT_FORMATS, default="jsonl", help="output files"
    )
    out.add_argument(
        "--keep",
        choices=POLICIES,
        default="first",
        help="which document of a cluster to keep",
    )
    out.add_argument("--score-field", help="numeric field for --keep score (highest wins)")
    out.add_argument("--truth-field", help="field with true group labels: adds precision/recall")
    out.add_argument("--no-report", action="store_true", help="skip report.md and the plots")
    out.add_argument(
        "--pairs",
        action="store_true",
        help="also write pairs.<fmt>: every near-duplicate pair with its distance and exact "
        "similarity (verifies every candidate pair)",
    )
    inputs = next(group for group in dedup._action_groups if group.title == "input")
    for action in inputs._group_actions:
        if action.dest == "id_field":
            action.help = (
                "field or column with document ids (default: an 'id' field when the first "
                "record has one, else the row number)"
            )
    inputs.add_argument(
        "--skip-invalid",
        action="store_true",
        help="skip invalid records (bad JSON or UTF-8, a missing text field...) instead of "
        "stopping; the summary counts them and lists the first",
    )
    out.add_argument(
        "--annotate",
        action="store_true",
        help="write every record to annotated.<fmt> with cluster, duplicate_of and similarity "
        "fields instead of dropping the removed ones",
    )
    index = dedup.add_argument_group("against a saved index")
    index.add_argument(
        "--against",
        metavar="DIR",
        help="an index folder (gpusimhash index build): also remove the clusters whose kept "
        "document it holds within the threshold (by fingerprint); fingerprints use its settings",
    )
    index.add_argument(
        "--add-kept", action="store_true", help="add the documents kept to the --against index"
    )
    add_cluster_options(dedup)
    options.common(dedup)
    dedup.set_defaults(handler=run_dedup)


def run_dedup(args: argparse.Namespace) -> int:
    """Run ``gpusimhash dedup``."""
    from gpusimhash._output_names import written_by_dedup
    from gpusimhash.dedup.options import DedupOptions
    from gpusimhash.dedup.pipeline import run
    from gpusimhash.fingerprinting import FingerprintSettings
    from gpusimhash.io._output_folder import output_entries, replacing_folder
    from gpusimhash.io.inputs import STDIN, STDIN_NAME, spooled_stdin

    id_field, truth_field, input_format = args.id_field, args.truth_field, args.format
    args.input = args.input or None  # none: the bundled sample
    paths: list[Any]
    if args.input is None:
        from gpusimhash.datasets import sample

        paths = [sample.sample_corpus_path()]
        id_field = id_field or sample.ID_FIELD
        truth_field = truth_field or sample.TRUTH_FIELD
        input_format = input_format or "jsonl"
    else:  # on a cluster: files, a folder or a glob, checked by the distributed dedup
        paths = args.input if uses_cluster(args) else _input_paths(args.input)
        options.check_fields(args, _listed(args.input) if uses_cluster(args) else paths)
    if args.keep == "score" and not args.score_field:
        raise options.UsageError("--keep score needs --score-field FIELD")
    similarity = args.min_cosine is not None or args.min_jaccard is not None
    if not args.verify and args.max_distance is not None and similarity:
        raise options.UsageError(
            "with --no-verify, give one of --max-distance, --min-cosine and --min-jaccard"
        )
    if args.add_kept and args.against is None:
        raise options.UsageError("--add-kept needs --against DIR")
    if args.annotate and args.against is not None:
        raise options.UsageError("--annotate does not show matches against an index yet")
    with contextlib.ExitStack() as inputs:  # a copy of stdin, the scratch output
        to_stdout = args.out == STDIN  # the kept (or annotated) records only, nothing else
        if to_stdout and (args.json or uses_cluster(args)):
            raise options.UsageError(
                "--out - writes the kept records to standard output: not with --json, "
                "--scheduler or --workers"
            )
        out = _scratch_folder(inputs) if to_stdout else options.prepare_folder(args.out)
        if not args.overwrite and output_entries(out):
            raise options.UserError(
                f"{args.out} is not empty: give --overwrite to replace an earlier run's outputs, "
                "or choose another --out"
            )
        settings = FingerprintSettings(
            bits=args.bits, seed=args.seed, featurizer=options.featurizer_from(args)
        )
        if args.against is not None:  # fingerprint as the index does
            from gpusimhash.index import SimHashIndex

            settings = SimHashIndex.load_settings(args.against)
        dedup_options = DedupOptions(
            format=input_format,
            text_field=args.text_field,
            id_field=id_field,
            truth_field=truth_field,
            score_field=args.score_field,
            batch_size=args.batch_size,
            max_distance=args.max_distance,
            min_cosine=args.min_cosine,
            min_jaccard=args.min_jaccard,
            verify=args.verify,
            candidates=args.candidates,
            candidate_recall=args.candidate_recall,
            cluster=args.cluster,
            empty_as_duplicates=args.empty_as_duplicates,
            force=args.force,
            recall=args.recall,
            keep=args.keep,
            device=args.device,
            output_format=args.output_format,
            report=not (args.no_report or to_stdout),
            annotate=args.annotate,
            skip_invalid=args.skip_invalid,
            against=args.against,
            add_kept=args.add_kept,
            pairs=args.pairs,
        )
        if uses_cluster(args):
            from gpusimhash.cli.distributed import print_summary, run_distributed

            print_summary(args, run_distributed(args, settings, dedup_options, out), out)
            return 0
        # every output is written into a staging folder that replaces `out` whole at the end: an
        # interrupted or failed run leaves the previous outputs, never a mix of two runs
        spool = None
        if STDIN in map(str, paths):  # read twice: copied once
            spool = inputs.enter_context(spooled_stdin())
            paths = [spool if str(p) == STDIN else p for p in paths]
        shown = {} if spool is None else {spool: STDIN_NAME}
        with replacing_folder(out, owned=written_by_dedup) as stage:
            progress = options.progress_factory(args.quiet)
            result = run(paths, stage, settings, dedup_options, progress=progress, shown=shown)
        summary = result.summary
        if to_stdout:
            records = next(n for n in summary["files"] if n.startswith(("kept.", "annotated.")))
            with open(out / records, "rb") as stream:
                shutil.copyfileobj(stream, sys.stdout.buffer)
            sys.stdout.flush()
        label = "the bundled sample corpus" if args.input is None else summary["input"]
        tables = {f"gpusimhash dedup: {label}": summary["results"]}
        if summary.get("ground_truth"):
            tables["against the ground truth"] = summary["ground_truth"]
        if not to_stdout:
            tables[f"written to {out}/"] = summary["files"]
        with contextlib.redirect_stdout(sys.stderr if to_stdout else sys.stdout):
            options.emit(args, summary, tables)
        options.warn_skipped(summary)
        for warning in summary.get("warnings", []):
            print(f"gpusimhash: warning: {warning}", file=sys.stderr)
    return 0


def _scratch_folder(cleanup: contextlib.ExitStack) -> Path:
    """Return a temporary folder for the outputs of ``--out -``, deleted at ``cleanup``."""
    return Path(cleanup.enter_context(tempfile.TemporaryDirectory(prefix="gpusimhash-out-")))


def _input_paths(inputs: list[str]) -> list[Path]:
    """Expand files, folders, globs and ``-``; raise UserError for one that cannot be read."""
    from gpusimhash.io.inputs import STDIN, input_files

    if inputs.count(STDIN) > 1:
        raise options.UsageError("- (standard input) is given twice: it can be read once only")
    try:
        paths = input_files(inputs)
    except (FileNotFoundError, ValueError) as error:
        raise options.UserError(f"cannot read {error}") from None
    return [p if str(p) == STDIN else options.check_readable(str(p)) for p in paths]


def _listed(inputs: list[str]) -> list[Path]:
    """List the files the inputs name; none where they cannot be listed (named later)."""
    from gpusimhash.io.inputs import input_files

    try:
        return input_files(inputs)
    except (OSError, ValueError):
        return []

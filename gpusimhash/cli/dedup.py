"""``gpusimhash dedup``: near-duplicate removal from a file (or the bundled sample)."""

from __future__ import annotations

import argparse
from typing import Any

from gpusimhash._choices import OUTPUT_FORMATS, POLICIES
from gpusimhash.cli import options
from gpusimhash.cli.options import UserError

DEFAULT_REPORT_DIR = "gpusimhash-report"


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
    dedup.add_argument("input", nargs="?", help="JSONL, Parquet, CSV/TSV or text file")
    options.input_options(dedup)
    options.hashing_options(dedup)
    options.threshold_options(dedup)
    dedup.add_argument_group("join").add_argument(
        "--recall",
        type=options.recall,
        help="approximate join: find each pair within the threshold with at least this "
        "probability (faster for large radii over large corpora; default: exact)",
    )
    out = dedup.add_argument_group("output")
    out.add_argument("--out", default=DEFAULT_REPORT_DIR, help="output folder")
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
    options.common(dedup)
    dedup.set_defaults(handler=run_dedup)


def run_dedup(args: argparse.Namespace) -> int:
    """Run ``gpusimhash dedup``."""
    from gpusimhash.dedup.pipeline import DedupOptions, run
    from gpusimhash.fingerprinting import FingerprintSettings
    from gpusimhash.io._atomic import replacing_folder

    id_field, truth_field, input_format = args.id_field, args.truth_field, args.format
    if args.input is None:
        from gpusimhash.datasets import sample

        path = sample.sample_corpus_path()
        id_field = id_field or sample.ID_FIELD
        truth_field = truth_field or sample.TRUTH_FIELD
        input_format = input_format or "jsonl"
    else:
        path = options.check_readable(args.input)
    if args.keep == "score" and not args.score_field:
        raise UserError("--keep score needs --score-field FIELD")
    min_cosine = args.min_cosine
    if args.max_distance is None and min_cosine is None:
        min_cosine = options.DEFAULT_MIN_COSINE
    out = options.prepare_folder(args.out)
    settings = FingerprintSettings(
        bits=args.bits, seed=args.seed, featurizer=options.featurizer_from(args)
    )
    dedup_options = DedupOptions(
        format=input_format,
        text_field=args.text_field,
        id_field=id_field,
        truth_field=truth_field,
        score_field=args.score_field,
        batch_size=args.batch_size,
        max_distance=args.max_distance,
        min_cosine=min_cosine,
        recall=args.recall,
        keep=args.keep,
        device=args.device,
        output_format=args.output_format,
        report=not args.no_report,
    )
    # every output is written into a staging folder that replaces `out` whole at the end: an
    # interrupted or failed run leaves the previous outputs, never a mix of two runs
    with replacing_folder(out, owned=_earlier_output) as stage:
        progress = options.progress_factory(args.quiet)
        result = run(path, stage, settings, dedup_options, progress=progress)
    summary = result.summary
    label = "the bundled sample corpus" if args.input is None else str(path)
    tables = {f"gpusimhash dedup: {label}": summary["results"]}
    if summary.get("ground_truth"):
        tables["against the ground truth"] = summary["ground_truth"]
    tables[f"written to {out}/"] = summary["files"]
    options.emit(args, summary, tables)
    return 0


def _earlier_output(name: str) -> bool:
    """Whether a dedup run writes files of this name (its output folder is replaced whole)."""
    from gpusimhash.dedup.report import PLOTS

    stem, _, suffix = name.partition(".")
    outputs = stem in ("kept", "duplicates") and suffix in OUTPUT_FORMATS
    temporary = name.startswith(".") and name.endswith(".tmp")  # of an older version's writes
    return outputs or temporary or name in ("summary.json", "report.md", *PLOTS.values())

"""Benchmark tables for the documentation, generated from ``bench/results/*.json``.

Every figure in a table is read from one JSON file, and every table names that file, the
machine it records and the command that wrote it. ``docs/conf.py`` runs this before each build;
run it alone to see the pages::

    python docs/bench_tables.py bench/results docs/_generated

It writes ``benchmarks.md`` (every file's tables, one section per file) and, for embedding in a
guide, one ``<file stem>.md`` per file (its tables without a heading). A file's section is
labelled ``bench-<stem>`` (see `label`), for links from the guides.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

Path_ = tuple[str, ...]  # keys leading to a value inside a JSON document


@dataclass(frozen=True)
class Table:
    """One table of a results file.

    Parameters
    ----------
    rows : tuple of str
        Keys leading to the list of row objects (or to one object: a table of one row).
    columns : tuple of str, optional
        Dotted keys of the columns inside a row (``"timings_s.join"``); empty: every scalar
        key of the rows, in order of first appearance.
    caption : str, optional
        What the table shows, when a file has several.
    explode : str, optional
        A key of each row holding a list of objects: one table row per object, prefixed by the
        row's own scalar columns.
    """

    rows: Path_
    columns: tuple[str, ...] = ()
    caption: str = ""
    explode: str = ""


@dataclass(frozen=True)
class Results:
    """How a results file is shown: a title and its tables."""

    title: str
    tables: tuple[Table, ...] = field(default_factory=tuple)


# The tables of bench_peers.py's files (100,000 documents and the whole corpus)
_PEERS_TABLES = (
    Table(
        ("results",),
        (
            "tool",
            "truth",
            "seconds_min",
            "seconds_max",
            "removed",
            "removed_correctly",
            "perfect_removals",
            "removal_precision",
            "removal_recall",
            "peak_rss_mib",
            "same_kept_every_repeat",
        ),
        caption="each tool's whole process, text file to kept list, warm caches",
    ),
    Table(
        ("cold",),
        caption="gpusimhash's first run on an empty Numba cache (compile seconds inside)",
    ),
    Table(("truth",), caption="the exact truth at 0.8 (identical vectors grouped)"),
    Table(("truth_cross_check",), caption="the truth against brute force"),
)

# Files shown with chosen tables; any other file is shown with every list of objects it holds.
SHOWN = {
    "fingerprint_cpu.json": Results("Text to codes on the CPU", (Table(("results",)),)),
    "join_cpu.json": Results(
        "The exact near-duplicate join on the CPU",
        (
            Table(
                ("results",),
                (
                    "corpus",
                    "n_docs",
                    "bits",
                    "radius",
                    "n_unique",
                    "unique_pairs",
                    "plan",
                    "gpusimhash_s",
                    "components_s",
                    "faiss_flat_s",
                    "faiss_flat_over_gpusimhash",
                    "faiss_multihash_s",
                    "faiss_multihash_over_gpusimhash",
                    "find_all_s",
                    "find_all_over_gpusimhash",
                ),
            ),
        ),
    ),
    "join_plans_cpu.json": Results(
        "The feature join's two plans: the compiled index and the sparse product"
    ),
    "duplicates_output_cpu.json": Results(
        "The duplicates report and the pairs file written to JSONL: lines by orjson, against "
        "records by json"
    ),
    "jsonl_output_cpu.json": Results(
        "dedup on JSONL: kept records written as their lines, against parsed and re-encoded"
    ),
    "lshjoin_cpu.json": Results("The approximate join (recall=) against the exact join"),
    "search_cpu.json": Results(
        "Search index and joins against FAISS and simhash-pybind",
        (
            Table(("joins",), caption="joins of the PyPI codes"),
            Table(("knn",), caption="kNN queries and removals"),
        ),
    ),
    "accuracy_results.json": Results(
        "Accuracy of the estimate, weighting, blocking and detection",
        (
            Table(("mae_by_bits",), caption="mean absolute error of estimate_cosine"),
            Table(
                ("weighting",),
                ("bits", "weighted", "seed_weighted", "unweighted", "seed_unweighted", "ratio"),
                caption="paraphrase pairs: error of weighted against unweighted fingerprints",
            ),
            Table(("blocking", "seed-like documents"), caption="blocking, seed-like documents"),
            Table(
                ("blocking", "synthetic corpus (600 docs)"),
                caption="blocking, synthetic corpus (600 documents)",
            ),
            Table(
                ("detection",),
                caption="detection probability P(hamming <= radius) against the binomial model",
                explode="bins",
            ),
        ),
    ),
    "accuracy_synthetic_dedup.json": Results(
        "dedup against the synthetic generator's ground truth",
        (
            Table(
                ("results",),
                (
                    "bits",
                    "min_cosine",
                    "summary.settings.max_distance",
                    "summary.results.removed",
                    "summary.results.largest_cluster",
                    "summary.ground_truth.removal_precision",
                    "summary.ground_truth.removal_recall",
                    "summary.ground_truth.pair_precision",
                    "summary.ground_truth.pair_recall",
                    "summary.results.documents_per_second",
                ),
            ),
        ),
    ),
    "quality_0.8.json": Results(
        "dedup settings against three truths, threshold cosine 0.8",
        (
            Table(
                ("results",),
                (
                    "dataset",
                    "features",
                    "bits",
                    "verified",
                    "radius",
                    "candidate_pairs",
                    "removed",
                    "largest_cluster",
                    "removed_below_threshold",
                    "removal_precision",
                    "removal_recall",
                    "pair_precision",
                    "pair_recall",
                    "pair_recall_not_identical",
                ),
            ),
        ),
    ),
    "quality_pypi50k_0.9.json": Results(
        "dedup settings against the exact-cosine truth of 50,000 PyPI summaries, cosine 0.9"
    ),
    "dedup_verify_cpu_graph.json": Results("What verification costs: 100,000 PyPI summaries"),
    "dedup_verify_cpu_841708_prefetch.json": Results(
        "What verification costs: the whole PyPI corpus"
    ),
    "dedup_verify_cpu_841708_features.json": Results(
        "The defaults (candidates from the features) against the unverified run: the whole PyPI "
        "corpus, side by side"
    ),
    "dedup_verify_synth.json": Results(
        "dedup's time and memory per document on synthetic corpora",
        (
            Table(
                ("results",),
                (
                    "docs",
                    "setting",
                    "seconds",
                    "every_run_s",
                    "fingerprint_s",
                    "join_s",
                    "verify_s",
                    "write_s",
                    "bytes_per_doc",
                    "candidate_pairs",
                    "candidate_code_pairs",
                    "pairs_verified",
                    "removed",
                    "largest_cluster",
                    "removed_below_threshold",
                    "load_average",
                ),
            ),
        ),
    ),
    "dedup_verify_synth_1m_review.json": Results(
        "dedup's time and memory per document, 1,000,000 synthetic documents, a second run",
        (
            Table(
                ("results",),
                (
                    "docs",
                    "setting",
                    "seconds",
                    "every_run_s",
                    "fingerprint_s",
                    "join_s",
                    "verify_s",
                    "write_s",
                    "bytes_per_doc",
                    "pairs_verified",
                    "removed",
                    "largest_cluster",
                    "removed_below_threshold",
                    "load_average",
                ),
            ),
        ),
    ),
    "peers_cpu.json": Results(
        "The whole dedup against MinHash LSH (rensa, datasketch): 100,000 PyPI summaries",
        _PEERS_TABLES,
    ),
    "peers_cpu_all.json": Results(
        "The whole dedup against MinHash LSH (rensa, datasketch): the whole PyPI corpus",
        (_PEERS_TABLES[0], *_PEERS_TABLES[2:]),  # run with --no-cold
    ),
    "candidates_cpu.json": Results(
        "Candidates from the codes' radius join against the exact feature join",
        (
            Table(
                ("results",),
                (
                    "corpus",
                    "units",
                    "threshold",
                    "method",
                    "radius",
                    "candidates_s",
                    "verify_s",
                    "total_s",
                    "seconds_over_features",
                    "candidate_pairs",
                    "pairs",
                    "recall",
                    "peak_over_inputs_mb",
                    "refused_estimated_candidates",
                    "timed_out_s",
                ),
            ),
            Table(("exactness_checks",), caption="the feature join against brute force"),
        ),
    ),
    "reliability_attacks.json": Results(
        "Adversarial runs of the command line",
        (
            Table(
                ("table",),
                ("attack", "trials", "crashes", "hangs", "data lost", "clean errors", "worked"),
            ),
        ),
    ),
    "dedup_verify_synth_1m_round3.json": Results(
        "Peak memory per document at 1,000,000 synthetic documents, one run each"
    ),
    "dedup_input_cpu.json": Results("dedup's first pass: text read as str or as UTF-8 bytes"),
    "json_cpu.json": Results(
        "JSONL records read by json.loads, by orjson where it agrees, and ids and texts by orjson"
    ),
    "index_memory_cpu.json": Results(
        "The exact feature join's index: memory per feature entry against its estimate"
    ),
    "distributed_cpu.json": Results(
        "The whole dedup on Dask: 2,000,000 synthetic documents",
        (
            Table(
                ("runs",),
                (
                    "workers",
                    "threads_per_worker",
                    "repeat",
                    "seconds",
                    "timings_s.fingerprint",
                    "timings_s.join",
                    "timings_s.cluster",
                    "timings_s.write",
                    "other_jobs_cores",
                    "peak_rss_per_worker_bytes",
                    "driver_peak_rss_bytes",
                    "fetched_between_workers_bytes",
                    "identical_to_single",
                ),
                caption="every run",
            ),
            Table(("best_seconds",), caption="best of the repeats"),
            Table(("single_machine", "timings_s"), caption="dedup_file on one machine, stages"),
            Table(("estimate",), caption="on paper, from the per-document costs above"),
        ),
    ),
    "distributed_cpu_200000.json": Results(
        "The whole dedup on Dask: 200,000 synthetic documents",
        (
            Table(
                ("runs",),
                (
                    "workers",
                    "threads_per_worker",
                    "repeat",
                    "seconds",
                    "timings_s.fingerprint",
                    "timings_s.join",
                    "timings_s.cluster",
                    "timings_s.write",
                    "peak_rss_per_worker_bytes",
                    "identical_to_single",
                ),
                caption="every run",
            ),
            Table(("best_seconds",), caption="best of the repeats"),
        ),
    ),
    "distributed_options.json": Results("Options of the distributed dedup and what each adds"),
    "distributed_options_rows.json": Results(
        "Options of the distributed dedup and what each adds: documents without ids"
    ),
    "distributed_real.json": Results(
        "The whole dedup on Dask against one machine: real summaries",
        (
            Table(
                ("table",),
                caption="medians of 3 interleaved repeats: one machine, then the stages on the "
                "workers, then the same stages on the driver (2 workers fingerprinting its "
                "partitions); (default) marks what the input's bytes choose",
            ),
        ),
    ),
    "distributed_real_100k.json": Results(
        "The whole dedup on Dask against one machine: 100,000 real summaries, 7 repeats",
        (
            Table(
                ("table",),
                caption="medians of 7 interleaved repeats: one machine, then the stages on "
                "the workers, then the same stages on the driver, at 100,000 documents",
            ),
        ),
    ),
    "distributed_real_200k.json": Results(
        "The whole dedup on Dask against one machine: 200,000 real summaries, 7 repeats",
        (
            Table(
                ("table",),
                caption="medians of 7 interleaved repeats: one machine, then the stages on "
                "the workers, then the same stages on the driver (2 workers fingerprinting its "
                "partitions), at 200,000 documents and the defaults",
            ),
        ),
    ),
    "cli_malloc_cpu.json": Results(
        "The command line under glibc's mapping thresholds",
        (
            Table(
                ("table",),
                caption="gpusimhash dedup --no-report, a fresh process each, best of 3 rounds: "
                "the command line's threshold, 1 MiB and 32 MiB fixed, and glibc's adaptive one",
            ),
        ),
    ),
    "report_cpu.json": Results(
        "What the command's report costs, against the revision before its fixes",
        (Table(("table",), caption="whole processes, best of the rounds"),),
    ),
    "unique_cpu.json": Results(
        "Distinct values, pairs and codes against np.unique and lexsorts",
        (Table(("table",), caption="best of the repeats, after a warm-up"),),
    ),
    "cluster_stage_cpu.json": Results(
        "The distributed clustering stage: the whole graph in one task, or by components",
        (Table(("table",), caption="2 local workers of one core each, medians of the rounds"),),
    ),
    "malloc_cpu.json": Results(
        "A worker's work under glibc's default, Dask's and local_cluster's malloc settings",
        (Table(("table",), caption="seconds on one thread, best of the rounds"),),
    ),
    "split_shares.json": Results("A crowded bucket joined whole or in shares"),
    "split_dask.json": Results("The distributed join with and without share tasks"),
    "loops_cpu.json": Results(
        "The compiled C loops against the Numba loops they replaced",
        (Table(("table",), caption="warm, best of the repeats and rounds"),),
    ),
    "gpu_probe_emulated.json": Results(
        "The GPU parity probe's cost (GPU part: the emulated kernels on the CPU)",
        (Table(("summary",)),),
    ),
}

# Files not shown, each with the reason: they measure code the package no longer has, or
# compare two development revisions rather than describe the package.
NOT_SHOWN = {
    "dedup_verify_cpu.json": "replaced by dedup_verify_cpu_graph.json (the same bench, later code)",
    "dedup_verify_cpu_841708.json": "replaced by dedup_verify_cpu_841708_prefetch.json",
    "dedup_verify_cpu_841708_defaults.json": "replaced by dedup_verify_cpu_841708_prefetch.json",
    "dedup_verify_cpu_841708_graph.json": "replaced by dedup_verify_cpu_841708_prefetch.json",
    "dedup_verify_synth_sequential_star.json": "replaced by dedup_verify_synth.json",
    "distributed_cpu_500000.json": "replaced by distributed_cpu.json and distributed_cpu_200000",
    "join_cpu_tile_kernel.json": "replaced by join_cpu.json",
    "rehousing_fingerprint.json": "compares two development revisions",
    "rehousing_join.json": "compares two development revisions",
    "rehousing_join_recheck.json": "compares two development revisions",
    "rehousing_c_core.json": "compares two development revisions (quoted in the development guide)",
    "feature_ranges_dedup_cpu.json": "compares two development revisions (quoted in the "
    "feature join's probe_range docstring)",
    "distributed_stages_revisions.json": "compares two development revisions of the distributed dedup",
    "jsonl_blocks_revisions.json": "compares two development revisions of the JSONL readers "
    "(quoted in gpusimhash.io._jsonl_blocks and the changelog)",
}

_ABSENT = object()  # a key a row does not have (shown as a dash, like null)

# Labels inside the JSON that name settings relative to earlier releases
_LABEL_PREFIXES = ("old defaults: ", "new defaults: ")


def write_pages(results: Path, out: Path) -> list[Path]:
    """Write the benchmark pages of every results file.

    Parameters
    ----------
    results : Path
        The folder of ``*.json`` results.
    out : Path
        The folder to write into (created if missing); files are rewritten only when their
        text changes, so a rebuild reads only what changed.

    Returns
    -------
    list of Path
        The files written or already up to date: ``benchmarks.md`` first.
    """
    out.mkdir(parents=True, exist_ok=True)
    sections, written = [], []
    for path in sorted(results.glob("*.json")):
        if path.name in NOT_SHOWN:
            continue
        shown = SHOWN.get(path.name, Results(path.stem.replace("_", " ")))
        body = render_file(path, shown)
        written.append(_write(out / f"{path.stem}.md", body))
        sections.append(f"({label(path)})=\n## {shown.title}\n\n{body}")
    return [_write(out / "benchmarks.md", "\n".join(sections)), *written]


def label(path: Path) -> str:
    """Return the cross-reference label of a results file's section in ``benchmarks.md``.

    Parameters
    ----------
    path : Path
        The JSON file.

    Returns
    -------
    str
        ``bench-`` and the file's stem, with ``_`` and ``.`` as ``-``.

    Examples
    --------
    >>> label(Path("bench/results/quality_0.8.json"))
    'bench-quality-0-8'
    """
    return "bench-" + path.stem.replace("_", "-").replace(".", "-")


def render_file(path: Path, shown: Results) -> str:
    """Render one results file: where it comes from, its parameters and its tables.

    Parameters
    ----------
    path : Path
        The JSON file.
    shown : Results
        Its title and tables (no tables: every list of objects in the file).

    Returns
    -------
    str
        MyST Markdown.
    """
    document = json.loads(path.read_text(encoding="utf-8"))
    lines = [
        f"- file: `bench/results/{path.name}`",
        f"- command: `{document.get('command', 'not recorded').strip()}`",
        f"- machine: {machine(document.get('machine'))}",
    ]
    parameters = ", ".join(f"{key} {cell(value)}" for key, value in _parameters(document))
    if parameters:
        lines.append(f"- parameters: {parameters}")
    parts = ["\n".join(lines)]
    tables = shown.tables or tuple(Table((key,)) for key in _row_lists(document))
    for table in tables:
        parts.append(render_table(document, table))
    return "\n\n".join(parts) + "\n"


def render_table(document: dict[str, Any], table: Table) -> str:
    """Render one table of a results document as a Markdown pipe table.

    Parameters
    ----------
    document : dict
        The results file's content.
    table : Table
        Which rows and columns.

    Returns
    -------
    str
        The table, under its caption when it has one.

    Raises
    ------
    KeyError
        ``table.rows`` does not lead to a value in the document, or no row has one of the
        chosen columns. A column no row has a value for (every row null) is left out.
    """
    value: Any = document
    for key in table.rows:
        value = value[key]
    rows = _rows(value, table.explode)
    missing = [c for c in table.columns if all(_lookup(row, c) is _ABSENT for row in rows)]
    if missing:
        raise KeyError(f"{'.'.join(table.rows)}: no row has the column(s) {', '.join(missing)}")
    columns = list(table.columns) or _scalar_keys(rows)
    columns = [c for c in columns if any(_lookup(row, c) not in (None, _ABSENT) for row in rows)]
    lines = [
        "| " + " | ".join(c.rsplit(".", 1)[-1].replace("_", " ") for c in columns) + " |",
        "|" + "---|" * len(columns),
    ]
    lines += ["| " + " | ".join(_cell_of(row, c) for c in columns) + " |" for row in rows]
    caption = f"**{table.caption}**\n\n" if table.caption else ""
    return caption + "\n".join(lines)


def machine(described: dict[str, Any] | None) -> str:
    """Describe the machine a results file records, in one line.

    Parameters
    ----------
    described : dict or None
        The file's ``machine`` object.

    Returns
    -------
    str
        Processor, cores, versions and load average, as far as the file records them.
    """
    if not described:
        return "not recorded"
    parts = [described.get("cpu") or described.get("processor") or "processor not recorded"]
    if "cpu_count" in described:
        parts.append(f"{described['cpu_count']} cores")
    for key, name in (("python", "Python"), ("numpy", "NumPy"), ("numba", "Numba")):
        if key in described:
            parts.append(f"{name} {described[key]}")
    if "faiss" in described:
        parts.append(f"faiss-cpu {described['faiss']}")
    if "load_average" in described:
        parts.append("load average " + cell(described["load_average"]))
    return ", ".join(parts)


def cell(value: Any) -> str:
    """Format one value of a results file for a table.

    Parameters
    ----------
    value : object
        A JSON value.

    Returns
    -------
    str
        Integers with thousands separators, other numbers to four significant digits, booleans
        as yes/no, null as a dash, lists joined by commas.
    """
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        if value.is_integer() and abs(value) >= 1:
            return f"{int(value):,}"
        return f"{value:,.0f}" if abs(value) >= 10_000 else f"{value:.4g}"
    if isinstance(value, list):
        return ", ".join(cell(item) for item in value) if value else "none"
    if isinstance(value, dict):
        return ", ".join(f"{key} {cell(item)}" for key, item in value.items())
    text = str(value)
    for prefix in _LABEL_PREFIXES:
        if text.startswith(prefix):
            text = ("defaults: " if prefix.startswith("new") else "") + text[len(prefix) :]
    return text.replace("|", "\\|")


def _cell_of(row: dict[str, Any], dotted: str) -> str:
    """Format a row's value at a dotted key; a key the row lacks is a dash, as null."""
    value = _lookup(row, dotted)
    return cell(None if value is _ABSENT else value)


def _parameters(document: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    """Top-level scalars (and those of top-level objects) other than the command and machine."""
    for key, value in document.items():
        if key in ("command", "machine"):
            continue
        if isinstance(value, dict) and all(not isinstance(v, (dict, list)) for v in value.values()):
            if not _is_row_object(key, value):
                yield from ((f"{key}.{k}", v) for k, v in value.items())
        elif not isinstance(value, (dict, list)) or (
            isinstance(value, list) and all(not isinstance(v, (dict, list)) for v in value)
        ):
            yield key, value


def _is_row_object(key: str, value: dict[str, Any]) -> bool:
    """Whether a top-level object is shown as a table of one row (best times, for example)."""
    return key in ("best_seconds", "weighting")


def _row_lists(document: dict[str, Any]) -> list[str]:
    """Top-level keys holding a list of objects: the default tables of a file."""
    return [
        key
        for key, value in document.items()
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value)
    ]


def _rows(value: Any, explode: str) -> list[dict[str, Any]]:
    """Return the row objects of a table (one object is a table of one row)."""
    rows = value if isinstance(value, list) else [value]
    if not explode:
        return rows
    out = []
    for row in rows:
        own = {k: v for k, v in row.items() if k != explode and not isinstance(v, (dict, list))}
        out += [{**own, **item} for item in row[explode]]
    return out


def _scalar_keys(rows: Sequence[dict[str, Any]]) -> list[str]:
    """Every key of the rows whose values are scalars or lists of scalars, in first-seen order."""
    keys: dict[str, None] = {}
    for row in rows:
        for key, value in row.items():
            if not isinstance(value, dict) and not (
                isinstance(value, list) and any(isinstance(v, (dict, list)) for v in value)
            ):
                keys.setdefault(key, None)
    return list(keys)


def _lookup(row: dict[str, Any], dotted: str) -> Any:
    """Return the value at a dotted key of a row, or `_ABSENT` where the row has no such key."""
    value: Any = row
    for key in dotted.split("."):
        if not isinstance(value, dict) or key not in value:
            return _ABSENT
        value = value[key]
    return value


def _write(path: Path, text: str) -> Path:
    """Write a file unless it already holds the text."""
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")
    return path


if __name__ == "__main__":
    for written in write_pages(Path(sys.argv[1]), Path(sys.argv[2])):
        print(written)

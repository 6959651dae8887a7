"""The report's Markdown: settings and results tables, the largest clusters, the threshold.

`write_report` writes ``report.md`` and its plots (`gpusimhash.dedup.report._plots`) from the
summary and what `gpusimhash.dedup.report._sample` sampled.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from gpusimhash._output_names import PLOTS
from gpusimhash.dedup.report import _plots as plots
from gpusimhash.dedup.report._sample import EXAMPLE_MEMBERS
from gpusimhash.io._atomic import atomic_path

EXCERPT = 160  # characters of text shown


def _table(rows: list[tuple[str, Any]]) -> str:
    """Render a two-column Markdown table."""
    lines = ["| | |", "|---|---|"]
    lines += [f"| {key} | {value} |" for key, value in rows]
    return "\n".join(lines)


def _fmt(value: Any) -> str:
    """Format a number for a table."""
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def excerpt(text: str, width: int = EXCERPT) -> str:
    r"""Return the start of a text on one line, safe inside a Markdown table cell.

    Examples
    --------
    >>> excerpt("a | b\nc", 80), excerpt("x" * 10, 4)
    ('a \\| b c', 'xxx…')
    """
    flat = " ".join(text.split())
    if len(flat) > width:
        flat = flat[: width - 1] + "…"
    return flat.replace("\\", "\\\\").replace("|", "\\|").replace("`", "\\`")


def _examples_section(examples: list[dict[str, Any]], threshold: float | None) -> list[str]:
    """Render the largest clusters, kept text and members side by side."""
    if not examples:
        return []
    lines = [
        "## Largest clusters",
        "",
        f"The {len(examples)} largest clusters: the kept document and up to {EXAMPLE_MEMBERS} "
        "members, the least similar to it first. Each member's edge is the pair that put it in "
        "the cluster: its similarity to the kept document and their Hamming distance"
        + ("; ⚠ marks an edge below the threshold (a chain)." if threshold is not None else "."),
        "",
    ]
    for number, example in enumerate(examples, start=1):
        kept, kept_id = example["kept"], example.get("kept_id", example["kept"])
        member_ids = example.get("member_ids", example["members"])
        # ids where they are not the rows (an id field): the column that joins kept.<fmt>
        named = kept_id != kept or member_ids != example["members"]
        who = f"{excerpt(str(kept_id), 60)} (row {kept})" if named else f"row {kept}"
        lines += [
            f"### {number}. {example['size']:,} documents, {who} kept",
            "",
            "| id | row | similarity | distance | text |"
            if named
            else "| row | similarity | distance | text |",
            "|---|---|---|---|---|" if named else "|---|---|---|---|",
            (f"| {excerpt(str(kept_id), 60)} " if named else "")
            + f"| {kept} (kept) | | | {excerpt(example['kept_text'])} |",
        ]
        for identifier, row, similarity, distance, text in zip(
            member_ids,
            example["members"],
            example["similarities"],
            example["distances"],
            example["member_texts"],
            strict=True,
        ):
            shown = "n/a" if np.isnan(similarity) else f"{similarity:.3f}"
            if threshold is not None and not np.isnan(similarity) and similarity < threshold:
                shown += " ⚠"
            first = f"| {excerpt(str(identifier), 60)} " if named else ""
            lines.append(f"{first}| {row} | {shown} | {distance} | {excerpt(text)} |")
        lines.append("")
    return lines


def _threshold_section(
    neighbourhood: dict[str, Any],
    true: np.ndarray,
    beyond: np.ndarray,
    cosine: float | None,
    bits: int,
) -> list[str]:
    """How many neighbours lie around the radius, and how many just beyond it are similar.

    Without a radius (``radius >= bits``: candidates from the features), why there is none.
    """
    distances, radius = neighbourhood["neighbourhood"], neighbourhood["radius"]
    if radius >= bits:
        return [
            "## Around the threshold",
            "",
            (
                "The candidates come from the documents' features, not from a Hamming radius: "
                "every pair at or above the threshold is found, so no neighbourhood around a "
                "radius is sampled."
            ),
            "",
        ]
    lines = [
        "## Around the threshold",
        "",
        (
            f"Neighbours of {neighbourhood['documents']:,} sampled documents up to distance "
            f"{neighbourhood['reach']}: {int((distances <= radius).sum()):,} within the candidate "
            f"radius {radius}, {int((distances > radius).sum()):,} beyond it."
        ),
    ]
    measured = beyond & ~np.isnan(true)
    if cosine is not None and measured.any():
        missed = int((true[measured] >= cosine).sum())
        lines[-1] += (
            f" Of {int(measured.sum()):,} sampled pairs just beyond the radius, {missed:,} have a "
            f"true cosine at or above {cosine:g}: near-duplicates the candidate search does not "
            "propose (raise `--candidate-recall` or `--max-distance` if that matters)."
        )
    return [*lines, ""]


def write_report(
    folder: str | Path,
    summary: dict[str, Any],
    *,
    found_distances: np.ndarray,
    random_distances: np.ndarray,
    estimated: np.ndarray,
    true: np.ndarray,
    sampled_found: np.ndarray,
    cluster_sizes: np.ndarray,
    sampled_beyond: np.ndarray | None = None,
    neighbourhood: dict[str, Any] | None = None,
    examples: list[dict[str, Any]] | None = None,
) -> Path:
    """Write ``report.md`` and its plots into ``folder``.

    Parameters
    ----------
    folder : str or Path
        An existing folder.
    summary : dict
        The run's summary: ``settings`` (``bits``, ``max_distance``, and ``similarity`` and
        ``threshold`` for the threshold's lines), ``results``, optional ``ground_truth`` (each
        a flat dict) and ``files`` (names of the run's output files).
    found_distances, random_distances : ndarray of int
        Hamming distances of the pairs found and of random pairs.
    estimated, true : ndarray of float, same shape
        Estimated and true cosines of sampled pairs (NaN true cosines are left out).
    sampled_found : ndarray of bool, same shape
        Which sampled pairs are near-duplicates found.
    cluster_sizes : ndarray of int
        Size of every cluster of two or more documents.
    sampled_beyond : ndarray of bool, same shape, optional
        Which sampled pairs lie just beyond the radius (the rest are random pairs).
    neighbourhood : dict, optional
        ``neighbourhood`` (distances), ``radius``, ``reach`` and ``documents``, as
        `sampled_cosines` gives.
    examples : list of dict, optional
        The largest clusters with their texts, as `sampled_cosines` gives.

    Returns
    -------
    Path
        The report file.

    Examples
    --------
    >>> import tempfile
    >>> e = np.array([], dtype=float)
    >>> path = write_report(tempfile.mkdtemp(), {"settings": {"bits": 64}, "results": {}},
    ...     found_distances=e, random_distances=e, estimated=e, true=e,
    ...     sampled_found=e.astype(bool), cluster_sizes=e)
    >>> path.name
    'report.md'
    """
    folder = Path(folder)
    settings = summary.get("settings", {})
    bits = int(settings.get("bits", 64))
    # candidates from the features have no radius: every distance is within reach
    radius = int(settings.get("max_distance") or bits)
    cosine = settings.get("threshold") if settings.get("similarity") == "cosine" else None
    beyond = np.zeros(true.shape, bool) if sampled_beyond is None else sampled_beyond
    kind = np.where(sampled_found, "found", np.where(beyond, "beyond", "random"))
    if neighbourhood is None:
        neighbourhood = {"neighbourhood": np.zeros(0, np.int64), "radius": radius, "reach": radius}
        neighbourhood["documents"] = 0
    lines = ["# gpusimhash deduplication report", ""]
    if "input" in summary:
        lines += [f"Input: `{summary['input']}`", ""]
    lines += ["## Settings", "", _table([(k, _fmt(v)) for k, v in settings.items()]), ""]
    lines += ["## Results", "", _table([(k, _fmt(v)) for k, v in summary["results"].items()]), ""]
    if summary.get("ground_truth"):
        truth = summary["ground_truth"]
        lines += [
            "## Against the ground truth",
            "",
            _table([(k, _fmt(v)) for k, v in truth.items()]),
        ]
        lines += [""]
    lines += _examples_section(examples or [], settings.get("threshold"))
    lines += _threshold_section(neighbourhood, true, beyond, cosine, bits)
    plt = plots.pyplot()
    if plt is None:
        lines += ["Plots need matplotlib: `pip install matplotlib`.", ""]
    else:
        keep = ~np.isnan(true)
        distances = {"found": found_distances, "random": random_distances}
        plots.plot_hamming(
            plt,
            folder / PLOTS["hamming"],
            bits,
            radius,
            distances,
            neighbourhood["neighbourhood"],
            int(neighbourhood["reach"]),
        )
        plots.plot_cosines(
            plt, folder / PLOTS["cosine"], estimated[keep], true[keep], kind[keep], cosine
        )
        plots.plot_cluster_sizes(plt, folder / PLOTS["clusters"], cluster_sizes)
        lines += [
            "## Plots",
            "",
            (
                "Hamming distances of the near-duplicate pairs found and of random pairs (left), "
                "and of every neighbour of the sampled documents around the radius (right):"
            ),
            "",
            f"![Hamming distances]({PLOTS['hamming']})",
            "",
            (
                "Estimated cosine (from the codes) against the true cosine of the weighted "
                "features, for sampled pairs found, just beyond the radius, and random:"
            ),
            "",
            f"![Estimated against true cosine]({PLOTS['cosine']})",
            "",
            "Sizes of the near-duplicate clusters (log-log):",
            "",
            f"![Cluster sizes]({PLOTS['clusters']})",
            "",
        ]
    if summary.get("files"):
        lines += ["## Files", ""] + [
            f"- `{name}`: {what}" for name, what in summary["files"].items()
        ]
        lines += [""]
    path = folder / "report.md"
    with atomic_path(path) as name:
        Path(name).write_text("\n".join(lines), encoding="utf-8")
    return path

"""A Markdown report of a deduplication run, with PNG plots.

``write_report`` writes ``report.md`` and three plots into a folder: the distribution of Hamming
distances between the near-duplicate pairs found (against random pairs), the estimated against the
true cosine of sampled pairs, and the distribution of cluster sizes. Plots need matplotlib
(a dependency; where it is missing the report is written without them).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from gpusimhash import _segments
from gpusimhash.codes import estimate_cosine, hamming
from gpusimhash.evaluation import true_cosines
from gpusimhash.io._atomic import atomic_path
from gpusimhash.search._join import DuplicateGroups
from gpusimhash.text import TextFeaturizer

# near-duplicate pairs and random pairs sampled for the plots, at most
SAMPLED_PAIRS = 1500
PLOTS = {
    "hamming": "hamming_distances.png",
    "cosine": "estimated_vs_true_cosine.png",
    "clusters": "cluster_sizes.png",
}


def _pyplot() -> Any:
    """Return matplotlib.pyplot on a file-only backend, or None without matplotlib."""
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig: Any, path: Path) -> None:
    """Save a figure atomically and close it."""
    try:
        with atomic_path(path) as name:
            fig.savefig(name, dpi=110, format="png")
    finally:
        fig.clf()


def plot_hamming(
    plt: Any, path: Path, bits: int, found: np.ndarray, random: np.ndarray, radius: int
) -> None:
    """Histogram of Hamming distances: the pairs found against random pairs."""
    fig, ax = plt.subplots(figsize=(6.4, 4))
    edges = np.arange(-0.5, bits + 1.5, max(1, bits // 64))
    if random.size:
        ax.hist(random, bins=edges, alpha=0.6, label=f"random pairs ({random.size})", density=True)
    if found.size:
        ax.hist(
            found,
            bins=edges,
            alpha=0.6,
            label=f"pairs found, distinct codes ({found.size})",
            density=True,
        )
    ax.axvline(radius + 0.5, color="black", linestyle=":", label=f"radius {radius}")
    ax.set_xlabel(f"Hamming distance ({bits}-bit codes)")
    ax.set_ylabel("fraction of pairs")
    ax.set_title("Hamming distances")
    ax.legend()
    fig.tight_layout()
    _save(fig, path)
    plt.close(fig)


def plot_cosines(
    plt: Any, path: Path, estimated: np.ndarray, true: np.ndarray, found: np.ndarray
) -> None:
    """Scatter of estimated against true cosine, pairs found and random pairs apart."""
    fig, ax = plt.subplots(figsize=(5.6, 5))
    for mask, label in ((~found, "random pairs"), (found, "pairs found")):
        ax.scatter(true[mask], estimated[mask], s=6, alpha=0.5, label=f"{label} ({mask.sum()})")
    ax.plot([-1, 1], [-1, 1], color="grey", linewidth=1)
    ax.set_xlim(min(0.0, np.nanmin(true, initial=0.0)), 1.02)
    ax.set_ylim(min(0.0, np.nanmin(estimated, initial=0.0)), 1.02)
    ax.set_xlabel("true cosine (weighted features)")
    ax.set_ylabel("estimated cosine cos(pi d / bits)")
    ax.set_title("Estimated against true cosine")
    ax.legend(loc="upper left")
    fig.tight_layout()
    _save(fig, path)
    plt.close(fig)


def plot_cluster_sizes(plt: Any, path: Path, sizes: np.ndarray) -> None:
    """Plot the number of clusters of each size (size >= 2), log scale."""
    fig, ax = plt.subplots(figsize=(6.4, 4))
    if sizes.size:
        values, counts = np.unique(sizes, return_counts=True)
        ax.bar(values, counts, width=0.8)
        ax.set_yscale("log")
        ax.xaxis.get_major_locator().set_params(integer=True)
    ax.set_xlabel("cluster size (documents)")
    ax.set_ylabel("clusters")
    ax.set_title("Near-duplicate cluster sizes")
    fig.tight_layout()
    _save(fig, path)
    plt.close(fig)


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
) -> Path:
    """Write ``report.md`` and its plots into ``folder``.

    Parameters
    ----------
    folder : str or Path
        An existing folder.
    summary : dict
        The run's summary: ``settings``, ``results``, optional ``ground_truth`` (each a flat
        dict) and ``files`` (names of the run's output files).
    found_distances, random_distances : ndarray of int
        Hamming distances of the pairs found and of random pairs.
    estimated, true : ndarray of float, same shape
        Estimated and true cosines of sampled pairs (NaN true cosines are left out).
    sampled_found : ndarray of bool, same shape
        Which sampled pairs are near-duplicates found (the others are random pairs).
    cluster_sizes : ndarray of int
        Size of every cluster of two or more documents.

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
    radius = int(settings.get("max_distance", 0))
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
    plt = _pyplot()
    if plt is None:
        lines += ["Plots need matplotlib: `pip install matplotlib`.", ""]
    else:
        keep = ~np.isnan(true)
        plot_hamming(
            plt, folder / PLOTS["hamming"], bits, found_distances, random_distances, radius
        )
        plot_cosines(
            plt, folder / PLOTS["cosine"], estimated[keep], true[keep], sampled_found[keep]
        )
        plot_cluster_sizes(plt, folder / PLOTS["clusters"], cluster_sizes)
        lines += [
            "## Plots",
            "",
            "Hamming distances of the near-duplicate pairs found and of random pairs:",
            "",
            f"![Hamming distances]({PLOTS['hamming']})",
            "",
            (
                "Estimated cosine (from the codes) against the true cosine of the weighted "
                "features, for a sample of pairs found and of random pairs:"
            ),
            "",
            f"![Estimated against true cosine]({PLOTS['cosine']})",
            "",
            "Sizes of the near-duplicate clusters:",
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


def sample_pairs(groups: DuplicateGroups, codes: np.ndarray, seed: int) -> dict[str, np.ndarray]:
    """Pick near-duplicate pairs and random pairs for the report's plots.

    Parameters
    ----------
    groups : DuplicateGroups
        The join's result.
    codes : ndarray, shape (n, bits // 8), dtype uint8
        Every document's code.
    seed : int
        Seed of the sampling.

    Returns
    -------
    dict
        ``pairs`` (int64, (m, 2): up to ``SAMPLED_PAIRS`` found pairs, then random pairs),
        ``found`` (bool per pair), ``rows`` (the documents in them, sorted),
        ``found_distances`` (of every found pair) and ``random_distances``.
    """
    rng = np.random.default_rng(seed)
    n = codes.shape[0]
    first_row = np.full(groups.n_unique, -1, dtype=np.int64)
    first_row[groups.inverse[::-1]] = np.arange(n)[::-1]
    found = first_row[groups.unique_pairs] if len(groups.unique_pairs) else np.zeros((0, 2), int)
    sizes = np.bincount(groups.inverse) if n else np.zeros(0, np.int64)
    repeated = np.flatnonzero(sizes > 1)
    second_row = np.full(groups.n_unique, -1, dtype=np.int64)
    if repeated.size:
        order = np.argsort(groups.inverse, kind="stable")
        starts = _segments.starts(sizes)
        second_row[repeated] = order[starts[repeated] + 1]
    identical = np.stack([first_row[repeated], second_row[repeated]], axis=1)
    all_found = np.concatenate([found, identical]).astype(np.int64)
    distances = (
        hamming(codes[all_found[:, 0]], codes[all_found[:, 1]]) if len(all_found) else np.zeros(0)
    )
    if len(all_found) > SAMPLED_PAIRS:
        all_found = all_found[rng.choice(len(all_found), SAMPLED_PAIRS, replace=False)]
    random = rng.integers(0, n, size=(SAMPLED_PAIRS if n > 1 else 0, 2))
    random = random[random[:, 0] != random[:, 1]]
    random_distances = (
        hamming(codes[random[:, 0]], codes[random[:, 1]]) if len(random) else (np.zeros(0))
    )
    pairs = np.concatenate([all_found, random]).astype(np.int64)
    return {
        "pairs": pairs,
        "found": np.r_[np.ones(len(all_found), bool), np.zeros(len(random), bool)],
        "rows": np.unique(pairs),
        "found_distances": np.asarray(distances),
        "random_distances": np.asarray(random_distances),
    }


def sampled_cosines(
    sample: dict[str, np.ndarray],
    texts: dict[int, str],
    codes: np.ndarray,
    featurizer: TextFeaturizer,
) -> dict[str, np.ndarray]:
    """Estimated and true cosines of the sampled pairs: the plots' data.

    Parameters
    ----------
    sample : dict
        From `sample_pairs`.
    texts : dict
        The text of every row in ``sample["rows"]``.
    codes : ndarray, shape (n, bits // 8), dtype uint8
        Every document's code.
    featurizer : TextFeaturizer
        The featurizer of the codes.

    Returns
    -------
    dict
        The keyword arguments of `write_report` but ``cluster_sizes``.
    """
    a, b = sample["pairs"][:, 0], sample["pairs"][:, 1]
    true = true_cosines(featurizer, [texts[r] for r in a], [texts[r] for r in b])
    estimated = estimate_cosine(codes[a], codes[b]) if a.size else np.zeros(0)
    return {
        "found_distances": sample["found_distances"],
        "random_distances": sample["random_distances"],
        "estimated": estimated,
        "true": true,
        "sampled_found": sample["found"],
    }

"""A Markdown report of a deduplication run, with PNG plots.

``write_report`` writes ``report.md`` and three plots into a folder: the distribution of Hamming
distances between the near-duplicate pairs found (against random pairs), the estimated against the
true cosine of sampled pairs, and the distribution of cluster sizes. Plots need matplotlib
(a dependency; where it is missing the report is written without them).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from gpusimhash.text import TextFeaturizer
from gpusimhash.writers import atomic_path

PLOTS = {
    "hamming": "hamming_distances.png",
    "cosine": "estimated_vs_true_cosine.png",
    "clusters": "cluster_sizes.png",
}


def true_cosines(
    featurizer: TextFeaturizer, texts_a: Sequence[str], texts_b: Sequence[str]
) -> np.ndarray:
    """Exact cosine similarity of the weighted feature vectors of text pairs.

    Features are compared by their hash state, as the fingerprint sees them.

    Parameters
    ----------
    featurizer : TextFeaturizer
        How text becomes weighted features (fitted, for tfidf).
    texts_a, texts_b : sequence of str, same length
        The pairs.

    Returns
    -------
    ndarray, shape (len(texts_a),), dtype float64
        Cosines; NaN where a document has no features (the cosine is undefined).

    Raises
    ------
    ValueError
        Sequences of different lengths.

    Examples
    --------
    >>> true_cosines(TextFeaturizer(), ["a b", "a"], ["a b b", ""]).round(3).tolist()
    [0.949, nan]
    """
    if len(texts_a) != len(texts_b):
        raise ValueError(f"need as many texts_b as texts_a, got {len(texts_b)} and {len(texts_a)}")
    n = len(texts_a)
    batch = featurizer.transform(list(texts_a) + list(texts_b))
    distinct, column = np.unique(batch.states, return_inverse=True)
    matrix = sp.csr_matrix(
        (batch.entry_weights(), column.ravel(), batch.offsets), shape=(2 * n, distinct.size)
    )
    matrix.sum_duplicates()
    a, b = matrix[:n], matrix[n:]
    dots = np.asarray(a.multiply(b).sum(axis=1)).ravel()
    norms = np.sqrt(np.asarray(a.multiply(a).sum(axis=1)).ravel()) * np.sqrt(
        np.asarray(b.multiply(b).sum(axis=1)).ravel()
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        cosines = np.where(norms > 0, dots / norms, np.nan)
    return np.clip(cosines, -1.0, 1.0)


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

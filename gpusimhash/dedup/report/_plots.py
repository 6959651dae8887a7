"""The dedup report's PNG plots (matplotlib on a file-only backend, imported only when drawing)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from gpusimhash.io._atomic import atomic_path


def pyplot() -> Any:
    """Return matplotlib.pyplot on a file-only backend, or None without matplotlib."""
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _plain_log_labels(axis: Any) -> None:
    """Label a log axis in plain text (1, 10, 100; 2, 3, 5 between where the range is short).

    Matplotlib's default writes powers of ten as mathtext, parsed label by label: the slowest
    part of drawing these plots. The same ticks are labelled, in plain text.
    """
    from matplotlib import ticker

    axis.set_major_formatter(ticker.LogFormatter())
    axis.set_minor_formatter(ticker.LogFormatter(labelOnlyBase=False))


def _counts(bins: np.ndarray, n_bins: int) -> np.ndarray:
    """Count the values of each bin ``0 .. n_bins - 1`` (others are left out, as ``hist`` does).

    The histograms are drawn from these counts: ``hist`` bins millions of distances by a
    sorted search, ``bincount`` in a few milliseconds.

    Examples
    --------
    >>> _counts(np.array([0, 2, 2, 5]), 3).tolist()
    [1, 0, 2]
    """
    return np.bincount(bins[bins >= 0], minlength=n_bins)[:n_bins]


def _save(plt: Any, fig: Any, path: Path, **margins: float) -> None:
    """Save a figure atomically and close it.

    The margins are fixed (``subplots_adjust``), chosen for each plot's labels:
    ``tight_layout`` would measure every tick label first, which takes longer than drawing.
    """
    try:
        fig.subplots_adjust(**margins)
        with atomic_path(path) as name:
            # fast zlib level: a few more bytes, a fraction of the encoding time
            fig.savefig(name, dpi=110, format="png", pil_kwargs={"compress_level": 1})
    finally:
        fig.clf()
        plt.close(fig)


def plot_hamming(
    plt: Any,
    path: Path,
    bits: int,
    radius: int,
    distances: dict[str, np.ndarray],
    neighbourhood: np.ndarray,
    reach: int,
) -> None:
    """Hamming distances: pairs found against random pairs; and every distance near the radius.

    Parameters
    ----------
    plt : module
        matplotlib.pyplot.
    path : Path
        PNG to write.
    bits, radius : int
        Code length and the candidate radius.
    distances : dict
        ``found`` and ``random``: distances of the pairs found and of random pairs.
    neighbourhood : ndarray of int
        Distances from sampled documents to every document within ``reach``.
    reach : int
        The largest distance in ``neighbourhood``: a little beyond the radius.
    """
    fig, (whole, near) = plt.subplots(1, 2, figsize=(11, 4))
    width = max(1, bits // 256)  # one bin per distance up to 256 bits
    edges = np.arange(-0.5, bits + width + 0.5, width)
    for key, label in (("random", "random pairs"), ("found", "near-duplicate pairs found")):
        values = distances[key]
        if values.size:
            whole.hist(
                edges[:-1] + width / 2,
                bins=edges,
                weights=_counts(values // width, edges.size - 1),
                alpha=0.6,
                density=True,
                histtype="stepfilled",  # one polygon, not a patch per bin: fast to draw
                label=f"{label} ({values.size:,})",
            )
    if radius < bits:
        whole.axvline(radius + 0.5, color="black", linestyle=":", label=f"radius {radius}")
    whole.set_xlabel(f"Hamming distance ({bits}-bit codes)")
    whole.set_ylabel("fraction of pairs")
    whole.set_title("All distances")
    if whole.get_legend_handles_labels()[0]:  # none without pairs and without a radius
        whole.legend(fontsize=8)
    if radius >= bits:  # candidates from the features: no radius, no neighbourhood sampled
        near.set_axis_off()
        near.text(
            0.5,
            0.5,
            "Candidates from the features:\nno Hamming radius, no neighbourhood sampled",
            ha="center",
            va="center",
            transform=near.transAxes,
        )
    else:
        _plot_neighbourhood(near, radius, neighbourhood, reach)
    _save(plt, fig, path, left=0.07, right=0.98, bottom=0.13, top=0.92, wspace=0.25)


def _plot_neighbourhood(near: Any, radius: int, neighbourhood: np.ndarray, reach: int) -> None:
    """Draw every sampled neighbour's distance up to ``reach`` around the radius (log counts)."""
    if neighbourhood.size:
        near.hist(
            np.arange(reach + 1),
            bins=np.arange(-0.5, reach + 1.5),
            weights=_counts(neighbourhood, reach + 1),
            color="tab:green",
            histtype="stepfilled",
        )
        near.set_yscale("log")
        _plain_log_labels(near.yaxis)
    near.axvline(radius + 0.5, color="black", linestyle=":", label=f"radius {radius}")
    near.set_xlim(-0.5, reach + 0.5)
    near.set_xlabel("Hamming distance")
    near.set_ylabel("pairs (log)")
    near.set_title("Around the radius: neighbours of sampled documents")
    near.legend(fontsize=8)


def plot_cosines(
    plt: Any,
    path: Path,
    estimated: np.ndarray,
    true: np.ndarray,
    kind: np.ndarray,
    threshold: float | None,
) -> None:
    """Scatter of estimated against true cosine: pairs found, just beyond the radius, random.

    Parameters
    ----------
    plt : module
        matplotlib.pyplot.
    path : Path
        PNG to write.
    estimated, true : ndarray of float
        Cosines of the sampled pairs (no NaN).
    kind : ndarray of str
        ``"found"``, ``"beyond"`` or ``"random"`` per pair.
    threshold : float, optional
        A cosine threshold to draw.
    """
    fig, ax = plt.subplots(figsize=(5.6, 5))
    labels = {
        "random": "random pairs",
        "found": "pairs found",
        "beyond": "just beyond the radius",
    }
    for key, label in labels.items():
        mask = kind == key
        if mask.any():
            ax.scatter(true[mask], estimated[mask], s=6, alpha=0.5, label=f"{label} ({mask.sum()})")
    ax.plot([-1, 1], [-1, 1], color="grey", linewidth=1)
    if threshold is not None:
        ax.axvline(threshold, color="black", linestyle=":", label=f"threshold {threshold:g}")
    ax.set_xlim(min(0.0, np.nanmin(true, initial=0.0)), 1.02)
    ax.set_ylim(min(0.0, np.nanmin(estimated, initial=0.0)), 1.02)
    ax.set_xlabel("true cosine (weighted features)")
    ax.set_ylabel("estimated cosine cos(pi d / bits)")
    ax.set_title("Estimated against true cosine")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="upper left", fontsize=8)
    _save(plt, fig, path, left=0.14, right=0.97, bottom=0.11, top=0.93)


def plot_cluster_sizes(plt: Any, path: Path, sizes: np.ndarray) -> None:
    """Plot the number of clusters of each size (size >= 2), log-log, readable at any scale."""
    fig, ax = plt.subplots(figsize=(6.4, 4))
    if sizes.size:
        values, counts = np.unique(sizes, return_counts=True)
        ax.plot(values, counts, marker="o", linestyle="none")
        ax.set_xscale("log")
        ax.set_yscale("log")
        _plain_log_labels(ax.xaxis)
        _plain_log_labels(ax.yaxis)
    ax.set_xlabel("cluster size (documents, log)")
    ax.set_ylabel("clusters (log)")
    ax.set_title("Near-duplicate cluster sizes")
    _save(plt, fig, path, left=0.12, right=0.95, bottom=0.13, top=0.92)

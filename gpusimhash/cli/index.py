"""The ``gpusimhash index`` commands: build, add to, query and describe a SimHashIndex on disk.

An index folder is what ``SimHashIndex.save`` writes (FAISS's binary index, tombstones and a
checksummed manifest with bits, seed and the featurizer). ``build`` and ``add`` hold the folder's
writer lock from start to end, so concurrent ones run one after the other; ``query`` and
``stats`` never wait for them and load the index as it was before or after. Ids are int64: ``--id-field`` values
must be integers (or integer strings, as CSV gives); without it, ``build`` numbers documents by
row and ``add`` continues after the largest id stored.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpusimhash._choices import FORMATS, KINDS
from gpusimhash.cli import options
from gpusimhash.cli.options import UserError

if TYPE_CHECKING:
    import numpy as np

    from gpusimhash.io.readers import DocumentBatch
    from gpusimhash.search.index import SimHashIndex


def add_index_commands(commands: Any) -> None:
    """Register ``index build|add|query|stats`` on the CLI's subparsers.

    Parameters
    ----------
    commands : argparse subparsers action
        The ``gpusimhash`` command's subparsers.
    """
    index = commands.add_parser(
        "index", help="build, update, query and describe a search index on disk"
    )
    actions = index.add_subparsers(dest="index_command", required=True, metavar="ACTION")
    fmt = options.HelpFormatter

    build = actions.add_parser(
        "build",
        help="index a file's documents",
        formatter_class=fmt,
        description="Fingerprint a file's documents and save a SimHashIndex to a folder.",
    )
    build.add_argument("input", help="JSONL, Parquet, CSV/TSV or text file")
    build.add_argument("--out", required=True, help="index folder to write")
    build.add_argument("--kind", choices=KINDS, default="flat", help="FAISS index kind")
    build.add_argument("--force", action="store_true", help="replace an index already there")
    options.input_options(build)
    options.hashing_options(build)
    options.common(build)
    build.set_defaults(handler=run_build)

    add = actions.add_parser(
        "add",
        help="add a file's documents to an index",
        formatter_class=fmt,
        description="Add a file's documents to a saved index (saved again atomically).",
    )
    add.add_argument("index", help="index folder")
    add.add_argument("input", help="JSONL, Parquet, CSV/TSV or text file")
    options.input_options(add)
    options.device_option(add)
    options.common(add)
    add.set_defaults(handler=run_add)

    query = actions.add_parser(
        "query",
        help="search an index with texts",
        formatter_class=fmt,
        description="Nearest neighbours (-k) or every entry within a threshold, per query text.",
    )
    query.add_argument("index", help="index folder")
    query.add_argument("texts", nargs="*", metavar="TEXT", help="query texts")
    query.add_argument("--file", help="read query texts from a file (any input format)")
    query.add_argument("-k", type=options.positive_k, default=10, help="neighbours per query")
    options.threshold_options(query)
    query.add_argument("--format", choices=FORMATS, help="format of --file")
    query.add_argument("--text-field", default="text", help="text field of --file")
    options.common(query)
    query.set_defaults(handler=run_query)

    stats = actions.add_parser(
        "stats",
        help="describe an index",
        formatter_class=fmt,
        description="Size, settings and files of a saved index.",
    )
    stats.add_argument("index", help="index folder")
    options.common(stats)
    stats.set_defaults(handler=run_stats)


def _integer_ids(ids: list[Any], path: Path, rows: np.ndarray, field: str) -> np.ndarray:
    """Convert id values to int64, or raise naming the document."""
    import numpy as np

    from gpusimhash.io.readers import InputError

    out = np.empty(len(ids), dtype=np.int64)
    for k, value in enumerate(ids):
        try:
            if isinstance(value, bool | float):
                raise TypeError(value)
            out[k] = int(value)
        except (TypeError, ValueError, OverflowError):
            raise InputError(
                f"{path}, document {int(rows[k])}: index ids must be integers, "
                f"field {field!r} has {value!r}"
            ) from None
    return out


def _fill(index: SimHashIndex, args: argparse.Namespace, path: Path, *, first_build: bool) -> int:
    """Fingerprint the file in batches and add it to the index; return documents added."""
    from gpusimhash import fingerprint
    from gpusimhash.io.readers import read_batches

    def batches() -> Iterator[DocumentBatch]:
        return read_batches(
            path,
            format=args.format,
            text_field=args.text_field,
            id_field=args.id_field,
            batch_size=args.batch_size,
        )

    progress = options.progress_factory(args.quiet)
    if index.featurizer.weighting == "tfidf" and not index.featurizer.is_fitted:
        texts = (t for batch in batches() for t in batch.texts)
        index.featurizer.fit(texts)
    added = 0
    bar = progress(desc="index", unit="doc") if progress else None
    try:
        for batch in batches():
            codes = fingerprint(
                batch.texts,
                bits=index.bits,
                seed=index.seed,
                device=args.device,
                featurizer=index.featurizer,
            )
            if args.id_field is not None:
                ids = _integer_ids(batch.ids, path, batch.rows, args.id_field)
            elif first_build:
                ids = batch.rows
            else:
                ids = None
            index.add(codes, ids)
            added += len(batch)
            if bar is not None:
                bar.update(len(batch))
    finally:
        if bar is not None:
            bar.close()
    return added


def _description(index: SimHashIndex, folder: Path) -> dict[str, Any]:
    """Describe an index for stats and build/add summaries."""
    featurizer = index.featurizer
    files = [p for p in folder.iterdir() if p.is_file()] if folder.is_dir() else []
    return {
        "index": str(folder),
        "entries": len(index),
        "tombstones": index.n_tombstones,
        "bits": index.bits,
        "seed": index.seed,
        "kind": index.kind,
        "params": index.params,
        "analyzer": featurizer.analyzer,
        "ngram": featurizer.ngram,
        "weighting": featurizer.weighting,
        "lowercase": featurizer.lowercase,
        "bytes_on_disk": sum(p.stat().st_size for p in files),
    }


def run_build(args: argparse.Namespace) -> int:
    """Run ``gpusimhash index build``."""
    from gpusimhash import SimHashIndex
    from gpusimhash.io.bundle import writing

    path = options.check_readable(args.input)
    folder = options.prepare_folder(args.out)
    with writing(folder):  # a concurrent build or add into the folder waits
        if (folder / "manifest.json").exists() and not args.force:
            raise UserError(f"{folder} already holds an index: use --force to replace it")
        index = SimHashIndex(
            args.bits, kind=args.kind, seed=args.seed, featurizer=options.featurizer_from(args)
        )
        added = _fill(index, args, path, first_build=True)
        index.save(folder)
    summary = {"added": added, **_description(index, folder)}
    options.emit(args, summary, {f"gpusimhash index build: {folder}": summary})
    return 0


def run_add(args: argparse.Namespace) -> int:
    """Run ``gpusimhash index add``."""
    from gpusimhash.io.bundle import writing

    path = options.check_readable(args.input)
    folder = Path(args.index)
    if not folder.is_dir():
        raise UserError(f"cannot add to {folder}: no such index folder")
    # load, add and save under the folder's writer lock: a concurrent add waits, then adds to
    # this one's result (no lost update, ids continue after the largest)
    with writing(folder):
        index = _load(folder)
        added = _fill(index, args, path, first_build=False)
        index.save(folder)
    summary = {"added": added, **_description(index, folder)}
    options.emit(args, summary, {f"gpusimhash index add: {folder}": summary})
    return 0


def _load(folder: Path, *, mmap: bool = False) -> SimHashIndex:
    """Load a saved index (BundleError, a ValueError, names what is wrong)."""
    from gpusimhash import SimHashIndex

    return SimHashIndex.load(folder, mmap=mmap)


def _query_texts(args: argparse.Namespace) -> list[str]:
    """Collect query texts from the command line and --file."""
    from gpusimhash.io.readers import read_batches

    texts = list(args.texts)
    if args.file:
        path = options.check_readable(args.file)
        for batch in read_batches(path, format=args.format, text_field=args.text_field):
            texts.extend(batch.texts)
    if not texts:
        raise UserError("give query texts, or --file with one query per document")
    return texts


def run_query(args: argparse.Namespace) -> int:
    """Run ``gpusimhash index query``."""
    index = _load(Path(args.index), mmap=True)
    texts = _query_texts(args)
    threshold = args.max_distance is not None or args.min_cosine is not None
    if threshold:
        within = index.range_search(
            texts, max_distance=args.max_distance, min_cosine=args.min_cosine
        )
        groups = [
            (within.ids[a:b], within.distances[a:b], within.cosines[a:b])
            for a, b in zip(within.lims[:-1], within.lims[1:], strict=True)
        ]
    else:
        # no more neighbours than entries: the rest would be -1 padding, dropped below
        nearest = index.search(texts, k=min(args.k, max(len(index), 1)))
        groups = [
            (ids[ids >= 0], distances[ids >= 0], cosines[ids >= 0])
            for ids, distances, cosines in zip(
                nearest.ids, nearest.distances, nearest.cosines, strict=True
            )
        ]
    results: list[dict[str, Any]] = [
        {
            "query": text,
            "results": [
                {"id": int(i), "distance": int(d), "estimated_cosine": round(float(c), 6)}
                for i, d, c in zip(ids, distances, cosines, strict=True)
            ],
        }
        for text, (ids, distances, cosines) in zip(texts, groups, strict=True)
    ]
    if args.json:
        options.emit(args, {"index": args.index, "queries": results}, {})
    elif not args.quiet:
        for n, result in enumerate(results):
            shown = result["query"] if len(result["query"]) <= 60 else result["query"][:57] + "..."
            print(("\n" if n else "") + f"query {n}: {shown}")
            if not result["results"]:
                print("  (no match)")
            for hit in result["results"]:
                print(
                    f"  id {hit['id']:>10}  distance {hit['distance']:>4}  "
                    f"estimated cosine {hit['estimated_cosine']:.4f}"
                )
    return 0


def run_stats(args: argparse.Namespace) -> int:
    """Run ``gpusimhash index stats``."""
    folder = Path(args.index)
    summary = _description(_load(folder, mmap=True), folder)
    options.emit(args, summary, {f"gpusimhash index stats: {folder}": summary})
    return 0

"""The ``gpusimhash index`` commands: build, add to, remove from, query and describe an index.

An index folder is what ``SimHashIndex.save`` writes (FAISS's binary index, tombstones, string
ids and a checksummed manifest with bits, seed and the featurizer). ``build``, ``add`` and
``remove`` hold the folder's writer lock from start to end, so concurrent ones run one after the
other; ``query`` and ``stats`` never wait for them and load the index as it was before or after.

Ids: ``--id-field`` values that are all integers (or integer strings, as CSV gives) in the first
batch built make an index of int64 ids; any other string makes an index of string ids, where
every value is kept as a string. Without ``--id-field``, ``build`` numbers documents by row and
``add`` continues after the largest id stored (int64 ids only).
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpusimhash._choices import FORMATS, KINDS
from gpusimhash.cli import options
from gpusimhash.cli.options import UsageError, UserError

DEFAULT_K = 10
MAX_INT_ID = 2**63  # int64 ids are in [0, 2**63)
# each kind's settings (SimHashIndex(**params)): name, kind, help (the library's defaults, which
# a test checks)
KIND_SETTINGS = (
    ("hash_bits", "multihash", "bits per hash table (default: 16)"),
    ("m", "hnsw", "links per node (default: 32)"),
    ("ef_construction", "hnsw", "candidates kept while adding (default: 40)"),
    ("ef_search", "hnsw", "candidates kept while searching (default: 64)"),
    (
        "nlist",
        "ivf",
        (
            "inverted lists, trained on the first batch, which needs at least as many "
            "documents (default: 256)"
        ),
    ),
    ("nprobe", "ivf", "lists searched per query (default: 16)"),
)

if TYPE_CHECKING:
    import numpy as np

    from gpusimhash.index._index import SimHashIndex
    from gpusimhash.io.lines import LineBatch
    from gpusimhash.io.readers import DocumentBatch


def add_index_commands(commands: Any) -> None:
    """Register ``index build|add|remove|query|stats`` on the CLI's subparsers.

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
    build.add_argument(
        "--overwrite",
        "--force",
        dest="overwrite",
        action="store_true",
        help="replace an index already there (as dedup's --overwrite; --force: the old name)",
    )
    settings = build.add_argument_group("kind settings (each for its --kind only)")
    for name, kind, text in KIND_SETTINGS:
        flag = name.replace("_", "-")
        settings.add_argument(
            f"--{flag}",
            type=functools.partial(options.integer, name=flag, low=1),
            metavar="N",
            help=f"{kind}: {text}",
        )
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

    remove = actions.add_parser(
        "remove",
        help="remove entries from an index by id",
        formatter_class=fmt,
        description="Remove entries by id (unknown ids are counted, not an error); saved again "
        "atomically.",
    )
    remove.add_argument("index", help="index folder")
    remove.add_argument("ids", nargs="*", metavar="ID", help="ids to remove")
    remove.add_argument("--file", help="text file with one id per line")
    options.common(remove)
    remove.set_defaults(handler=run_remove)

    query = actions.add_parser(
        "query",
        help="search an index with texts or stored entries",
        formatter_class=fmt,
        description="Nearest neighbours (-k) or every entry within a threshold (the nearest -k "
        "of them when -k is given), per query text or stored id.",
    )
    query.add_argument("index", help="index folder")
    query.add_argument("texts", nargs="*", metavar="TEXT", help="query texts")
    query.add_argument("--file", help="read query texts from a file (any input format)")
    query.add_argument(
        "--id",
        action="append",
        default=[],
        dest="query_ids",
        metavar="ID",
        help="query with a stored entry's code (repeatable)",
    )
    query.add_argument(
        "-k",
        type=options.positive_k,
        help=f"neighbours per query (default: {DEFAULT_K}; with a threshold: all within it)",
    )
    options.threshold_options(query)
    query.add_argument("--format", choices=FORMATS, help="format of --file")
    query.add_argument(
        "--text-field", default="text", action=options.Given, help="text field of --file"
    )
    query.add_argument("--id-field", help="field of --file with query ids (shown as query_id)")
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


def _integer(value: Any) -> int | None:
    """Return an id value as an int, or None if it is no integer (nor an integer string)."""
    if isinstance(value, bool | float) or not isinstance(value, int | str):
        return None
    try:
        return int(value)
    except ValueError:
        return None


def _batch_ids(
    index: SimHashIndex, batch: DocumentBatch | LineBatch, path: Path, field: str
) -> list[Any]:
    """Return a batch's ids for this index: integers, or strings for an index of string ids."""
    values = list(batch.ids)
    for k, value in enumerate(values):
        if isinstance(value, bool) or not isinstance(value, int | str):
            raise UserError(
                f"{path}, document {int(batch.rows[k]) + 1:,}: field {field!r} has {value!r}, "
                "expected a string or an integer id"
            )
    as_int = [_integer(value) for value in values]
    empty = len(index) == 0 and index.n_tombstones == 0
    if index.id_type == "key" or (empty and None in as_int):
        return [str(value) for value in values]
    for k, number in enumerate(as_int):
        if number is None:
            raise UserError(
                f"{path}, document {int(batch.rows[k]) + 1:,}: this index has integer ids, field "
                f"{field!r} has {values[k]!r}"
            )
    return as_int


def _fill(index: SimHashIndex, args: argparse.Namespace, path: Path, *, first_build: bool) -> int:
    """Fingerprint the file in batches and add it to the index; return documents added."""
    from gpusimhash import fingerprint
    from gpusimhash.io.lines import document_batches
    from gpusimhash.io.readers import read_batches

    def batches() -> Iterator[DocumentBatch]:
        return read_batches(
            path,
            format=args.format,
            text_field=args.text_field,
            id_field=args.id_field,
            batch_size=args.batch_size,
        )

    untrained_ivf = _untrained_ivf(index)
    if untrained_ivf is not None and args.quiet:
        # used by FAISS only to warn on stderr when a list gets under 39 training codes
        untrained_ivf.cp.min_points_per_centroid = 0
    progress = options.progress_factory(args.quiet)
    if index.featurizer.weighting == "tfidf" and not index.featurizer.is_fitted:
        texts = (t for batch in batches() for t in batch.texts)
        index.featurizer.fit(texts)
    added = 0
    bar = progress(desc="index", unit="doc") if progress else None
    try:  # plain text as UTF-8 bytes (LineBatch): no string per line
        for batch in document_batches(
            path,
            format=args.format,
            text_field=args.text_field,
            id_field=args.id_field,
            batch_size=args.batch_size,
        ):
            if untrained_ivf is not None and added == 0:
                _check_training_batch(index, len(batch), path, args.batch_size)
            codes = fingerprint(
                batch.texts,
                bits=index.bits,
                seed=index.seed,
                device=args.device,
                featurizer=index.featurizer,
            )
            ids: Any
            if args.id_field is not None:
                ids = _batch_ids(index, batch, path, args.id_field)
            elif index.id_type == "key":
                raise UsageError(f"{path}: this index has string ids: give --id-field")
            elif first_build:
                ids = batch.rows
            else:
                ids = None
            try:
                index.add(codes, ids)
            except ValueError as error:  # an id repeated, or already in the index
                raise UserError(f"{_where_id(path, index, batch, ids)}: {error}") from None
            added += len(batch)
            if bar is not None:
                bar.update(len(batch))
    finally:
        if bar is not None:
            bar.close()
    return added


def _where_id(path: Path, index: SimHashIndex, batch: Any, ids: Any) -> str:
    """Name the document whose id ``index.add`` refused: the file, and the document there.

    The first document whose id an earlier one of the batch has, else the first whose id the
    index holds; the file alone where neither is found (an id removed but still tombstoned).
    """
    if ids is None:
        return str(path)
    values = list(ids.tolist() if hasattr(ids, "tolist") else ids)
    seen: set[Any] = set()
    for k, value in enumerate(values):
        if value in seen:
            return f"{path}, document {int(batch.rows[k]) + 1:,}"
        seen.add(value)
    stored = set(index.ids().tolist())
    held = [k for k, value in enumerate(values) if value in stored]
    return f"{path}, document {int(batch.rows[held[0]]) + 1:,}" if held else str(path)


def _untrained_ivf(index: SimHashIndex) -> Any:
    """Return an IVF index's untrained FAISS index (trained on the first batch added), or None."""
    if index.kind != "ivf":
        return None
    import faiss

    inner = faiss.downcast_IndexBinary(index.faiss_index.index)
    return None if inner.is_trained else inner


def _check_training_batch(index: SimHashIndex, n: int, path: Path, batch_size: int) -> None:
    """Raise UserError when the first batch, which trains an IVF index, is too small for it."""
    nlist = index.params["nlist"]
    if n >= nlist:
        return
    larger = ", or a larger --batch-size" if n == batch_size else ""
    raise UserError(
        f"{path}: an IVF index with nlist={nlist} is trained on its first batch, which needs "
        f"at least {nlist} codes, got {n}: give --nlist {n} or less{larger}"
    )


def _description(index: SimHashIndex, folder: Path) -> dict[str, Any]:
    """Describe an index for stats and build/add summaries."""
    featurizer = index.featurizer
    files = [p for p in folder.iterdir() if p.is_file()] if folder.is_dir() else []
    return {
        "index": str(folder),
        "entries": len(index),
        "tombstones": index.n_tombstones,
        "id_type": index.id_type,
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


def _kind_settings(args: argparse.Namespace) -> dict[str, Any]:
    """Return the kind settings given (``--nlist``...); UsageError for one of another kind."""
    given = {name: getattr(args, name) for name, _, _ in KIND_SETTINGS}
    for name, kind, _ in KIND_SETTINGS:
        if given[name] is not None and kind != args.kind:
            flag = name.replace("_", "-")
            raise UsageError(f"--{flag} is a setting of --kind {kind}, not of --kind {args.kind}")
    return {name: value for name, value in given.items() if value is not None}


def run_build(args: argparse.Namespace) -> int:
    """Run ``gpusimhash index build``."""
    from gpusimhash import SimHashIndex
    from gpusimhash.io.bundle import writing

    path = options.check_readable(args.input)
    try:
        index = SimHashIndex(
            args.bits,
            kind=args.kind,
            seed=args.seed,
            featurizer=options.featurizer_from(args),
            **_kind_settings(args),
        )
    except ValueError as error:  # a kind setting out of range
        raise UsageError(f"--kind {args.kind}: {error}") from None
    options.check_fields(args, [path])
    folder = options.prepare_folder(args.out)
    with writing(folder):  # a concurrent build or add into the folder waits
        if (folder / "manifest.json").exists() and not args.overwrite:
            raise UserError(f"{folder} already holds an index: give --overwrite to replace it")
        added = _fill(index, args, path, first_build=True)
        index.save(folder)
    summary = {"added": added, **_description(index, folder)}
    options.emit(args, summary, {f"gpusimhash index build: {folder}": summary})
    return 0


def run_add(args: argparse.Namespace) -> int:
    """Run ``gpusimhash index add``."""
    from gpusimhash.io.bundle import writing

    path = options.check_readable(args.input)
    options.check_fields(args, [path])
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


def _command_line_ids(index: SimHashIndex, values: list[str]) -> list[Any]:
    """Ids typed on the command line, as this index stores them."""
    if index.id_type == "key":
        stored = set(index.ids().tolist())
        # an index built in Python may mix int keys with strings: "7" finds 7 when no "7"
        return [v if v in stored or _integer(v) not in stored else _integer(v) for v in values]
    numbers = [_integer(v) for v in values]
    bad = [v for v, n in zip(values, numbers, strict=True) if n is None]
    if bad:
        raise UsageError(f"this index has integer ids, got {bad[0]!r}")
    return numbers


def _int64(number: Any) -> bool:
    """Whether an id is an int in the range of int64 ids, ``[0, 2**63)``."""
    return isinstance(number, int) and 0 <= number < MAX_INT_ID


def _query_codes(index: SimHashIndex, values: list[str], folder: str) -> tuple[list[Any], Any]:
    """Return ``--id``'s ids as the index stores them and their codes; UserError if absent."""
    ids = _command_line_ids(index, values)
    if index.id_type == "int64":
        for value, number in zip(values, ids, strict=True):
            if not _int64(number):
                raise UsageError(
                    f"--id {value}: not an id of this index, whose ids are integers in [0, 2**63)"
                )
    try:
        return ids, index.codes_of(ids)
    except KeyError as error:
        live = set(index.ids().tolist())
        absent = [v for v, i in zip(values, ids, strict=True) if i not in live]
        if not absent:
            raise UserError(f"{folder}: {error.args[0]}") from None
        shown = absent[0] if index.id_type == "int64" else repr(absent[0])
        raise UserError(f"{folder}: --id {shown} is not in the index") from None


def _id_lines(path: Path) -> list[str]:
    """Return a ``--file``'s ids, one a line, blank ones left out; UserError names a bad line."""
    values = []
    for number, line in enumerate(path.read_bytes().splitlines(), 1):
        try:
            values.append(line.decode("utf-8").strip())
        except UnicodeDecodeError as error:
            raise UserError(f"{path}, line {number}: not valid UTF-8 ({error.reason})") from None
    return [value for value in values if value]


def _queries(args: argparse.Namespace, index: SimHashIndex) -> tuple[list[dict[str, Any]], Any]:
    """Each query's description (text, and id) and the codes to search with."""
    import numpy as np

    from gpusimhash.io.readers import read_batches

    labels: list[dict[str, Any]] = [{"query": text} for text in args.texts]
    if args.file:
        path = options.check_readable(args.file)
        options.check_fields(args, [path])
        batches = read_batches(
            path, format=args.format, text_field=args.text_field, id_field=args.id_field
        )
        for batch in batches:
            ids = batch.ids if args.id_field is not None else [None] * len(batch.texts)
            for text, query_id in zip(batch.texts, ids, strict=True):
                labels.append(
                    {"query": text} if query_id is None else {"query_id": query_id, "query": text}
                )
    codes = [index.to_codes([label["query"] for label in labels])]
    if args.query_ids:
        ids, id_codes = _query_codes(index, args.query_ids, args.index)
        codes.append(id_codes)
        labels += [{"query_id": i} for i in ids]
    return labels, np.concatenate(codes)


def _hits(args: argparse.Namespace, index: SimHashIndex, codes: np.ndarray) -> list[Any]:
    """Each query's hits (ids, distances, estimated cosines), nearest first."""
    if args.max_distance is None and args.min_cosine is None:
        # no more neighbours than entries: the rest would be padding
        k = min(args.k or DEFAULT_K, max(len(index), 1))
        nearest = index.search(codes, k=k)
        return [nearest.query(q) for q in range(nearest.n_queries)]
    within = index.range_search(codes, max_distance=args.max_distance, min_cosine=args.min_cosine)
    hits = [within.query(q) for q in range(within.n_queries)]
    if args.k is not None:  # the k nearest within the threshold
        hits = [type(h)(*(field[: args.k] for field in h)) for h in hits]
    return hits


def _plain(value: Any) -> Any:
    """Return a NumPy scalar id as a JSON-ready Python value."""
    return value.item() if hasattr(value, "item") else value


def run_query(args: argparse.Namespace) -> int:
    """Run ``gpusimhash index query``."""
    if not (args.texts or args.file or args.query_ids):
        raise UsageError("give query texts, --file with one query per document, or --id")
    describing = [
        flag
        for flag, given in (
            ("--format", args.format is not None),
            ("--text-field", options.given(args, "text_field")),
            ("--id-field", args.id_field is not None),
        )
        if given
    ]
    if describing and not args.file:
        raise UsageError(f"{' and '.join(describing)} describe --file: give --file")
    index = _load(Path(args.index), mmap=True)
    labels, codes = _queries(args, index)
    results: list[dict[str, Any]] = []
    for label, hits in zip(labels, _hits(args, index, codes), strict=True):
        entry = {key: _plain(value) for key, value in label.items()}
        entry["results"] = [
            {"id": _plain(i), "distance": int(d), "estimated_cosine": round(float(c), 6)}
            for i, d, c in zip(*hits, strict=True)
        ]
        results.append(entry)
    if args.json:
        options.emit(args, {"index": args.index, "queries": results}, {})
    elif not args.quiet:
        for n, result in enumerate(results):
            text = result.get("query", "")
            shown = text if len(text) <= 60 else text[:57] + "..."
            if "query_id" in result:
                shown = f"id {result['query_id']}" + (f": {shown}" if shown else "")
            print(("\n" if n else "") + f"query {n}: {shown}")
            if not result["results"]:
                print("  (no match)")
            for hit in result["results"]:
                print(
                    f"  id {hit['id']!s:>10}  distance {hit['distance']:>4}  "
                    f"estimated cosine {hit['estimated_cosine']:.4f}"
                )
    return 0


def run_remove(args: argparse.Namespace) -> int:
    """Run ``gpusimhash index remove``."""
    from gpusimhash.io.bundle import writing

    values = list(args.ids)
    if args.file:
        path = options.check_readable(args.file)
        values += _id_lines(path)
    if not values:
        raise UsageError("give ids to remove, or --file with one id per line")
    folder = Path(args.index)
    if not folder.is_dir():
        raise UserError(f"cannot remove from {folder}: no such index folder")
    with writing(folder):  # load, remove, save: a concurrent add or remove waits
        index = _load(folder)
        ids = _command_line_ids(index, values)
        if index.id_type == "int64":  # one out of range is not in the index either
            ids = [i for i in ids if _int64(i)]
        removed = index.remove(ids)
        index.save(folder)
    summary = {"removed": removed, "not_found": len(set(values)) - removed}
    summary.update(_description(index, folder))
    options.emit(args, summary, {f"gpusimhash index remove: {folder}": summary})
    return 0


def run_stats(args: argparse.Namespace) -> int:
    """Run ``gpusimhash index stats``."""
    folder = Path(args.index)
    summary = _description(_load(folder, mmap=True), folder)
    options.emit(args, summary, {f"gpusimhash index stats: {folder}": summary})
    return 0

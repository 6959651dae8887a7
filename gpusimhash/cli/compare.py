"""``gpusimhash compare``: fingerprint two texts (or files), compare them, say why.

The verdict uses dedup's rule: two documents are near-duplicates when the exact cosine of their
weighted features (or, with ``--min-jaccard``, the Jaccard similarity of their feature sets)
reaches the threshold; with ``--max-distance``, when their fingerprints are within that Hamming
radius (dedup's ``--no-verify``). The features the two share, and those only one of them has,
come heaviest first.
"""

from __future__ import annotations

import argparse
import functools
import math
from typing import Any

from gpusimhash._choices import WEIGHTINGS
from gpusimhash.cli import dedup as dedup_command
from gpusimhash.cli import options
from gpusimhash.cli.options import UserError

# compare gives dedup's verdict, with dedup's defaults (tests/cli/test_cli_defaults.py checks)
DEFAULT_MIN_COSINE = dedup_command.DEFAULT_MIN_COSINE
DEFAULT_BITS = dedup_command.DEFAULT_BITS
shown = functools.partial(options.integer, name="show", low=0)
jaccard = functools.partial(
    options.number, name="min-jaccard", low=0.0, high=1.0, open_interval=False
)


def add_compare_command(commands: Any) -> None:
    """Register ``compare`` on the CLI's subparsers.

    Parameters
    ----------
    commands : argparse subparsers action
        The ``gpusimhash`` command's subparsers.
    """
    compare = commands.add_parser(
        "compare",
        help="compare two texts or files: similarity, verdict and the features behind it",
        description="Fingerprint two texts (or, with --files, two files): Hamming distance, "
        "estimated and exact cosine, Jaccard similarity, whether dedup would call them "
        "near-duplicates, and the features they share and do not.",
        formatter_class=options.HelpFormatter,
    )
    compare.add_argument("text_a", metavar="TEXT_A", help="first text (a file with --files)")
    compare.add_argument("text_b", metavar="TEXT_B", help="second text (a file with --files)")
    compare.add_argument(
        "--files", action="store_true", help="TEXT_A and TEXT_B name UTF-8 files to compare whole"
    )
    verdict = compare.add_argument_group("verdict (one of)").add_mutually_exclusive_group()
    verdict.add_argument(
        "--min-cosine",
        type=options.cosine,
        help=f"exact cosine of the weighted features (default: {DEFAULT_MIN_COSINE}, as dedup)",
    )
    verdict.add_argument(
        "--min-jaccard", type=jaccard, help="Jaccard similarity of the feature sets"
    )
    verdict.add_argument(
        "--max-distance", type=options.radius, help="Hamming distance of the fingerprints"
    )
    compare.add_argument(
        "--show", type=shown, default=10, help="features listed per kind (shared, only A, only B)"
    )
    # tf-idf needs a corpus to fit: two texts are not one
    fixed = tuple(w for w in WEIGHTINGS if w != "tfidf")
    options.hashing_options(compare, weightings=fixed)
    compare.set_defaults(bits=DEFAULT_BITS)
    options.common(compare)
    compare.set_defaults(handler=run_compare)


def big_int_hex(code: Any) -> str:
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


def feature_differences(
    a: dict[str, float], b: dict[str, float], show: int
) -> dict[str, list[list[Any]]]:
    """List the features two documents share and those only one has, heaviest first.

    Parameters
    ----------
    a, b : dict of str to float
        Features and weights (`gpusimhash.TextFeaturizer.features`).
    show : int
        Features listed per kind, at most.

    Returns
    -------
    dict
        ``shared`` (``[feature, weight in a, weight in b]``, by the smaller weight), ``only_a``
        and ``only_b`` (``[feature, weight]``); ties in input order.

    Examples
    --------
    >>> feature_differences({"cat": 2.0, "sat": 1.0}, {"cat": 1.0, "ran": 1.0}, 5)
    {'shared': [['cat', 2.0, 1.0]], 'only_a': [['sat', 1.0]], 'only_b': [['ran', 1.0]]}
    """
    shared = sorted(
        ((f, w, b[f]) for f, w in a.items() if f in b), key=lambda r: -min(abs(r[1]), abs(r[2]))
    )
    only_a = sorted(((f, w) for f, w in a.items() if f not in b), key=lambda r: -abs(r[1]))
    only_b = sorted(((f, w) for f, w in b.items() if f not in a), key=lambda r: -abs(r[1]))
    return {
        "shared": [list(row) for row in shared[:show]],
        "only_a": [list(row) for row in only_a[:show]],
        "only_b": [list(row) for row in only_b[:show]],
    }


def _read(path: str) -> str:
    """Read a file named on the command line as one text."""
    target = options.check_readable(path)
    try:
        return target.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise UserError(f"{path}: not valid UTF-8 (byte {error.start})") from None


def _verdict(
    args: argparse.Namespace, distance: int, cosine: float, jaccard: float
) -> dict[str, Any]:
    """Whether dedup would call the two near-duplicates, and by which measure."""
    if args.max_distance is not None:
        measure, value, threshold = "distance", float(distance), float(args.max_distance)
        yes = distance <= args.max_distance
    elif args.min_jaccard is not None:
        measure, value, threshold = "jaccard", jaccard, args.min_jaccard
        yes = value >= threshold
    else:
        measure, value = "cosine", cosine
        threshold = DEFAULT_MIN_COSINE if args.min_cosine is None else args.min_cosine
        yes = value >= threshold  # NaN (no features) is never a near-duplicate
    return {"measure": measure, "threshold": threshold, "near_duplicate": bool(yes)}


def run_compare(args: argparse.Namespace) -> int:
    """Run ``gpusimhash compare``."""
    import numpy as np

    from gpusimhash import estimate_cosine, fingerprint, hamming
    from gpusimhash.fingerprinting import featurize
    from gpusimhash.verify._features import DocumentFeatures

    featurizer = options.featurizer_from(args)
    texts = [_read(args.text_a), _read(args.text_b)] if args.files else [args.text_a, args.text_b]
    codes = fingerprint(
        texts, bits=args.bits, seed=args.seed, device=args.device, featurizer=featurizer
    )
    distance = int(hamming(codes[:1], codes[1:])[0])
    estimated = float(estimate_cosine(codes[:1], codes[1:])[0])
    exact = DocumentFeatures.from_batch(featurize(texts, featurizer)).similarities(
        np.array([[0, 1]])
    )
    cosine, jaccard_value = float(exact.cosine[0]), float(exact.jaccard[0])
    verdict = _verdict(args, distance, cosine, jaccard_value)
    features = [featurizer.features(text) for text in texts]
    differences = feature_differences(features[0], features[1], args.show)
    payload: dict[str, Any] = {
        "bits": args.bits,
        "seed": args.seed,
        "fingerprint_a": big_int_hex(codes[0]),
        "fingerprint_b": big_int_hex(codes[1]),
        "distance": distance,
        "estimated_cosine": estimated,
        "cosine": None if math.isnan(cosine) else cosine,
        "jaccard": None if math.isnan(jaccard_value) else jaccard_value,
        **verdict,
        "features_a": len(features[0]),
        "features_b": len(features[1]),
        "features_shared": sum(f in features[1] for f in features[0]),
        **differences,
    }
    if args.json:
        options.emit(args, payload, {})
    elif not args.quiet:
        _print_comparison(payload)
    return 0


def _print_comparison(payload: dict[str, Any]) -> None:
    """Print the comparison as a table, the verdict first, then the features."""
    undefined = "undefined (a text without features)"
    measure, threshold = payload["measure"], payload["threshold"]
    value = payload[measure]
    if value is None:
        reason = f"{measure} undefined (a text without features)"
    else:
        holds = payload["near_duplicate"]
        sign = ("<=" if holds else ">") if measure == "distance" else (">=" if holds else "<")
        reason = f"{measure} {value:.4g} {sign} {threshold:g}"
    answer = "near-duplicates" if payload["near_duplicate"] else "not near-duplicates"
    rows = {
        "verdict": f"{answer}: {reason}",
        **{k: payload[k] for k in ("bits", "seed", "fingerprint_a", "fingerprint_b")},
        "distance": payload["distance"],
        "estimated_cosine": payload["estimated_cosine"],
        "cosine": undefined if payload["cosine"] is None else payload["cosine"],
        "jaccard": undefined if payload["jaccard"] is None else payload["jaccard"],
        "features": f"{payload['features_a']:,} in A, {payload['features_b']:,} in B, "
        f"{payload['features_shared']:,} shared",
    }
    options.print_table("gpusimhash compare", rows)
    for kind, title in (("shared", "shared"), ("only_a", "only in A"), ("only_b", "only in B")):
        if payload[kind]:
            listed = ", ".join(f"{row[0]!r} {row[1]:g}" for row in payload[kind])
            print(f"  {title + ':':<17} {listed}")

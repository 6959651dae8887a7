"""``gpusimhash compare``: fingerprint two texts and compare them."""

from __future__ import annotations

import argparse
import math
from typing import Any

from gpusimhash.cli import options
from gpusimhash.cli.options import UserError


def add_compare_command(commands: Any) -> None:
    """Register ``compare`` on the CLI's subparsers.

    Parameters
    ----------
    commands : argparse subparsers action
        The ``gpusimhash`` command's subparsers.
    """
    compare = commands.add_parser(
        "compare",
        help="fingerprint two texts and compare them",
        description="Fingerprint two texts: Hamming distance, estimated and true cosine.",
        formatter_class=options.HelpFormatter,
    )
    compare.add_argument("text_a")
    compare.add_argument("text_b")
    options.hashing_options(compare)
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


def run_compare(args: argparse.Namespace) -> int:
    """Run ``gpusimhash compare``."""
    from gpusimhash import estimate_cosine, fingerprint, hamming
    from gpusimhash.evaluation import true_cosines

    if args.weighting == "tfidf":
        raise UserError("--weighting tfidf needs a corpus to fit; compare two texts with another")
    featurizer = options.featurizer_from(args)
    texts = [args.text_a, args.text_b]
    codes = fingerprint(
        texts, bits=args.bits, seed=args.seed, device=args.device, featurizer=featurizer
    )
    distance = int(hamming(codes[:1], codes[1:])[0])
    estimated = float(estimate_cosine(codes[:1], codes[1:])[0])
    true = float(true_cosines(featurizer, texts[:1], texts[1:])[0])
    payload = {
        "bits": args.bits,
        "seed": args.seed,
        "fingerprint_a": big_int_hex(codes[0]),
        "fingerprint_b": big_int_hex(codes[1]),
        "hamming_distance": distance,
        "estimated_cosine": estimated,
        "true_cosine": None if math.isnan(true) else true,
    }
    rows = dict(payload)
    if rows["true_cosine"] is None:
        rows["true_cosine"] = "undefined (a text without features)"
    options.emit(args, payload, {"gpusimhash compare": rows})
    return 0

"""Each task has one set of defaults, shared by its command and its Python entry point.

dedup (``gpusimhash dedup``, ``dedup_file``, ``verified_near_duplicates``): 256 bits, exact
cosine 0.8, candidate recall 0.99; the index (``gpusimhash index``, ``SimHashIndex``): 128 bits,
kind flat, k 10; ``compare`` gives dedup's verdict with dedup's defaults. Read from the parsers,
not from the constants, so that an option's default can never drift from the library's.
"""

import inspect

import pytest

import gpusimhash
from gpusimhash import SimHashIndex, TextFeaturizer, verify
from gpusimhash.cli import build_parser
from gpusimhash.dedup.options import DedupOptions
from gpusimhash.dedup.pipeline import dedup_file


def parsed(*args):
    return build_parser().parse_args(list(args))


def default(function, name):
    return inspect.signature(function).parameters[name].default


def featurizer_defaults(args):
    built = TextFeaturizer()
    assert (args.analyzer, args.ngram, args.weighting, not args.no_lowercase) == (
        built.analyzer,
        built.ngram,
        built.weighting,
        built.lowercase,
    )


def test_dedup_command_and_python_share_defaults():
    args = parsed("dedup", "in.jsonl")
    assert args.bits == default(dedup_file, "bits") == 256
    assert args.bits == default(gpusimhash.verified_near_duplicates, "bits")
    assert args.seed == default(dedup_file, "seed") == 0
    # no threshold on the command line: the library's default applies, to both
    assert (args.min_cosine, args.min_jaccard) == (None, None)
    assert DedupOptions().threshold(256).value == verify.DEFAULT_MIN_COSINE == 0.8
    recall = DedupOptions().candidate_recall
    assert (
        args.candidate_recall
        == recall
        == default(gpusimhash.verified_near_duplicates, "candidate_recall")
    )
    assert (args.cluster, args.keep) == (DedupOptions().cluster, DedupOptions().keep)
    featurizer_defaults(args)


@pytest.mark.parametrize("action", ["build", "query"])
def test_index_command_and_simhashindex_share_defaults(action):
    if action == "build":
        args = parsed("index", "build", "in.jsonl", "--out", "idx")
        assert args.bits == default(SimHashIndex, "bits") == 128
        assert args.kind == default(SimHashIndex, "kind") == "flat"
        assert args.seed == default(SimHashIndex, "seed")
        featurizer_defaults(args)
    else:
        from gpusimhash.cli import index as index_command

        args = parsed("index", "query", "idx", "text")
        assert args.k is None  # kNN with the library's k; a threshold without -k: all within it
        assert index_command.DEFAULT_K == default(SimHashIndex.search, "k") == 10
        assert (args.max_distance, args.min_cosine) == (None, None)


def test_compare_gives_dedups_verdict_with_dedups_defaults():
    from gpusimhash.cli import compare

    args = parsed("compare", "a", "b")
    assert args.bits == parsed("dedup").bits
    assert compare.DEFAULT_MIN_COSINE == verify.DEFAULT_MIN_COSINE
    assert (args.min_cosine, args.min_jaccard, args.max_distance) == (None, None, None)
    featurizer_defaults(args)

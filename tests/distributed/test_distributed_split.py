"""Crowded buckets joined in shares: the same pairs as the whole join, on one machine and on Dask."""

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusimhash.codes import code_words
from gpusimhash.datasets.synth import CorpusSpec, generate
from gpusimhash.dedup.pipeline import dedup_file
from gpusimhash.join import _mih as mih
from gpusimhash.join._groups import collapse

distributed = pytest.importorskip("distributed")

from gpusimhash.dedup.options import DedupOptions
from gpusimhash.distributed import _tables as tables
from gpusimhash.distributed._pipeline import _Run
from gpusimhash.fingerprinting import FingerprintSettings
from gpusimhash.io.inputs import input_files
from gpusimhash.text import TextFeaturizer

pytestmark = pytest.mark.slow  # Dask workers start in every test


def _even_plan(bits, radius, m):
    """m near-equal blocks with thresholds summing to radius - m + 1 (all >= 0)."""
    widths = [bits // m + (i < bits % m) for i in range(m)]
    spare = radius - m + 1
    thresholds = [spare // m + (i < spare % m) for i in range(m)]
    los = np.cumsum([0, *widths[:-1]]).tolist()
    return mih.Plan("mih", tuple(zip(los, widths, thresholds, strict=True)), 0.0)


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(0, 400),
    bits=st.sampled_from([8, 64, 128]),
    radius=st.integers(0, 12),
    shares=st.integers(1, 7),
    kind=st.sampled_from(["brute", "planner", "pigeonhole", "few"]),
    flips=st.sampled_from([0.02, 0.1, 0.5]),
)
def test_union_of_shares_is_the_join_each_pair_once(seed, n, bits, radius, shares, kind, flips):
    rng = np.random.default_rng(seed)
    base = rng.integers(0, 256, (max(1, n // 8), bits // 8), dtype=np.uint8)
    codes = np.unpackbits(base[rng.integers(0, base.shape[0], n)], axis=1, bitorder="little")
    codes = np.packbits(codes ^ (rng.random(codes.shape) < flips), axis=1, bitorder="little")
    words, _ = collapse(code_words(codes))
    radius = min(radius, bits - 1)
    m = {"pigeonhole": radius + 1, "few": max(1, -(-bits // 16))}.get(kind, 0)
    if kind == "brute" or (m and (m > radius + 1 or -(-bits // m) > 16)):
        chosen = mih.Plan("brute", (), 0.0)
    elif kind == "planner":
        chosen = mih.plan(words, bits, radius)
    else:
        chosen = _even_plan(bits, radius, m)
    found = [mih.join_share(words, bits, radius, s, shares, chosen=chosen) for s in range(shares)]
    union = np.concatenate([np.zeros((0, 2), np.int64), *found])
    keys = union[:, 0] * max(1, words.shape[0]) + union[:, 1]
    assert np.unique(keys).size == keys.size  # each pair from one share only
    expected = mih.join_pairs(words, bits, radius, chosen=chosen)
    np.testing.assert_array_equal(union[np.argsort(keys)], expected)
    assert all(f.dtype == np.int64 and (f[:, 0] < f[:, 1]).all() for f in found)


@pytest.mark.parametrize("kind", ["planner", "few"])
def test_shares_do_not_depend_on_the_threads_where_they_run(monkeypatch, kind):
    # shares of one join may run on machines of different thread counts
    rng = np.random.default_rng(5)
    base = rng.integers(0, 256, (300, 8), dtype=np.uint8)
    codes = np.unpackbits(base[rng.integers(0, 300, 3000)], axis=1, bitorder="little")
    codes = np.packbits(codes ^ (rng.random(codes.shape) < 0.03), axis=1, bitorder="little")
    words, _ = collapse(code_words(codes))
    chosen = mih.plan(words, 64, 5) if kind == "planner" else _even_plan(64, 5, 4)
    expected = mih.join_pairs(words, 64, 5, chosen=chosen)
    found = []
    for s, threads in enumerate([1, 3, 2, 5]):
        monkeypatch.setattr(mih, "threads", lambda threads=threads: threads)
        found.append(mih.join_share(words, 64, 5, s, 4, chosen=chosen))
    union = np.concatenate(found)
    assert len(union) == len(expected) > 100
    np.testing.assert_array_equal(union[np.lexsort(union.T[::-1])], expected)


def test_brute_shares_cut_the_query_chunks(monkeypatch):
    # shares of a brute-force plan start and stop inside the FAISS query chunks
    monkeypatch.setattr(mih, "_BRUTE_QUERIES", 7)
    rng = np.random.default_rng(3)
    words, _ = collapse(code_words(rng.integers(0, 4, (300, 8), dtype=np.uint8)))
    brute = mih.Plan("brute", (), 0.0)
    expected = mih.join_pairs(words, 64, 20, chosen=brute)
    assert len(expected) > 1000
    for shares in (2, 5, 11):
        found = [mih.join_share(words, 64, 20, s, shares, chosen=brute) for s in range(shares)]
        assert sum(map(len, found)) == len(expected)
        union = np.concatenate(found)
        np.testing.assert_array_equal(union[np.lexsort(union.T[::-1])], expected)


def test_bad_share():
    words = np.zeros((3, 1), dtype=np.uint64)
    brute = mih.Plan("brute", (), 0.0)
    for share, shares in ((2, 2), (-1, 3), (0, 0)):
        with pytest.raises(ValueError, match="share must be in"):
            mih.join_share(words, 64, 1, share, shares, chosen=brute)
    with pytest.raises(ValueError, match="thresholds cover"):
        mih.join_share(words, 64, 3, 0, 2, chosen=mih.Plan("mih", ((0, 16, 1),), 0.0))


# ------------------------------------------------------------------ Dask

FAST = {"bits": 128, "max_distance": 8, "id_field": "id"}  # 9 pigeonhole tables of 14 bits


def _records():
    """Synthetic near-duplicates, and a boilerplate text whose variants crowd keys."""
    records = [
        {"id": f"d{d.id}", "text": d.text}
        for d in generate(CorpusSpec(n_docs=500, seed=11, max_length=40))
    ]
    rng = np.random.default_rng(0)
    base = " ".join(f"w{k}" for k in range(80))
    for k in range(150):
        extra = " ".join(f"u{v}" for v in rng.integers(0, 10**6, 3))
        records.append({"id": f"b{k}", "text": f"{base} {extra}"})
    records.insert(200, {"id": "empty", "text": ""})
    order = np.random.default_rng(1).permutation(len(records))
    return [records[i] for i in order]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """The corpus as one file and as 5 partitions."""
    root = tmp_path_factory.mktemp("crowded")
    records = _records()
    (root / "all.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    parts = root / "parts"
    parts.mkdir()
    for p, chunk in enumerate(np.array_split(np.arange(len(records)), 5)):
        lines = "".join(json.dumps(records[i]) + "\n" for i in chunk)
        (parts / f"part{p}.jsonl").write_text(lines)
    return root


def _run(corpus, out, monkeypatch, split_codes):
    """Dedup the partitions on 2 in-process workers; return the result and candidate pairs."""
    monkeypatch.setattr(tables, "SPLIT_CODES", split_codes)
    monkeypatch.setattr(tables, "_SHARE_SECONDS", 1e-12)  # tiny buckets in 8 shares
    # what the clustering consumes (it lets the futures go once used): (p, 2) int64 pairs of
    # code names, lower first
    found = []
    cluster = _Run._cluster

    def gathered_first(run, stats):
        found.extend(run.client.gather(run.candidates))
        return cluster(run, stats)

    monkeypatch.setattr(_Run, "_cluster", gathered_first)
    with distributed.Client(
        processes=False, n_workers=2, threads_per_worker=1, dashboard_address=":0"
    ) as client:
        run = _Run(
            client=client,
            paths=input_files(corpus / "parts"),
            out_dir=out,
            settings=FingerprintSettings(bits=FAST["bits"], seed=0, featurizer=TextFeaturizer()),
            options=DedupOptions(**{k: v for k, v in FAST.items() if k != "bits"}),
            cluster_workers=2,
            on_driver=False,
        )
        result = run.execute()
    assert all(f.dtype == np.int64 and f.ndim == 2 and (f[:, 0] < f[:, 1]).all() for f in found)
    pairs = np.concatenate(found)
    return result, pairs[np.lexsort(pairs.T[::-1])]


def test_split_buckets_give_the_unsplit_and_single_machine_result(
    corpus, tmp_path, monkeypatch, force_join
):
    force_join("tables")  # the planner takes the tiles for so few codes
    whole, whole_pairs = _run(corpus, tmp_path / "whole", monkeypatch, tables.SPLIT_CODES)
    split, split_pairs = _run(corpus, tmp_path / "split", monkeypatch, 4)
    spread = split.summary["distributed"]
    assert whole.summary["distributed"]["crowded_buckets"] == 0
    assert spread["crowded_buckets"] >= 5
    assert spread["split_buckets"] >= 3
    assert spread["share_tasks"] > 2 * spread["crowded_buckets"]  # some bucket in 3 or more
    # the same candidate pairs, each once
    assert len(split_pairs) > 300
    np.testing.assert_array_equal(split_pairs, whole_pairs)
    assert len(np.unique(split_pairs, axis=0)) == len(split_pairs)
    single = dedup_file(corpus / "all.jsonl", tmp_path / "single", **FAST)
    for name in ("candidate_code_pairs", "removed", "clusters", "largest_cluster"):
        assert split.summary["results"][name] == single.summary["results"][name], name
    assert split.summary["results"]["removed"] > 100
    np.testing.assert_array_equal(split.removed, np.flatnonzero(~single.kept))
    np.testing.assert_array_equal(split.removed, whole.removed)
    for out in ("whole", "split"):
        report = (tmp_path / out / "duplicates.jsonl").read_bytes()
        assert report == (tmp_path / "single" / "duplicates.jsonl").read_bytes()
        kept = b"".join(p.read_bytes() for p in sorted((tmp_path / out / "kept").iterdir()))
        assert kept == (tmp_path / "single" / "kept.jsonl").read_bytes()

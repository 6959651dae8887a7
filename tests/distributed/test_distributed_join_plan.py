"""The cluster's join plan: the tiles against the exact join, the choice, the guard, the defaults."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusimhash import fingerprint
from gpusimhash.codes import code_words
from gpusimhash.datasets.synth import CorpusSpec, generate
from gpusimhash.distributed import _join_plan as join_plan
from gpusimhash.distributed import _routing as routing
from gpusimhash.distributed import _tables as tables
from gpusimhash.distributed import _tiles as tiles
from gpusimhash.join import _mih as mih
from gpusimhash.join._exact import near_duplicate_groups

# the single machine's defaults: 256 bits, verified cosine 0.8, candidate radius 68
DEFAULT_BITS, DEFAULT_RADIUS = 256, 68


def _codes(seed, n, n_bytes, flips):
    """Codes around a few bases: identical codes, near ones and far ones."""
    rng = np.random.default_rng(seed)
    base = rng.integers(0, 256, (max(1, n // 4), n_bytes), dtype=np.uint8)
    codes = base[rng.integers(0, base.shape[0], n)]
    bits = np.unpackbits(codes, axis=1, bitorder="little")
    return np.packbits(bits ^ (rng.random(bits.shape) < flips), axis=1, bitorder="little")


def _collapsed(codes, n_tasks):
    """Collapse the codes as the cluster's collapse tasks do (rows by a hash of the code)."""
    words = code_words(codes)
    rows = np.arange(codes.shape[0], dtype=np.int64)
    task = routing.destination(words, n_tasks)
    return [
        tables.collapse([(rows[task == b], words[task == b])], words.shape[1])
        for b in range(n_tasks)
    ]


def _expected_pairs(codes, radius):
    """Pairs of distinct codes within the radius (named by their lowest row), lower first."""
    groups = near_duplicate_groups(codes, max_distance=radius)
    lowest = np.full(groups.n_unique, codes.shape[0])
    np.minimum.at(lowest, groups.inverse, np.arange(codes.shape[0]))
    return np.sort(lowest[groups.unique_pairs].reshape(-1, 2), axis=1)


def _sorted(pairs):
    return pairs[np.lexsort(pairs.T[::-1])]


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(0, 300),
    n_bytes=st.sampled_from([1, 8, 9, 32]),
    radius=st.integers(0, 80),
    n_tasks=st.integers(1, 4),
    pieces=st.integers(1, 6),
    flips=st.sampled_from([0.0, 0.05, 0.3]),
)
def test_tiles_find_every_pair_once(seed, n, n_bytes, radius, n_tasks, pieces, flips):
    codes = _codes(seed, n, n_bytes, flips)
    bits = n_bytes * 8
    split = [tiles.tile_pieces(c, pieces) for c in _collapsed(codes, n_tasks)]
    n_words = -(-bits // 64)
    gathered = [tiles.gather_piece([s[i] for s in split], n_words) for i in range(pieces)]
    found = [
        tiles.join_tile(gathered[i], None if i == j else gathered[j], bits, radius)
        for i in range(pieces)
        for j in range(i, pieces)
    ]
    pairs = np.concatenate(found)
    assert pairs.dtype == np.int64
    assert pairs.shape[1] == 2
    assert (pairs[:, 0] < pairs[:, 1]).all()
    np.testing.assert_array_equal(_sorted(pairs), _sorted(_expected_pairs(codes, radius)))


@pytest.mark.parametrize("workers", [1, 2, 3, 16])
@pytest.mark.parametrize("n", [0, 1, 1000, 200_000, 10**7, 10**9])
def test_tile_count_feeds_every_worker_with_bounded_tiles(n, workers):
    k = tiles.tile_count(n, workers)
    assert k * (k + 1) // 2 >= 4 * workers
    assert k == 512 or (n / k) ** 2 <= 2**31
    assert k < 512 or n > 10**7


def test_the_sample_is_the_same_for_any_partitioning():
    codes = _codes(3, 5000, 16, 0.1)
    samples = []
    for n_tasks in (1, 3, 7):
        found = [join_plan.code_sample(c, 1000) for c in _collapsed(codes, n_tasks)]
        samples.append(join_plan.merge_samples(found, 1000, 2))
    distinct = np.unique(codes, axis=0).shape[0]
    for count, sample in samples:
        assert count == distinct
        assert sample.shape == (1000, 2)
        np.testing.assert_array_equal(sample, samples[0][1])
    # every sampled code is one of the codes, once
    assert np.unique(samples[0][1], axis=0).shape[0] == 1000
    assert set(map(tuple, samples[0][1].tolist())) <= set(map(tuple, code_words(codes).tolist()))


def _real_sample(bits):
    """Distinct fingerprints of synthetic documents: their bits are biased and correlated."""
    texts = [d.text for d in generate(CorpusSpec(n_docs=3000, seed=2))]
    words = np.unique(code_words(fingerprint(texts, bits=bits)), axis=0)
    return np.random.default_rng(0).permutation(words)


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(2, 10**8),
    bits=st.sampled_from([64, 128, 256]),
    radius_share=st.floats(0.0, 1.0),
    flips=st.sampled_from([0.01, 0.1, 0.5]),
    workers=st.integers(1, 8),
    shuffle_tasks=st.integers(1, 64),
)
def test_no_plan_is_far_above_brute_force(
    seed, n, bits, radius_share, flips, workers, shuffle_tasks
):
    sample = code_words(_codes(seed, 2000, bits // 8, flips))
    radius = round(radius_share * bits)
    plan = join_plan.choose_join(sample, n, bits, radius, workers, shuffle_tasks)
    brute = mih.brute_seconds(n, sample.shape[1])
    # the chosen join costs at most half as much again as one machine's brute force (its
    # scheduler time aside: about a second for the tasks of a small join)
    assert plan.seconds <= 1.5 * brute + 1.0
    # it ends first: the tables and tiles spread over the workers, the one task on one core
    wall = {m: join_plan.wall_seconds(m, s, workers) for m, s in plan.estimates.items()}
    assert wall[plan.method] == min(wall.values())
    assert ("one" in plan.estimates) == (n <= join_plan.ONE_TASK_CODES)
    assert plan.single_machine.seconds <= brute + 1e-12


def test_few_codes_take_one_task_and_many_the_tiles_or_the_tables():
    sample = _real_sample(DEFAULT_BITS)
    for n, method in ((1000, "one"), (200_000, "tiles"), (10**6, "tiles")):
        plan = join_plan.choose_join(sample, n, DEFAULT_BITS, DEFAULT_RADIUS, 2, 4)
        assert plan.method == method
        # 69 tables of 3 or 4 bits: every table compares about 1/16 of the pairs, or sorts
        # 69 sub-blocks of its codes; far above the brute force
        assert plan.estimates["tables"] > 4 * plan.estimates["tiles"]
        assert plan.warning() is None  # one machine runs the same brute force
    sample = _real_sample(128)
    # MIH on one core beats the tables' shuffles until a task would hold too many codes
    for n, method in ((200_000, "one"), (join_plan.ONE_TASK_CODES, "one"), (10**8, "tables")):
        assert join_plan.choose_join(sample, n, 128, 3, 2, 4).method == method


def test_the_warning_names_the_join_and_both_estimates():
    single = mih.Plan("mih", ((0, 16, 0),), 10.0)
    far = join_plan.JoinPlan("tables", {"tables": 400.0, "tiles": 900.0}, single, 2_000_000, 40)
    message = far.warning()
    assert message is not None
    for part in ("tables", "2,000,000 distinct codes", "400 s", "40.0 times", "mih, 10.0 s"):
        assert part in message
    assert "tiles 900 s" in message
    # four times the single machine's at most, or a minute of one core above it: no warning
    assert join_plan.JoinPlan("tables", {"tables": 40.0}, single, 10, 1).warning() is None
    cheap = mih.Plan("brute", (), 1.0)
    assert join_plan.JoinPlan("tiles", {"tiles": 61.0}, cheap, 10, 1).warning() is None
    assert join_plan.JoinPlan("tiles", {"tiles": 62.0}, cheap, 10, 1).warning() is not None


# ------------------------------------------------------------------ Dask

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def default_corpus(tmp_path_factory, write_partitioned):
    """3,000 synthetic documents as one file and as 4 partitions."""
    records = [
        {"id": f"d{d.id}", "text": d.text} for d in generate(CorpusSpec(n_docs=3000, seed=7))
    ]
    return write_partitioned(tmp_path_factory.mktemp("defaults"), records, 4)


def _same_files(single, spread):
    kept = b"".join(p.read_bytes() for p in sorted((spread / "kept").iterdir()))
    assert kept == (single / "kept.jsonl").read_bytes()
    assert (spread / "duplicates.jsonl").read_bytes() == (single / "duplicates.jsonl").read_bytes()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("n_workers", "options", "method"),
    [
        (1, {}, "features"),  # the defaults: the exact feature join, as one machine
        (2, {}, "features"),
        (2, {"candidates": "codes"}, "one"),  # radius 68 over few codes: one task's brute force
    ],
)
def test_the_defaults_give_the_single_machines_files(
    default_corpus, tmp_path, n_workers, options, method
):
    from gpusimhash.dedup.pipeline import dedup_file
    from gpusimhash.distributed import dedup

    single = dedup_file(default_corpus / "all.jsonl", tmp_path / "single", id_field="id", **options)
    assert single.summary["settings"]["bits"] == DEFAULT_BITS
    assert single.summary["settings"]["candidates"] == method.replace("one", "codes")
    with distributed.Client(
        processes=False, n_workers=n_workers, threads_per_worker=1, dashboard_address=":0"
    ) as client:
        result = dedup(
            default_corpus / "parts", tmp_path / "spread", client=client, id_field="id", **options
        )
    _same_files(tmp_path / "single", tmp_path / "spread")
    assert result.summary["distributed"]["join"]["method"] == method
    single_only = ("device", "estimated_candidate_pairs")  # what only one machine reports
    settings = {k: v for k, v in single.summary["settings"].items() if k not in single_only}
    assert result.summary["settings"] == settings
    for name in ("removed", "clusters", "candidate_code_pairs", "distinct_codes"):
        assert result.summary["results"][name] == single.summary["results"][name], name
    assert result.summary["results"]["removed"] > 100


@pytest.mark.slow
def test_a_costly_join_warns_before_it_starts(default_corpus, tmp_path, monkeypatch):
    from gpusimhash.distributed import _join_stage, dedup

    monkeypatch.setattr(join_plan, "_WARN_RATIO", 0.0)
    monkeypatch.setattr(join_plan, "_WARN_SECONDS", -1.0)
    seen = []
    join_tiles = _join_stage.JoinStage._join_tiles

    def counted(run, *args):
        # the join warnings so far, when the join's tasks are submitted
        seen.append(sum(issubclass(w.category, join_plan.JoinWorkWarning) for w in caught))
        return join_tiles(run, *args)

    monkeypatch.setattr(_join_stage.JoinStage, "_join_tiles", counted)
    with (
        warnings.catch_warnings(record=True) as caught,
        distributed.Client(
            processes=False, n_workers=1, threads_per_worker=1, dashboard_address=":0"
        ) as client,
    ):
        warnings.simplefilter("always", join_plan.JoinWorkWarning)
        dedup(default_corpus / "parts", tmp_path, client=client, id_field="id", candidates="codes")
    found = [w for w in caught if issubclass(w.category, join_plan.JoinWorkWarning)]
    assert len(found) == 1
    assert seen == [1]  # warned before the tiles' tasks were submitted
    assert "estimated at" in str(found[0].message)
    assert "single machine's (brute" in str(found[0].message)


@pytest.mark.slow
def test_a_feature_join_over_budget_is_refused_before_any_probe_as_on_one_machine(
    default_corpus, tmp_path, monkeypatch
):
    from gpusimhash.dedup.pipeline import dedup_file
    from gpusimhash.distributed import _features, dedup

    budget = {"max_candidate_pairs": 5, "id_field": "id"}
    with pytest.raises(ValueError, match="would read .* postings") as single:
        dedup_file(default_corpus / "all.jsonl", tmp_path / "single", **budget)
    probed = []
    monkeypatch.setattr(_features, "probe_range", lambda *args, **kwargs: probed.append(args))
    with (
        distributed.Client(
            processes=False, n_workers=1, threads_per_worker=1, dashboard_address=":0"
        ) as client,
        pytest.raises(ValueError, match="would read .* postings") as spread,
    ):
        dedup(default_corpus / "parts", tmp_path / "spread", client=client, **budget)
    assert str(spread.value) == str(single.value)
    assert probed == []

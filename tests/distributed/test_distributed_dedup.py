"""The distributed dedup gives the single-machine result for any workers and partitions.

One process-based LocalCluster serves the module; tests scale it down (3, then 2, then 1
worker) so that workers start once. The runs join by the pigeonhole tables unless a test says
otherwise (on this small corpus the planner would take the tiles).
"""

import json
import os
from pathlib import Path

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")

from gpusimhash.datasets.synth import CorpusSpec, generate
from gpusimhash.dedup.pipeline import dedup_file
from gpusimhash.distributed import _cluster_stage as cluster_stage
from gpusimhash.distributed import _components as components
from gpusimhash.distributed import _join_stage as join_stage
from gpusimhash.distributed import dedup
from gpusimhash.io.readers import InputError

pytestmark = pytest.mark.slow  # Dask workers start in every test

N_DOCS = 1200
FAST = {"bits": 128, "max_distance": 8, "id_field": "id"}  # 9 pigeonhole tables of 14 bits


def _records():
    docs = list(generate(CorpusSpec(n_docs=N_DOCS, seed=5, max_length=40)))
    records = [
        {"id": f"d{d.id}", "text": d.text, "score": (d.id * 7919) % 101, "group": d.group}
        for d in docs
    ]
    for record in records:  # string labels for the ground truth
        record["topic"] = f"t{record['group']}"
    # featureless documents, and copies of them
    for k in (3, 500, 501, 1100):
        records[k] = {**records[k], "text": "" if k % 2 else "  ", "score": k}
    return records


RECORDS = _records()


@pytest.fixture(autouse=True)
def tables_unless_told(force_join, monkeypatch):
    """Join by the tables (a test may force another join after), cluster by components
    labelled in rounds."""
    force_join("tables")
    monkeypatch.setattr(components, "ONE_TASK_BYTES", -1)
    monkeypatch.setattr(cluster_stage, "ONE_GROUP_WORK", -1)


def _write(records, path):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """The corpus as one file and as partitionings into 1, 4 and 7 files (one of them empty)."""
    root = tmp_path_factory.mktemp("corpus")
    _write(RECORDS, root / "all.jsonl")
    layouts = {}
    for n_parts in (1, 4, 7):
        folder = root / f"parts{n_parts}"
        folder.mkdir()
        cuts = np.sort(np.random.default_rng(n_parts).integers(0, N_DOCS, n_parts - 1))
        if n_parts == 7:
            cuts[2] = cuts[1]  # an empty partition
        bounds = [0, *cuts.tolist(), N_DOCS]
        for p in range(n_parts):
            _write(RECORDS[bounds[p] : bounds[p + 1]], folder / f"part{p:02d}.jsonl")
        layouts[n_parts] = folder
    return root, layouts


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(
        processes=True, n_workers=3, threads_per_worker=1, dashboard_address=":0"
    ) as local:
        yield local


def _client_with(cluster, n_workers):
    """Scale the module's cluster to ``n_workers`` (down only) and return a client."""
    client = distributed.Client(cluster)
    if len(cluster.workers) > n_workers:
        cluster.scale(n_workers)
        client.wait_for_workers(n_workers)
        while len(client.scheduler_info()["workers"]) > n_workers:
            client.sync(_sleep)
    return client


async def _sleep():
    import asyncio

    await asyncio.sleep(0.1)


_SINGLE = {}


def _single(root, options):
    key = json.dumps([str(root), options], sort_keys=True)
    if key not in _SINGLE:
        out = root / f"single-{len(_SINGLE)}"
        _SINGLE[key] = (dedup_file(root / "all.jsonl", out, **options), out)
    return _SINGLE[key]


def _assert_same(root, out, options):
    single, single_out = _single(root, options)
    fmt = options.get("output_format", "jsonl")
    assert (out / f"duplicates.{fmt}").read_bytes() == (
        single_out / f"duplicates.{fmt}"
    ).read_bytes()
    if fmt == "jsonl":
        kept = [
            json.loads(line)
            for part in sorted((out / "kept").iterdir())
            for line in part.read_text().splitlines()
        ]
        expected = [
            json.loads(line) for line in (single_out / "kept.jsonl").read_text().splitlines()
        ]
        assert kept == expected
    else:
        import pyarrow.parquet as pq

        kept = [
            r for part in sorted((out / "kept").iterdir()) for r in pq.read_table(part).to_pylist()
        ]
        assert kept == pq.read_table(single_out / "kept.parquet").to_pylist()
    return single


# before the runs below: the module's cluster only scales down
def test_many_components_spread_over_workers(corpus, cluster, tmp_path):
    root, layouts = corpus
    options = {**FAST, "keep": "score", "score_field": "score"}
    with _client_with(cluster, 3) as client:
        result = dedup(layouts[7], tmp_path, client=client, **options)
    spread = result.summary["distributed"]
    # components dealt to two groups per worker, each group clustered by its own task
    assert spread["cluster_groups"] == 6
    assert spread["components"] >= 50
    _assert_same(root, tmp_path, options)


@pytest.mark.parametrize(
    ("labelled_in_one_task", "bound"),
    [(True, "ONE_GROUP_WORK"), (False, "ONE_GROUP_WORK"), (True, "ONE_GROUP_BYTES")],
)
def test_a_graph_split_by_components_clusters_as_one_task_does(
    corpus, cluster, tmp_path, monkeypatch, labelled_in_one_task, bound
):
    monkeypatch.undo()  # the feature join
    monkeypatch.setattr(cluster_stage, bound, -1)  # too much work, or too many bytes
    if not labelled_in_one_task:
        monkeypatch.setattr(components, "ONE_TASK_BYTES", -1)
    root, layouts = corpus
    options = {"min_cosine": 0.8, "keep": "longest"}
    with _client_with(cluster, 3) as client:
        result = dedup(layouts[7], tmp_path / "split", client=client, **options)
        monkeypatch.undo()
        whole = dedup(layouts[7], tmp_path / "whole", client=client, **options)
    spread = result.summary["distributed"]
    assert spread["cluster_groups"] == 6  # two per worker
    assert (spread["label_rounds"] == 0) == labelled_in_one_task
    assert whole.summary["distributed"]["cluster_groups"] == 1
    single = _assert_same(root, tmp_path / "split", options)
    _assert_same(root, tmp_path / "whole", options)
    assert result.summary["results"]["removed"] > 50
    for name in ("clusters", "candidate_code_pairs", "distinct_codes"):
        assert result.summary["results"][name] == single.summary["results"][name], name
    assert spread["components"] == whole.summary["distributed"]["components"] > 50


@pytest.mark.parametrize("whole", [True, False])
def test_a_pair_two_feature_shares_find_is_kept_once(
    cluster, tmp_path, monkeypatch, write_partitioned, whole
):
    # every word doubled: the original's code, other features (counts), so the code has two
    # representatives in the feature index and two shares may find one pair of codes
    monkeypatch.undo()  # the feature join, and one task clusters the whole graph
    if not whole:
        monkeypatch.setattr(cluster_stage, "ONE_GROUP_WORK", -1)
    doubled = [
        {
            **r,
            "id": f"{r['id']}-doubled",
            "text": " ".join(w for w in r["text"].split() for _ in "ab"),
        }
        for r in RECORDS[::10]
    ]
    write_partitioned(tmp_path, RECORDS + doubled, 4)
    options = {"min_cosine": 0.8}
    with _client_with(cluster, 3) as client:
        result = dedup(tmp_path / "parts", tmp_path / "spread", client=client, **options)
    spread = result.summary["distributed"]
    assert spread["join"]["pairs_repeat"]
    assert (spread["cluster_groups"] == 1) == whole
    single = _assert_same(tmp_path, tmp_path / "spread", options)
    for name in ("clusters", "candidate_code_pairs", "distinct_codes"):
        assert result.summary["results"][name] == single.summary["results"][name], name


@pytest.mark.parametrize("every_partition", [True, False])
def test_the_whole_group_takes_documents_from_every_partition_or_those_holding_some(
    corpus, cluster, tmp_path, monkeypatch, every_partition
):
    monkeypatch.undo()  # the feature join, and one task clusters the whole graph
    monkeypatch.setattr(cluster_stage, "TAKE_EVERY_PARTITION", 7 if every_partition else 6)
    root, layouts = corpus
    options = {"min_cosine": 0.8}
    with _client_with(cluster, 3) as client, distributed.get_task_stream(client) as stream:
        result = dedup(layouts[7], tmp_path, client=client, **options)
    keys = [task["key"] if isinstance(task["key"], str) else task["key"][0] for task in stream.data]
    takes = sum("-group-take-" in key for key in keys)
    assert result.summary["distributed"]["cluster_groups"] == 1
    # one of the 7 partitions is empty: it sends its share only unasked
    assert takes == (7 if every_partition else 6)
    _assert_same(root, tmp_path, options)


def test_every_worker_builds_its_own_copy_of_the_feature_index(
    corpus, cluster, tmp_path, monkeypatch
):
    monkeypatch.undo()  # no plan: the feature join
    root, layouts = corpus
    with _client_with(cluster, 3) as client, distributed.get_task_stream(client) as stream:
        result = dedup(layouts[4], tmp_path, client=client, min_cosine=0.8)
    assert result.summary["distributed"]["join"]["method"] == "features"
    keys = [task["key"] if isinstance(task["key"], str) else task["key"][0] for task in stream.data]
    built = [t["worker"] for key, t in zip(keys, stream.data, strict=True) if "-index-" in key]
    # one copy on each worker, built at once (a share may still be stolen by an idle worker,
    # which then fetches a copy: that is work stealing's choice, not the plan's)
    assert len(built) == len(set(built)) == 3
    assert sum("-feature-share-" in key for key in keys) == 3 * join_stage._SHARES_PER_WORKER
    _assert_same(root, tmp_path, {"min_cosine": 0.8})


RUNS = [
    (3, 7, FAST, "tables"),
    (3, 7, FAST, "tiles"),
    (3, 4, {**FAST, "keep": "longest"}, "tables"),
    (3, 1, FAST, "tables"),
    (3, 4, FAST, "one"),
    (2, 4, FAST, "tables"),
    (2, 7, {**FAST, "cluster": "components", "keep": "score", "score_field": "score"}, "tables"),
    (2, 4, {**FAST, "verify": False}, "tables"),
    (2, 4, {**FAST, "verify": False}, "tiles"),
    (2, 7, {**FAST, "min_jaccard": 0.6, "empty_as_duplicates": True}, "tiles"),
    (2, 4, {**FAST, "output_format": "parquet"}, "tables"),
    (2, 7, {"max_distance": 12}, "tables"),  # 256 bits, ids from the "id" field: not named
    (2, 4, {"min_cosine": 0.8}, "features"),  # the defaults: the feature join
    (2, 7, {"min_cosine": 0.8, "empty_as_duplicates": True}, "features"),
    (2, 4, {"min_cosine": 0.8, "candidates": "codes"}, "auto"),  # radius 68, few codes: one
    (2, 7, {**FAST, "min_jaccard": 0.6, "keep": "longest"}, "one"),
    (1, 7, {"min_jaccard": 0.6, "keep": "longest"}, "features"),
    (1, 4, FAST, "tables"),
    (1, 7, FAST, "tiles"),
]


@pytest.mark.parametrize(("n_workers", "n_parts", "options", "join"), RUNS)
def test_same_result_as_one_machine(
    corpus, cluster, tmp_path, monkeypatch, force_join, n_workers, n_parts, options, join
):
    root, layouts = corpus
    if join in ("auto", "features"):
        monkeypatch.undo()  # the planner's choice, or no plan (the features)
    else:
        force_join(join)
    with _client_with(cluster, n_workers) as client:
        assert len(client.scheduler_info()["workers"]) == n_workers
        result = dedup(layouts[n_parts], tmp_path, client=client, **options)
    spread = result.summary["distributed"]
    assert spread["join"]["method"] == ("one" if join == "auto" else join)
    assert (spread["feature_shuffle_bytes"] > 0) == (join == "features")
    # the planner's runs cluster their small graphs in one task, the others by components
    assert (spread["label_rounds"] == 0) == (join in ("auto", "features"))
    assert (spread["cluster_groups"] == 1) == (join in ("auto", "features"))
    assert (spread["tables"] > 0) == (spread["join"]["method"] == "tables")
    assert (spread["tile_tasks"] > 0) == (spread["join"]["method"] in ("tiles", "one"))
    assert (spread["tile_tasks"] == 1) == (spread["join"]["method"] == "one")
    single = _assert_same(root, tmp_path, options)
    np.testing.assert_array_equal(result.removed, np.flatnonzero(~single.kept))
    same = ("documents", "kept", "removed", "clusters", "largest_cluster", "candidate_code_pairs")
    for name in (*same, "distinct_codes"):
        assert result.summary["results"][name] == single.summary["results"][name], name
    assert result.summary["results"]["removed"] > 50
    assert result.summary["cluster_sizes"] == single.summary["cluster_sizes"]
    assert len(list((tmp_path / "kept").iterdir())) == n_parts


def test_plain_text_partitions_number_documents_globally(cluster, tmp_path):
    lines = [RECORDS[k]["text"] or "x" for k in range(300)] * 2
    (tmp_path / "a.txt").write_text("\n".join(lines[:250]) + "\n")
    (tmp_path / "b.txt").write_text("\n".join(lines[250:]) + "\n")
    (tmp_path / "all.txt").write_text("\n".join(lines) + "\n")
    fast = {"bits": 128, "max_distance": 8}
    single = dedup_file(tmp_path / "all.txt", tmp_path / "single", **fast)
    with _client_with(cluster, 2) as client:
        dedup([tmp_path / "a.txt", tmp_path / "b.txt"], tmp_path / "dist", client=client, **fast)
    kept = [
        json.loads(line)
        for part in sorted((tmp_path / "dist" / "kept").iterdir())
        for line in part.read_text().splitlines()
    ]
    assert [r["id"] for r in kept] == np.flatnonzero(single.kept).tolist()
    assert (tmp_path / "dist" / "duplicates.jsonl").read_bytes() == (
        tmp_path / "single" / "duplicates.jsonl"
    ).read_bytes()


def test_bad_partition_gives_the_single_machine_error(cluster, tmp_path):
    _write(RECORDS[:10], tmp_path / "a.jsonl")
    bad = RECORDS[10:20] + [{"id": "x", "body": "no text field"}]
    _write(bad, tmp_path / "b.jsonl")
    with pytest.raises(InputError) as single:
        dedup_file(tmp_path / "b.jsonl", tmp_path / "single", id_field="id")
    with _client_with(cluster, 2) as client, pytest.raises(InputError) as spread:
        dedup(tmp_path, tmp_path / "dist", client=client, id_field="id")
    assert str(spread.value) == str(single.value)
    assert "b.jsonl, line 11: no field 'text'" in str(spread.value)


def test_a_killed_worker_is_retried_with_the_same_result(corpus, cluster, tmp_path):
    root, layouts = corpus
    flag = tmp_path / "killed"

    class KillOnce(distributed.WorkerPlugin):
        """Kill the worker process when it starts the first join task (once: the flag)."""

        name = "kill-once"

        def transition(self, key, start, finish, **kwargs):
            if finish == "executing" and "gpusimhash-table-" in str(key) and not flag.exists():
                flag.write_text(str(os.getpid()))
                os._exit(1)

    with _client_with(cluster, 2) as client:
        client.register_plugin(KillOnce())
        try:
            dedup(layouts[4], tmp_path / "out", client=client, **FAST)
        finally:
            client.unregister_worker_plugin("kill-once")
    assert flag.exists()
    _assert_same(root, tmp_path / "out", FAST)


def test_defaults_are_the_single_machine_ones():
    import inspect

    ours, theirs = inspect.signature(dedup).parameters, inspect.signature(dedup_file).parameters
    for name in ("bits", "seed", "featurizer"):
        assert ours[name].default == theirs[name].default, name


def test_a_join_over_the_pair_budget_is_refused_as_on_one_machine(corpus, cluster, tmp_path):
    root, layouts = corpus
    options = {**FAST, "max_distance": 24, "max_candidate_pairs": 1000}
    # under 2,048 distinct codes both count every code's neighbours: the same estimate
    with pytest.raises(ValueError, match="candidate pairs at Hamming radius 24") as single:
        dedup_file(root / "all.jsonl", tmp_path / "single", **options)
    with _two_workers(cluster) as client:
        with pytest.raises(ValueError, match="over the budget of 1,000") as spread:
            dedup(layouts[4], tmp_path / "spread", client=client, **options)
        assert str(spread.value) == str(single.value)
        result = dedup(layouts[4], tmp_path / "forced", client=client, force=True, **options)
    estimate = result.summary["distributed"]["join"]["estimated_candidate_pairs"]
    assert f"about {estimate:,} candidate pairs" in str(single.value)
    _assert_same(root, tmp_path / "forced", {**options, "force": True})


def test_unsupported_options_and_no_client(tmp_path):
    _write(RECORDS[:5], tmp_path / "a.jsonl")
    with pytest.raises(ValueError, match="does not support recall"):
        dedup(tmp_path, tmp_path / "out", recall=0.9)
    with pytest.raises(ValueError, match="does not support pairs=True"):
        dedup(tmp_path, tmp_path / "out", pairs=True)
    with pytest.raises(ValueError, match="standard input"):
        dedup("-", tmp_path / "out")
    with pytest.raises(ValueError, match="no Dask client"):
        dedup(tmp_path / "a.jsonl", tmp_path / "out")
    with pytest.raises(FileNotFoundError, match="nothing"):
        dedup(tmp_path / "nothing*.jsonl", tmp_path / "out")


def test_outputs(corpus, cluster, tmp_path):
    _, layouts = corpus
    with _client_with(cluster, 1) as client:
        result = dedup(layouts[4], tmp_path, client=client, **FAST)
    summary = json.loads(Path(tmp_path / "summary.json").read_text())
    assert summary["results"] == result.summary["results"]
    shuffle = summary["distributed"]
    assert shuffle["tables"] == 9
    # (row, code) per distinct code and table: 8 + 16 bytes at 128 bits; the 4 featureless
    # documents have a code each, as on one machine, and are never joined
    distinct = summary["results"]["distinct_codes"] - 4
    assert shuffle["table_shuffle_bytes"] == 24 * distinct * 9
    # (row, code) per featured document, 8 + 16 bytes at 128 bits
    assert shuffle["collapse_shuffle_bytes"] == 24 * (N_DOCS - 4)
    assert shuffle["cluster_groups"] == 2
    assert 0 < summary["results"]["pairs_verified"] <= summary["results"]["candidate_code_pairs"]
    assert shuffle["join"]["method"] == "tables"
    assert shuffle["tile_tasks"] == shuffle["tile_shuffle_bytes"] == 0


def test_outputs_of_the_tiles(corpus, cluster, tmp_path, force_join):
    _, layouts = corpus
    force_join("tiles")
    with _client_with(cluster, 1) as client:
        result = dedup(layouts[4], tmp_path, client=client, **FAST)
    shuffle = result.summary["distributed"]
    assert shuffle["tables"] == shuffle["table_shuffle_bytes"] == shuffle["share_tasks"] == 0
    assert shuffle["blocks"] == []
    # one task per pair of pieces; (row, code) per distinct code, shipped once to its piece
    k = shuffle["join"]["pieces"]
    assert k >= 3
    assert shuffle["tile_tasks"] == k * (k + 1) // 2
    # the 4 featureless documents' codes are never joined
    assert shuffle["tile_shuffle_bytes"] == 24 * (result.summary["results"]["distinct_codes"] - 4)
    estimates = shuffle["join"]["estimates_s"]
    assert set(estimates) == {"tables", "tiles", "one"}
    assert shuffle["join"]["single_machine"]["method"] in ("brute", "mih")


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_duplicates_written_in_the_single_machines_chunks(
    corpus, cluster, tmp_path, fmt, monkeypatch
):
    # 7 clusters a write: Parquet row groups as on one machine, the driver never holding all
    from gpusimhash.dedup import duplicates_chunk

    monkeypatch.setattr(duplicates_chunk, "DUPLICATES_CHUNK", 7)
    root, layouts = corpus
    options = {**FAST, "output_format": fmt}
    single = dedup_file(root / "all.jsonl", tmp_path / "single", **options)
    assert single.summary["results"]["clusters"] > 3 * 7
    with _client_with(cluster, 1) as client:
        dedup(layouts[7], tmp_path / "spread", client=client, **options)
    name = f"duplicates.{fmt}"
    assert (tmp_path / "spread" / name).read_bytes() == (tmp_path / "single" / name).read_bytes()


def test_command_line_on_a_scheduler_and_on_local_workers(corpus, cluster, tmp_path, capsys):
    from gpusimhash.cli import main

    root, layouts = corpus
    common = ["--id-field", "id", "--bits", "128", "--max-distance", "8", "-q", "--no-report"]
    address = cluster.scheduler_address
    glob = str(layouts[7] / "part*.jsonl")
    runs = (
        [str(root / "all.jsonl"), "--out", str(tmp_path / "one")],
        [glob, "--scheduler", address, "--out", str(tmp_path / "s")],
        [str(layouts[4]), "--workers", "2", "--out", str(tmp_path / "w")],
    )
    for run in runs:
        assert main(["dedup", *run, *common]) == 0, capsys.readouterr().err
    expected = (tmp_path / "one" / "duplicates.jsonl").read_bytes()
    kept = (tmp_path / "one" / "kept.jsonl").read_text()
    for name, parts in (("s", 7), ("w", 4)):
        assert (tmp_path / name / "duplicates.jsonl").read_bytes() == expected
        pieces = sorted((tmp_path / name / "kept").iterdir())
        assert len(pieces) == parts
        assert "".join(p.read_text() for p in pieces) == kept
    capsys.readouterr()
    assert main(["dedup", "--workers", "2", "--out", str(tmp_path / "x")]) == 2
    assert "need an INPUT" in capsys.readouterr().err
    dirty = tmp_path / "dirty"
    dirty.mkdir()
    for part in sorted(layouts[4].iterdir()):
        (dirty / part.name).write_text("{broken\n" + part.read_text())
    args = [str(dirty), "--scheduler", address, "--skip-invalid", "--out", str(tmp_path / "y")]
    assert main(["dedup", *args, *common]) == 0
    err = capsys.readouterr().err
    assert f"warning: skipped 4 invalid records, the first: {dirty / 'part00.jsonl'}, line 1" in err
    assert (tmp_path / "y" / "duplicates.jsonl").read_bytes() == expected


# ---------------------------------------------------------------- annotate, truth_field, report
# (after the runs above, which scale the module's cluster down to one worker: back to two)


def _two_workers(cluster):
    """A client of the module's cluster with two workers (started again if fewer)."""
    client = distributed.Client(cluster)
    if len(cluster.workers) < 2:
        cluster.scale(2)
        client.wait_for_workers(2)
    return client


def _annotated_parts(out, fmt):
    """The annotated records of every part, in order (parts concatenated)."""
    parts = sorted((out / "annotated").iterdir())
    if fmt == "jsonl":
        return "".join(part.read_text() for part in parts)
    import pyarrow.parquet as pq

    return [r for part in parts for r in pq.read_table(part).to_pylist()]


@pytest.mark.parametrize(
    ("n_parts", "options"),
    [
        (7, {**FAST, "annotate": True}),
        (4, {**FAST, "annotate": True, "keep": "score", "score_field": "score"}),
        (4, {**FAST, "annotate": True, "verify": False, "cluster": "components"}),
        (7, {"bits": 128, "max_distance": 8, "annotate": True, "output_format": "parquet"}),
    ],
)
def test_annotate_writes_every_record_as_one_machine(corpus, cluster, tmp_path, n_parts, options):
    root, layouts = corpus
    with _two_workers(cluster) as client:
        result = dedup(layouts[n_parts], tmp_path, client=client, **options)
    single, single_out = _single(root, options)
    fmt = options.get("output_format", "jsonl")
    assert not (tmp_path / "kept").exists()
    assert len(list((tmp_path / "annotated").iterdir())) == n_parts
    if fmt == "jsonl":
        expected = (single_out / "annotated.jsonl").read_text()
        assert _annotated_parts(tmp_path, fmt) == expected  # byte-identical once concatenated
        assert expected.count("\n") == N_DOCS
    else:
        import pyarrow.parquet as pq

        expected = pq.read_table(single_out / "annotated.parquet").to_pylist()
        assert _annotated_parts(tmp_path, fmt) == expected
    assert (tmp_path / f"duplicates.{fmt}").read_bytes() == (
        single_out / f"duplicates.{fmt}"
    ).read_bytes()
    assert result.summary["results"]["removed"] == single.summary["results"]["removed"] > 50


@pytest.mark.parametrize("options", [FAST, {**FAST, "truth_field": "topic"}])
def test_jsonl_kept_records_are_their_input_lines_as_on_one_machine(cluster, tmp_path, options):
    # compact, unescaped JSON with CRLF endings and blank lines: what is kept comes back as it was
    lines = [json.dumps(r, ensure_ascii=False, separators=(",", ":")) for r in RECORDS]
    content = "".join(
        line + ("\r\n\r\n" if k % 97 == 0 else "\r\n") for k, line in enumerate(lines)
    )
    (tmp_path / "parts").mkdir()
    (tmp_path / "all.jsonl").write_text(content, newline="")
    cuts = [0, 400, 401, 900, len(lines)]
    for p in range(4):
        chunk = lines[cuts[p] : cuts[p + 1]]
        (tmp_path / "parts" / f"part{p}.jsonl").write_text(
            "".join(x + "\r\n" for x in chunk), newline=""
        )
    single = dedup_file(tmp_path / "all.jsonl", tmp_path / "single", **options)
    with _two_workers(cluster) as client:
        dedup(tmp_path / "parts", tmp_path / "spread", client=client, **options)
    kept = (tmp_path / "single" / "kept.jsonl").read_bytes()
    expected = [line for line, keep in zip(lines, single.kept, strict=True) if keep]
    assert kept == ("\n".join(expected) + "\n").encode("utf-8")
    assert 50 < len(lines) - len(expected) < len(lines)
    parts = b"".join(p.read_bytes() for p in sorted((tmp_path / "spread" / "kept").iterdir()))
    assert parts == kept
    duplicates = (tmp_path / "spread" / "duplicates.jsonl").read_bytes()
    assert duplicates == (tmp_path / "single" / "duplicates.jsonl").read_bytes()


def test_truth_field_gives_the_single_machine_removal_scores(corpus, cluster, tmp_path):
    root, layouts = corpus
    options = {**FAST, "truth_field": "topic"}
    with _two_workers(cluster) as client:
        result = dedup(layouts[7], tmp_path, client=client, **options)
    single, _ = _single(root, options)
    truth = result.summary["ground_truth"]
    expected = single.summary["ground_truth"]
    assert truth == {k: expected[k] for k in truth}
    assert sorted(truth) == [
        "documents_to_remove",
        "removal_precision",
        "removal_recall",
        "removed_correctly",
        "true_groups_with_duplicates",
    ]
    assert 0 < truth["removal_recall"] < 1
    assert truth["removed_correctly"] > 50
    assert json.loads((tmp_path / "summary.json").read_text())["ground_truth"] == truth


def _sections(report):
    """A report's sections but those of each run's own summary.

    Settings, Results and Files (the distributed summary has keys of its own, timings and
    paths), and Against the ground truth (no pair scores on a cluster; the removal scores
    are compared on the summaries).
    """
    sections = report.split("\n## ")
    own = ("Settings", "Results", "Files", "Against the ground truth")
    return [s for s in sections[1:] if not s.startswith(own)]


@pytest.mark.parametrize(
    ("n_parts", "options", "sampled"),
    [
        (7, {**FAST, "report": True}, None),
        # a few sampled pairs of each kind: which are drawn depends on every pair's order
        (7, {**FAST, "report": True, "seed": 3}, 25),
        (4, {"bits": 64, "min_cosine": 0.7, "report": True, "keep": "longest"}, None),
        (4, {**FAST, "report": True, "cluster": "components", "empty_as_duplicates": True}, 25),
    ],
)
def test_report_shows_what_one_machine_shows(
    corpus, cluster, tmp_path, monkeypatch, n_parts, options, sampled
):
    from gpusimhash.dedup import report
    from gpusimhash.dedup.report import _sample

    if sampled is not None:
        monkeypatch.setattr(_sample, "SAMPLED_PAIRS", sampled)
        # one machine searches the neighbourhood 128 codes at a time: its order is by scan,
        # which the cluster's driver reproduces from the same constant
        monkeypatch.setattr(_sample, "CODES_PER_SCAN", 128)
        monkeypatch.setattr(report, "CODES_PER_SCAN", 128)
    root, layouts = corpus
    with _two_workers(cluster) as client:
        dedup(layouts[n_parts], tmp_path, client=client, **options)
    _, single_out = _single(root, options)
    ours = (tmp_path / "report.md").read_text()
    theirs = (single_out / "report.md").read_text()
    assert "## Largest clusters" in ours
    assert "## Around the threshold" in ours
    assert _sections(ours) == _sections(theirs)
    for name in report.PLOTS.values():
        assert (tmp_path / name).read_bytes() == (single_out / name).read_bytes(), name


def test_report_refused_without_verification(tmp_path):
    _write(RECORDS[:5], tmp_path / "a.jsonl")
    with pytest.raises(ValueError, match="report"):
        dedup(tmp_path, tmp_path / "out", report=True, verify=False)


def test_command_line_annotates_scores_and_reports_on_a_cluster(corpus, cluster, tmp_path, capsys):
    from gpusimhash.cli import main

    root, layouts = corpus
    common = ["--id-field", "id", "--bits", "128", "--max-distance", "8", "-q"]
    common += ["--annotate", "--truth-field", "group"]
    with _two_workers(cluster):
        runs = (
            [str(root / "all.jsonl"), "--out", str(tmp_path / "one")],
            [
                str(layouts[4]),
                "--scheduler",
                cluster.scheduler_address,
                "--out",
                str(tmp_path / "s"),
            ],
        )
        for run in runs:
            assert main(["dedup", *run, *common]) == 0, capsys.readouterr().err
    one, spread = tmp_path / "one", tmp_path / "s"
    assert _annotated_parts(spread, "jsonl") == (one / "annotated.jsonl").read_text()
    assert _sections((spread / "report.md").read_text()) == _sections(
        (one / "report.md").read_text()
    )
    ours = json.loads((spread / "summary.json").read_text())["ground_truth"]
    theirs = json.loads((one / "summary.json").read_text())["ground_truth"]
    assert ours == {k: theirs[k] for k in ours}
    assert {"annotated/", "report.md"} <= set(
        json.loads((spread / "summary.json").read_text())["files"]
    )
    capsys.readouterr()
    unverified = [str(layouts[4]), "--scheduler", cluster.scheduler_address, "--no-verify"]
    assert main(["dedup", *unverified, "--out", str(tmp_path / "u"), *common]) == 0
    assert "no report.md with --no-verify on a cluster" in capsys.readouterr().err
    assert not (tmp_path / "u" / "report.md").exists()


@pytest.mark.parametrize("copies", [1, 2])  # no near-duplicate at all, then many
def test_plain_text_partitions_annotated_and_reported(cluster, tmp_path, copies):
    lines = [" ".join(f"w{k}x{j}" for j in range(6)) for k in range(300)] * copies
    (tmp_path / "a.txt").write_text("\n".join(lines[:250]) + "\n")
    (tmp_path / "b.txt").write_text("")  # an empty partition
    (tmp_path / "c.txt").write_text("\n".join(lines[250:]) + "\n")
    (tmp_path / "all.txt").write_text("\n".join(lines) + "\n")
    options = {"bits": 128, "max_distance": 8, "annotate": True, "report": True}
    single = dedup_file(tmp_path / "all.txt", tmp_path / "one", **options)
    parts = [tmp_path / name for name in ("a.txt", "b.txt", "c.txt")]
    with _two_workers(cluster) as client:
        dedup(parts, tmp_path / "dist", client=client, **options)
    annotated = _annotated_parts(tmp_path / "dist", "jsonl")
    assert annotated == (tmp_path / "one" / "annotated.jsonl").read_text()
    assert annotated.count('"duplicate_of": null') == len(lines) - int((~single.kept).sum())
    assert (~single.kept).any() == (copies > 1)
    assert _sections((tmp_path / "dist" / "report.md").read_text()) == _sections(
        (tmp_path / "one" / "report.md").read_text()
    )


@pytest.mark.parametrize(("id_field", "annotate"), [(None, False), (None, True), ("id", True)])
def test_ids_are_read_again_only_from_an_id_field(cluster, tmp_path, id_field, annotate):
    """Without an id field the ids are the rows: no partition is read for them, and the
    duplicates report (written while the parts are) and the annotations are one machine's."""
    records = RECORDS if id_field else [{k: v for k, v in r.items() if k != "id"} for r in RECORDS]
    _write(records, tmp_path / "all.jsonl")
    (tmp_path / "parts").mkdir()
    for p, lo in enumerate(range(0, N_DOCS, 300)):
        _write(records[lo : lo + 300], tmp_path / "parts" / f"part{p}.jsonl")
    options = {"bits": 128, "max_distance": 8, "id_field": id_field, "annotate": annotate}
    dedup_file(tmp_path / "all.jsonl", tmp_path / "one", **options)
    with _two_workers(cluster) as client, distributed.get_task_stream(client) as stream:
        dedup(tmp_path / "parts", tmp_path / "dist", client=client, **options)
    ids_read = [t for t in stream.data if "read_ids" in str(t["key"])]
    assert bool(ids_read) == (id_field is not None)
    name = "annotated" if annotate else "kept"
    parts = sorted((tmp_path / "dist" / name).iterdir())
    assert "".join(p.read_text() for p in parts) == (tmp_path / "one" / f"{name}.jsonl").read_text()
    duplicates = (tmp_path / "dist" / "duplicates.jsonl").read_text()
    assert duplicates == (tmp_path / "one" / "duplicates.jsonl").read_text()
    assert duplicates.count("\n") > 50
    assert ('"kept_id": "d' in duplicates) == (id_field is not None)


def test_bad_annotated_or_labelled_records_name_partition_and_row(cluster, tmp_path):
    """A field annotating would overwrite, a missing label: the partition and its document."""
    _write(RECORDS[:10], tmp_path / "a.jsonl")
    bad = [dict(r) for r in RECORDS[10:20]]
    bad[3]["cluster"] = 1
    del bad[5]["group"]
    _write(bad, tmp_path / "b.jsonl")
    with _two_workers(cluster) as client:
        with pytest.raises(InputError, match=r"b\.jsonl, document 4: the record has a field 'c"):
            dedup(tmp_path, tmp_path / "out", client=client, id_field="id", annotate=True)
        with pytest.raises(InputError, match=r"b\.jsonl, document 6: no field 'group'"):
            dedup(tmp_path, tmp_path / "out", client=client, truth_field="group")


# invalid records: the first line of all, a partition of them alone, and some in between
_INVALID = {
    0: b"{broken",
    40: b'{"id": "x"}',
    41: b'{"text": 5, "id": "y"}',
    42: b'{"text": "caf\xff", "id": "z"}',
    43: b'["text"]',
    200: b'{"text": "lone \\ud800", "id": "w"}',
}


@pytest.mark.parametrize("on_driver", [False, True])
def test_invalid_records_are_skipped_in_every_partition_as_on_one_machine(
    cluster, tmp_path, on_driver
):
    lines = [json.dumps(r).encode() for r in RECORDS[:400]]
    for at, line in sorted(_INVALID.items()):
        lines.insert(at, line)
    (tmp_path / "all.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    (tmp_path / "parts").mkdir()
    cuts = [0, 40, 44, 150, len(lines)]  # part1.jsonl: invalid records alone
    for p in range(4):
        chunk = lines[cuts[p] : cuts[p + 1]]
        (tmp_path / "parts" / f"part{p}.jsonl").write_bytes(b"\n".join(chunk) + b"\n")
    options = {"bits": 128, "max_distance": 8, "skip_invalid": True}  # ids from the records
    single = dedup_file(tmp_path / "all.jsonl", tmp_path / "single", **options)
    with _two_workers(cluster) as client:
        result = dedup(
            tmp_path / "parts",
            tmp_path / "spread",
            client=client,
            driver_input_bytes=(1 << 40) if on_driver else -1,
            **options,
        )
    assert result.summary["distributed"]["on_driver"] is on_driver
    for name in ("duplicates.jsonl",):
        assert (tmp_path / "spread" / name).read_bytes() == (
            tmp_path / "single" / name
        ).read_bytes()
    kept = b"".join(p.read_bytes() for p in sorted((tmp_path / "spread" / "kept").iterdir()))
    assert kept == (tmp_path / "single" / "kept.jsonl").read_bytes()
    assert b'"id": "d' in kept  # the records' own ids
    assert single.summary["results"]["removed"] == result.summary["results"]["removed"] > 10
    assert result.summary["results"]["skipped_invalid"] == len(_INVALID)
    assert single.summary["results"]["skipped_invalid"] == len(_INVALID)
    # each named by its partition and its line there
    where = [e.split(": ")[0] for e in result.summary["skipped"]]
    folder = tmp_path / "parts"
    assert where == [
        f"{folder / 'part0.jsonl'}, line 1",
        *(f"{folder / 'part1.jsonl'}, line {n}" for n in (1, 2, 3, 4)),
        f"{folder / 'part3.jsonl'}, line {200 - 150 + 1}",
    ]
    messages = [e.split(": ", 1)[1] for e in result.summary["skipped"]]
    assert messages == [e.split(": ", 1)[1] for e in single.summary["skipped"]]

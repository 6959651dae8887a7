"""A small corpus is deduplicated by the driver: the stages' outputs, the stages' errors."""

import collections
import json
import subprocess
import sys
import time
import warnings

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")

import dask.distributed

from gpusimhash.datasets.synth import CorpusSpec, generate
from gpusimhash.dedup.options import DedupOptions
from gpusimhash.dedup.pipeline import dedup_file
from gpusimhash.distributed import _cluster_stage as cluster_stage
from gpusimhash.distributed import _components as components
from gpusimhash.distributed import _features as features
from gpusimhash.distributed import _join_plan as join_plan
from gpusimhash.distributed import _pipeline, dedup
from gpusimhash.distributed import _tables as tables
from gpusimhash.distributed._inline import InlineClient, taken
from gpusimhash.io.readers import InputError

RECORDS = [
    {"id": f"d{d.id}", "text": d.text, "score": (d.id * 7919) % 101, "group": d.group}
    for d in generate(CorpusSpec(n_docs=1500, seed=11, max_length=40))
]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, write_partitioned):
    """The corpus as one file and as 5 partitions."""
    return write_partitioned(tmp_path_factory.mktemp("on-driver"), RECORDS, 5)


def _kept(out):
    """The kept (or annotated) records' bytes: one machine's file, or a cluster's parts in order."""
    name = "annotated" if any(out.glob("annotated*")) else "kept"
    if (out / f"{name}.jsonl").exists():
        return (out / f"{name}.jsonl").read_bytes()
    return b"".join(p.read_bytes() for p in sorted((out / name).iterdir()))


def _same_outputs(one, other):
    assert _kept(one) == _kept(other)
    assert (one / "duplicates.jsonl").read_bytes() == (other / "duplicates.jsonl").read_bytes()


def _stage_tasks(stream):
    """The stage of each task the cluster ran (keys ``gpusimhash-<stage>-<run>-...``)."""
    return [task["key"].split("-")[1] for task in stream.data]


def test_the_inline_client_runs_each_call_at_once():
    client = InlineClient()
    two = client.submit(len, [1, 2], key="k", workers=["w"], allow_other_workers=True)
    summed = client.submit(sum, [two, 3])
    assert client.gather([summed, (two, {"x": two})]) == [5, (2, {"x": 2})]
    assert client.submit(int, "ff", base=16).result() == 255  # other keywords reach the call
    [scattered] = client.scatter([np.arange(3)], broadcast=True, hash=False)
    assert client.submit(np.sum, scattered).result() == 3
    assert client.run(lambda: 7) == {"inline": 7}
    assert list(client.scheduler_info()["workers"]) == ["inline"]


def test_an_inline_tasks_error_is_raised_where_its_result_is_asked_for():
    client = InlineClient()
    failed = client.submit(int, "not a number")  # no error yet, as on a cluster
    after = client.submit(abs, failed)  # a task given a failed future fails with its error
    for future in (failed, after):
        with pytest.raises(ValueError, match="invalid literal"):
            future.result()
    with pytest.raises(ValueError, match="invalid literal"):
        client.gather([client.submit(abs, -1), after])


@pytest.mark.slow
@pytest.mark.parametrize(
    "options",
    [
        {},  # the defaults: the feature join
        {"bits": 128, "max_distance": 8, "keep": "score", "score_field": "score"},  # the codes
        {"min_jaccard": 0.6, "keep": "longest", "empty_as_duplicates": True},
    ],
)
def test_the_driver_writes_the_single_machines_outputs(corpus, tmp_path, options):
    single = dedup_file(corpus / "all.jsonl", tmp_path / "single", **options)
    with (
        distributed.Client(
            processes=False, n_workers=2, threads_per_worker=1, dashboard_address=":0"
        ) as client,
        distributed.get_task_stream(client) as stream,
    ):
        result = dedup(
            corpus / "parts",
            tmp_path / "spread",
            client=client,
            driver_input_bytes=1 << 30,
            **options,
        )
    spread = result.summary["distributed"]
    assert spread["on_driver"]
    assert spread["workers"] == 2
    # the workers fingerprint the partitions, and run nothing else
    assert sorted(_stage_tasks(stream)) == ["fingerprint"] * 5
    assert spread["fingerprinted_on_workers"]
    _same_outputs(tmp_path / "single", tmp_path / "spread")
    np.testing.assert_array_equal(result.removed, np.flatnonzero(~single.kept))
    for name in ("removed", "clusters", "candidate_code_pairs", "distinct_codes"):
        assert result.summary["results"][name] == single.summary["results"][name], name
    assert result.summary["results"]["removed"] > 50
    summary = json.loads((tmp_path / "spread" / "summary.json").read_text())
    assert summary["distributed"]["on_driver"]


@pytest.mark.parametrize("join", ["tables", "tiles"])
def test_the_driver_joins_by_the_tables_or_the_tiles_as_the_cluster(
    corpus, tmp_path, monkeypatch, force_join, join
):
    force_join(join)
    monkeypatch.setattr(tables, "SPLIT_CODES", 8)  # crowded buckets, joined apart by shares
    options = {"bits": 128, "max_distance": 8}
    dedup_file(corpus / "all.jsonl", tmp_path / "single", **options)
    result = dedup(corpus / "parts", tmp_path / "spread", driver_input_bytes=1 << 30, **options)
    spread = result.summary["distributed"]
    assert spread["on_driver"]
    assert spread["join"]["method"] == join
    assert (spread["crowded_buckets"] > 0) == (join == "tables")
    _same_outputs(tmp_path / "single", tmp_path / "spread")


@pytest.mark.slow
@pytest.mark.parametrize("by_components", [False, True])
def test_the_driver_annotates_scores_and_reports_as_the_cluster(
    corpus, tmp_path, monkeypatch, by_components
):
    if by_components:  # the graph split by its components, labelled in rounds, on either side
        monkeypatch.setattr(cluster_stage, "ONE_GROUP_WORK", -1)
        monkeypatch.setattr(components, "ONE_TASK_BYTES", -1)
    options = {"annotate": True, "truth_field": "group", "report": True}
    with distributed.Client(
        processes=False, n_workers=2, threads_per_worker=1, dashboard_address=":0"
    ) as client:
        runs = {
            limit: dedup(
                corpus / "parts",
                tmp_path / str(limit),
                client=client,
                driver_input_bytes=limit,
                **options,
            )
            for limit in (1 << 30, -1)
        }
    on_driver, on_cluster = tmp_path / str(1 << 30), tmp_path / "-1"
    files = sorted(p.relative_to(on_driver) for p in on_driver.rglob("*") if p.is_file())
    assert {"report.md", "duplicates.jsonl", "annotated/part-00004.jsonl"} <= set(map(str, files))
    for name in files:
        if name.name != "summary.json":  # its timings and distributed section differ
            assert (on_driver / name).read_bytes() == (on_cluster / name).read_bytes(), name
    assert runs[1 << 30].summary["ground_truth"] == runs[-1].summary["ground_truth"]
    assert [r.summary["distributed"]["on_driver"] for r in runs.values()] == [True, False]
    for run in runs.values():
        assert (run.summary["distributed"]["label_rounds"] > 0) == by_components


@pytest.mark.slow
def test_the_input_bytes_decide_the_driver_or_the_cluster(corpus, tmp_path, monkeypatch):
    size = sum(p.stat().st_size for p in (corpus / "parts").iterdir())
    with distributed.Client(
        processes=False, n_workers=2, threads_per_worker=1, dashboard_address=":0"
    ) as client:
        for limit, on_driver in ((size, True), (size - 1, False)):
            out = tmp_path / str(limit)
            with distributed.get_task_stream(client) as stream:
                result = dedup(corpus / "parts", out, client=client, driver_input_bytes=limit)
            assert result.summary["distributed"]["on_driver"] == on_driver
            assert (set(_stage_tasks(stream)) == {"fingerprint"}) == on_driver
        monkeypatch.setattr(_pipeline, "DRIVER_INPUT_BYTES", size)  # the default
        result = dedup(corpus / "parts", tmp_path / "default", client=client)
    assert result.summary["distributed"]["on_driver"]
    for out in (str(size - 1), "default"):
        _same_outputs(tmp_path / str(size), tmp_path / out)


class _Cluster:
    """What `runs_on_driver` asks of a client: its workers and their loops' threads."""

    def __init__(self, workers):
        self.workers = workers  # address: (host, threads)

    def scheduler_info(self):
        return {"workers": {a: {"host": host} for a, (host, _) in self.workers.items()}}

    def run(self, function):
        return {a: n for a, (_, n) in self.workers.items()}


LOCAL = "tcp://127.0.0.1:{}"


@pytest.mark.parametrize(
    ("workers", "driver_threads", "on_driver", "whole_index_on_driver"),
    [
        ({LOCAL.format(1): ("127.0.0.1", 1)}, 2, True, True),  # half the driver's threads
        ({LOCAL.format(1): ("127.0.0.1", 1)}, 1, False, True),  # as many
        ({LOCAL.format(1): ("127.0.0.1", 2), LOCAL.format(2): ("127.0.0.1", 1)}, 2, False, False),
        ({LOCAL.format(1): ("127.0.0.1", 2), LOCAL.format(2): ("127.0.0.1", 1)}, 5, False, True),
        ({LOCAL.format(1): ("127.0.0.1", 2), LOCAL.format(2): ("127.0.0.1", 1)}, 6, True, True),
        ({"inproc://192.0.2.2/1/1": ("192.0.2.2", 1)}, 4, True, True),
        ({"tcp://[::1]:1": ("::1", 1)}, 4, True, True),
        ({"tcp://10.0.0.7:1": ("10.0.0.7", 1)}, 64, False, False),  # another machine's cores
        (
            {LOCAL.format(1): ("127.0.0.1", 1), "tcp://10.0.0.7:1": ("10.0.0.7", 1)},
            64,
            False,
            False,
        ),
        ({"tcp://node-3:1": ("node-3", 1)}, 64, False, False),
        ({}, 64, False, False),
    ],
)
def test_a_local_cluster_of_few_threads_leaves_the_input_to_the_driver(
    corpus, monkeypatch, workers, driver_threads, on_driver, whole_index_on_driver
):
    monkeypatch.setattr(_pipeline, "DRIVER_INPUT_BYTES", 0)  # no input is small
    monkeypatch.setattr(_pipeline, "threads", lambda: driver_threads)
    paths = sorted((corpus / "parts").iterdir())
    cluster = _Cluster(workers)
    assert _pipeline.runs_on_driver(paths, None, cluster) == on_driver
    # every worker would build the whole feature index: as many threads as theirs suffice
    assert _pipeline.runs_on_driver(paths, None, cluster, whole_index=True) == (
        whole_index_on_driver
    )
    assert not _pipeline.runs_on_driver(paths, -1, cluster)  # always the cluster
    assert not _pipeline.runs_on_driver(paths)  # no client: the bytes alone


@pytest.mark.parametrize(
    ("workers", "fingerprinting"),
    [
        ({LOCAL.format(1): ("127.0.0.1", 1), LOCAL.format(2): ("127.0.0.1", 1)}, True),
        ({"inproc://192.0.2.2/1/1": ("192.0.2.2", 1), "inproc://192.0.2.2/1/2": ("", 1)}, True),
        ({LOCAL.format(1): ("127.0.0.1", 4)}, False),  # one worker reads them one by one
        ({LOCAL.format(1): ("127.0.0.1", 1), "tcp://10.0.0.7:1": ("10.0.0.7", 1)}, False),
        ({}, False),
    ],
)
def test_local_workers_fingerprint_the_partitions_of_a_run_on_the_driver(
    corpus, workers, fingerprinting
):
    paths = sorted((corpus / "parts").iterdir())
    cluster = _Cluster(workers)
    assert (_pipeline._fingerprinting(cluster, paths) is cluster) == fingerprinting
    assert _pipeline._fingerprinting(cluster, paths[:1]) is None  # one partition
    assert _pipeline._fingerprinting(None, paths) is None  # no cluster


def test_taken_brings_each_result_or_error_in_the_futures_order():
    with distributed.Client(
        processes=False, n_workers=2, threads_per_worker=1, dashboard_address=":0"
    ) as client:
        futures = [
            client.submit(time.sleep, 0.2, pure=False),  # the last to end
            client.submit(int, "not a number"),
            client.submit(len, [1, 2, 3]),
        ]
        slow, failed, three = taken(client, futures)
    assert (slow.result(), three.result()) == (None, 3)
    with pytest.raises(ValueError, match="invalid literal"):
        failed.result()  # kept, raised where asked for, as on the cluster


def test_taken_cancels_the_tasks_left_when_interrupted(monkeypatch):
    def interrupted(futures):
        yield futures[0]
        raise KeyboardInterrupt

    monkeypatch.setattr(dask.distributed, "as_completed", interrupted)
    with distributed.Client(
        processes=False, n_workers=1, threads_per_worker=1, dashboard_address=":0"
    ) as client:
        done = client.submit(len, [1])
        distributed.wait(done)
        waiting = client.submit(time.sleep, 30, pure=False)
        with pytest.raises(KeyboardInterrupt):
            taken(client, [done, waiting])
        assert (done.status, waiting.status) == ("finished", "cancelled")


def test_the_feature_join_builds_the_whole_index_on_every_worker():
    assert _pipeline.whole_index(DedupOptions(), 256)  # the defaults: the feature join
    assert not _pipeline.whole_index(DedupOptions(max_distance=3), 128)  # the codes' join
    assert not _pipeline.whole_index(DedupOptions(verify=False), 256)


@pytest.mark.slow
def test_a_one_thread_local_worker_beside_the_driver(corpus, tmp_path, monkeypatch):
    from gpusimhash.distributed import local_cluster

    monkeypatch.setattr(_pipeline, "DRIVER_INPUT_BYTES", 0)  # no input is small
    dedup_file(corpus / "all.jsonl", tmp_path / "single")
    with (
        local_cluster(1, 1, dashboard_address=":0") as cluster,
        distributed.Client(cluster) as client,
    ):
        result = dedup(corpus / "parts", tmp_path / "default", client=client)
    # the defaults' feature join: a worker with no more threads than the driver's
    assert result.summary["distributed"]["on_driver"]
    assert result.summary["distributed"]["workers"] == 1
    # one worker would read the partitions one by one, as the driver does
    assert not result.summary["distributed"]["fingerprinted_on_workers"]
    _same_outputs(tmp_path / "single", tmp_path / "default")


@pytest.mark.slow
def test_the_driver_warns_and_fails_as_the_cluster(corpus, tmp_path, monkeypatch):
    monkeypatch.setattr(join_plan, "_WARN_RATIO", 0.0)  # every join of the codes warns
    monkeypatch.setattr(join_plan, "_WARN_SECONDS", -1.0)
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "a.jsonl").write_text(json.dumps(RECORDS[0]) + "\n")
    (tmp_path / "bad" / "b.jsonl").write_text(json.dumps({"id": "x", "body": "no text"}) + "\n")
    with pytest.raises(InputError) as single:
        dedup_file(tmp_path / "bad" / "b.jsonl", tmp_path / "single", id_field="id")
    caught = {}
    with distributed.Client(
        processes=False, n_workers=1, threads_per_worker=1, dashboard_address=":0"
    ) as client:
        for limit in (1 << 30, -1):
            with warnings.catch_warnings(record=True) as caught[limit]:
                warnings.simplefilter("always", join_plan.JoinWorkWarning)
                options = {"driver_input_bytes": limit, "candidates": "codes"}
                dedup(corpus / "parts", tmp_path / f"codes{limit}", client=client, **options)
            with pytest.raises(InputError) as spread:
                dedup(tmp_path / "bad", tmp_path / f"bad{limit}", client=client, **options)
            assert str(spread.value) == str(single.value)
            assert "b.jsonl, line 1: no field 'text'" in str(spread.value)
    warned = [
        [str(w.message) for w in found if issubclass(w.category, join_plan.JoinWorkWarning)]
        for found in caught.values()
    ]
    assert len(warned[0]) == 1
    assert warned[0] == warned[1]


def test_a_partitions_error_from_the_workers_fingerprinting_is_one_machines(tmp_path):
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "a.jsonl").write_text(json.dumps(RECORDS[0]) + "\n")
    (tmp_path / "bad" / "b.jsonl").write_text(json.dumps({"id": "x", "body": "no text"}) + "\n")
    with pytest.raises(InputError) as single:
        dedup_file(tmp_path / "bad" / "b.jsonl", tmp_path / "single", id_field="id")
    with (
        distributed.Client(
            processes=False, n_workers=2, threads_per_worker=1, dashboard_address=":0"
        ) as client,
        distributed.get_task_stream(client) as stream,
        pytest.raises(InputError) as spread,
    ):
        dedup(tmp_path / "bad", tmp_path / "spread", client=client, driver_input_bytes=1 << 30)
    assert sorted(_stage_tasks(stream)) == ["fingerprint", "fingerprint"]  # on the driver
    assert str(spread.value) == str(single.value)
    assert "b.jsonl, line 1: no field 'text'" in str(spread.value)


@pytest.mark.slow
def test_without_a_client_or_a_cluster_the_driver_deduplicates_a_small_input(
    corpus, tmp_path, monkeypatch, capsys
):
    from gpusimhash.cli import distributed as cli_distributed
    from gpusimhash.cli import main

    monkeypatch.setattr(_pipeline, "DRIVER_INPUT_BYTES", 1 << 30)  # the default's decision
    single = dedup_file(corpus / "all.jsonl", tmp_path / "single")
    result = dedup(corpus / "parts", tmp_path / "api")  # no client, none current
    assert (
        result.summary["distributed"]["workers"],
        result.summary["distributed"]["on_driver"],
    ) == (0, True)
    _same_outputs(tmp_path / "single", tmp_path / "api")

    def no_cluster(args):
        raise AssertionError("a local cluster was started")

    monkeypatch.setattr(cli_distributed, "_client", no_cluster)
    command = ["dedup", str(corpus / "parts"), "--workers", "2", "--out", str(tmp_path / "cli")]
    assert main([*command, "-q", "--no-report"]) == 0, capsys.readouterr().err
    _same_outputs(tmp_path / "single", tmp_path / "cli")
    assert np.flatnonzero(~single.kept).tolist() == result.removed.tolist()


def test_the_driver_without_a_client_never_imports_dask(corpus, tmp_path):
    # a fresh process: this one has imported Dask's distributed already
    code = (
        "import sys\n"
        "from gpusimhash.distributed import dedup\n"
        f"result = dedup({str(corpus / 'parts')!r}, {str(tmp_path / 'out')!r}, "
        "driver_input_bytes=1 << 40)\n"
        "assert result.summary['distributed']['on_driver']\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed')))\n"
    )
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "[]"


def test_the_workers_option_states_the_drivers_bound(capsys):
    from gpusimhash._choices import DRIVER_INPUT_BYTES  # the default (this module patches it)
    from gpusimhash.cli import main

    with pytest.raises(SystemExit):
        main(["dedup", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert f"at most {DRIVER_INPUT_BYTES >> 20} MiB is deduplicated" in help_text


def test_workers_with_the_feature_join_start_no_local_cluster(corpus, tmp_path, monkeypatch):
    from gpusimhash.cli import distributed as cli_distributed
    from gpusimhash.cli import main

    monkeypatch.setattr(_pipeline, "DRIVER_INPUT_BYTES", 0)  # no input is small
    # a 4-thread driver beside 2 workers of 2 threads (another test may cap this process's)
    monkeypatch.setattr(_pipeline, "threads", lambda: 4)
    monkeypatch.setattr(cli_distributed, "_worker_threads", lambda args: 2)

    def no_cluster(args):
        raise AssertionError("a local cluster was started")

    monkeypatch.setattr(cli_distributed, "_client", no_cluster)
    single = dedup_file(corpus / "all.jsonl", tmp_path / "single")
    out = tmp_path / "cli"
    command = ["dedup", str(corpus / "parts"), "--workers", "2", "--out", str(out), "--json"]
    assert main([*command, "-q", "--no-report"]) == 0
    assert json.loads((out / "summary.json").read_text())["distributed"]["on_driver"]
    _same_outputs(tmp_path / "single", out)
    assert np.flatnonzero(~single.kept).size


@pytest.mark.parametrize("annotate", [False, True])
def test_invalid_plain_text_lines_are_skipped_as_on_one_machine(tmp_path, annotate):
    lines = [r["text"].encode() for r in RECORDS[:400]]
    for at in (0, 150, 151, 399):
        lines.insert(at, b"caf\xff " + lines[at])  # not UTF-8
    (tmp_path / "all.txt").write_bytes(b"\n".join(lines) + b"\n")
    (tmp_path / "parts").mkdir()
    for name, (lo, hi) in {"a.txt": (0, 151), "b.txt": (151, len(lines))}.items():
        (tmp_path / "parts" / name).write_bytes(b"\n".join(lines[lo:hi]) + b"\n")
    options = {"bits": 64, "max_distance": 6, "skip_invalid": True, "annotate": annotate}
    single = dedup_file(tmp_path / "all.txt", tmp_path / "single", **options)
    result = dedup(tmp_path / "parts", tmp_path / "spread", driver_input_bytes=1 << 30, **options)
    _same_outputs(tmp_path / "single", tmp_path / "spread")
    assert result.summary["results"]["skipped_invalid"] == 4
    assert single.summary["results"]["removed"] == result.summary["results"]["removed"] > 10
    where = [e.split(": ")[0] for e in result.summary["skipped"]]
    folder = tmp_path / "parts"
    assert where == [
        f"{folder / 'a.txt'}, line 1",
        f"{folder / 'a.txt'}, line 151",
        f"{folder / 'b.txt'}, line 1",
        f"{folder / 'b.txt'}, line {399 - 151 + 1}",
    ]


class _RecordingClient:
    """A client that records each task's key and placement, then submits it."""

    def __init__(self, client, events=None):
        self._client = client
        self.placed = {}
        self.priority = {}
        self.events = [] if events is None else events  # the keys submitted, in order

    def submit(self, function, *args, **kwargs):
        self.placed[kwargs.get("key")] = kwargs.get("workers")
        self.priority[kwargs.get("key")] = kwargs.get("priority", 0)
        self.events.append(kwargs.get("key"))
        return self._client.submit(function, *args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._client, name)


def _recorded_run(corpus, tmp_path, events=None):
    """Run the stages on 2 workers through a `_RecordingClient`, with one machine's outputs.

    Returns the recording client, the task stream's tasks and the workers' addresses, sorted.
    """
    with (
        distributed.Client(
            processes=False, n_workers=2, threads_per_worker=1, dashboard_address=":0"
        ) as client,
        distributed.get_task_stream(client) as stream,
    ):
        recording = _RecordingClient(client, events)
        dedup(corpus / "parts", tmp_path / "spread", client=recording, driver_input_bytes=-1)
        workers = sorted(client.scheduler_info()["workers"])
    dedup_file(corpus / "all.jsonl", tmp_path / "single")
    _same_outputs(tmp_path / "single", tmp_path / "spread")
    return recording, stream.data, workers


def test_the_write_tasks_are_placed_round_the_workers_when_submitted(corpus, tmp_path):
    # unplaced, Dask's scheduler would hold each back until a worker is free, and a local
    # cluster's scheduler answers late while the driver writes the duplicates report
    recording, _, workers = _recorded_run(corpus, tmp_path)
    writes = {k: w for k, w in recording.placed.items() if k and "-write-" in k}
    assert len(writes) == 5
    by_partition = sorted((int(k.rsplit("-", 1)[1]), w) for k, w in writes.items())
    assert by_partition == [(d, [workers[d % 2]]) for d in range(5)]


def test_the_parts_are_written_without_a_wait_for_the_driver(corpus, tmp_path, monkeypatch):
    # each write task takes its rows from the clustering's result, so it begins as the
    # clustering ends, not once the driver has the removals and submits it
    events = []
    result = distributed.Future.result

    def asked(future, *args, **kwargs):
        if "-cluster-" in str(future.key):
            events.append("result")
        return result(future, *args, **kwargs)

    monkeypatch.setattr(distributed.Future, "result", asked)
    _recorded_run(corpus, tmp_path, events)
    writes = [at for at, key in enumerate(events) if key and "-write-" in key]
    assert len(writes) == 5
    assert max(writes) < events.index("result")


def test_each_shares_pairs_and_counts_are_taken_where_it_ran(corpus, tmp_path):
    # submitted with its share, on its worker: the counts of the last shares follow them at once
    recording, _, _ = _recorded_run(corpus, tmp_path)
    keys = [key for key in recording.events if key]
    shares = [key for key in keys if "-feature-share-" in key]
    assert len(shares) == 8
    for key in shares:
        at = keys.index(key)
        taken = [key.replace("-feature-share-", f"-share-{what}-") for what in ("pairs", "counts")]
        assert keys[at + 1 : at + 3] == taken
        assert [recording.placed[k] for k in taken] == [recording.placed[key]] * 2


def test_the_report_codes_are_taken_where_the_parts_are_before_the_writes(corpus, tmp_path):
    # unplaced, the codes tasks would wait in the scheduler's queue behind the placed writes,
    # and the driver's duplicates report with them
    recording, tasks, _ = _recorded_run(corpus, tmp_path)
    ran = {t["key"]: t["worker"] for t in tasks}
    fingerprinted = {k.rsplit("-", 1)[1]: w for k, w in ran.items() if "-fingerprint-" in k}
    codes = [key for key in recording.placed if key and "-codes-" in key]
    writes = [key for key in recording.placed if key and "-write-" in key]
    assert len(codes) == len(writes) == len(fingerprinted) == 5
    for key in codes:
        assert recording.placed[key] == [fingerprinted[key.rsplit("-", 1)[1]]]
        assert all(recording.priority[key] > recording.priority[w] for w in writes)


def test_a_slow_worker_probes_fewer_feature_shares(corpus, tmp_path, monkeypatch):
    # each share a worker finishes hands it the next: the other worker takes the slow one's
    probe = features.probe_share
    slow = {}

    def slowed(indexed, share, max_pairs):
        if distributed.get_worker().address == slow["address"]:
            time.sleep(0.5)
        return probe(indexed, share, max_pairs)

    monkeypatch.setattr(features, "probe_share", slowed)
    with (
        distributed.Client(
            processes=False, n_workers=2, threads_per_worker=1, dashboard_address=":0"
        ) as client,
        distributed.get_task_stream(client) as stream,
    ):
        slow["address"] = min(client.scheduler_info()["workers"])
        result = dedup(corpus / "parts", tmp_path / "spread", client=client, driver_input_bytes=-1)
    ran = collections.Counter(t["worker"] for t in stream.data if "-feature-share-" in t["key"])
    assert result.summary["distributed"]["join"]["shares"] == sum(ran.values()) == 8
    assert ran[slow["address"]] <= 3  # those it held at first, where it had half of them
    dedup_file(corpus / "all.jsonl", tmp_path / "single")
    _same_outputs(tmp_path / "single", tmp_path / "spread")

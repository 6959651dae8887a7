"""A small corpus runs as one task on one worker: the stages' outputs, the stages' errors."""

import json
import warnings

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")

from gpusimhash.datasets.synth import CorpusSpec, generate
from gpusimhash.dedup.pipeline import dedup_file
from gpusimhash.distributed import _join_plan as join_plan
from gpusimhash.distributed import _pipeline, dedup
from gpusimhash.distributed._inline import InlineClient
from gpusimhash.io.readers import InputError

RECORDS = [
    {"id": f"d{d.id}", "text": d.text, "score": (d.id * 7919) % 101}
    for d in generate(CorpusSpec(n_docs=1500, seed=11, max_length=40))
]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """The corpus as one file and as 5 partitions."""
    root = tmp_path_factory.mktemp("one-task")
    lines = [json.dumps(r) + "\n" for r in RECORDS]
    (root / "all.jsonl").write_text("".join(lines))
    (root / "parts").mkdir()
    for p, rows in enumerate(np.array_split(np.arange(len(lines)), 5)):
        (root / "parts" / f"part{p}.jsonl").write_text("".join(lines[r] for r in rows))
    return root


def _task_keys(stream):
    return [t["key"] if isinstance(t["key"], str) else t["key"][0] for t in stream.data]


def _kept(out):
    """The kept records' bytes: one machine's file, or a cluster's parts in order."""
    if (out / "kept.jsonl").exists():
        return (out / "kept.jsonl").read_bytes()
    return b"".join(p.read_bytes() for p in sorted((out / "kept").iterdir()))


def _same_outputs(one, other):
    assert _kept(one) == _kept(other)
    assert (one / "duplicates.jsonl").read_bytes() == (other / "duplicates.jsonl").read_bytes()


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
def test_one_task_writes_the_single_machines_outputs(corpus, tmp_path, options):
    single = dedup_file(corpus / "all.jsonl", tmp_path / "single", **options)
    with (
        distributed.LocalCluster(
            processes=True, n_workers=2, threads_per_worker=1, dashboard_address=":0"
        ) as cluster,
        distributed.Client(cluster) as client,
        distributed.get_task_stream(client) as stream,
    ):
        result = dedup(
            corpus / "parts",
            tmp_path / "spread",
            client=client,
            one_task_input_bytes=1 << 30,
            **options,
        )
    spread = result.summary["distributed"]
    assert spread["one_task"]
    assert spread["workers"] == 2
    assert [key.split("-")[1] for key in _task_keys(stream)] == ["one"]
    _same_outputs(tmp_path / "single", tmp_path / "spread")
    np.testing.assert_array_equal(result.removed, np.flatnonzero(~single.kept))
    for name in ("removed", "clusters", "candidate_code_pairs", "distinct_codes"):
        assert result.summary["results"][name] == single.summary["results"][name], name
    assert result.summary["results"]["removed"] > 50
    summary = json.loads((tmp_path / "spread" / "summary.json").read_text())
    assert summary["distributed"]["one_task"]


@pytest.mark.slow
def test_the_input_bytes_decide_one_task_or_the_stages(corpus, tmp_path, monkeypatch):
    size = sum(p.stat().st_size for p in (corpus / "parts").iterdir())
    with distributed.Client(
        processes=False, n_workers=2, threads_per_worker=1, dashboard_address=":0"
    ) as client:
        for limit, one_task in ((size, True), (size - 1, False)):
            out = tmp_path / str(limit)
            with distributed.get_task_stream(client) as stream:
                result = dedup(corpus / "parts", out, client=client, one_task_input_bytes=limit)
            assert result.summary["distributed"]["one_task"] == one_task
            assert (len(_task_keys(stream)) == 1) == one_task
        monkeypatch.setattr(_pipeline, "ONE_TASK_INPUT_BYTES", size)  # the default
        result = dedup(corpus / "parts", tmp_path / "default", client=client)
    assert result.summary["distributed"]["one_task"]
    for out in (str(size - 1), "default"):
        _same_outputs(tmp_path / str(size), tmp_path / out)


@pytest.mark.slow
def test_one_task_raises_its_warnings_and_errors_on_the_driver(corpus, tmp_path, monkeypatch):
    monkeypatch.setattr(join_plan, "_WARN_RATIO", 0.0)  # every join of the codes warns
    monkeypatch.setattr(join_plan, "_WARN_SECONDS", -1.0)
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "a.jsonl").write_text(json.dumps(RECORDS[0]) + "\n")
    (tmp_path / "bad" / "b.jsonl").write_text(json.dumps({"id": "x", "body": "no text"}) + "\n")
    with pytest.raises(InputError) as single:
        dedup_file(tmp_path / "bad" / "b.jsonl", tmp_path / "single", id_field="id")
    with (
        distributed.Client(
            processes=False, n_workers=1, threads_per_worker=1, dashboard_address=":0"
        ) as client,
        warnings.catch_warnings(record=True) as caught,
    ):
        warnings.simplefilter("always", join_plan.JoinWorkWarning)
        options = {"one_task_input_bytes": 1 << 30, "candidates": "codes"}
        result = dedup(corpus / "parts", tmp_path / "codes", client=client, **options)
        with pytest.raises(InputError) as spread:
            dedup(tmp_path / "bad", tmp_path / "bad-out", client=client, **options)
    assert result.summary["distributed"]["one_task"]
    found = [w for w in caught if issubclass(w.category, join_plan.JoinWorkWarning)]
    assert len(found) == 1
    assert "estimated at" in str(found[0].message)
    assert str(spread.value) == str(single.value)
    assert "b.jsonl, line 1: no field 'text'" in str(spread.value)

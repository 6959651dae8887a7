"""What the distributed dedup is given: options it lacks, mixed and empty partitions, its folder.

Each run here is small enough for the driver (the stages' code, each task a call) unless a test
starts a cluster; the conftest's fixture puts the stages on the cluster, so the runs that need
no cluster undo it.
"""

import json

import pytest
from dask import distributed

from gpusimhash.dedup.pipeline import dedup_file
from gpusimhash.distributed import _pipeline, dedup
from gpusimhash.io.inputs import input_files
from gpusimhash.io.readers import InputError

TEXTS = ["red fox jumps high", "blue sky above us", "green sea below", "red fox jumps high"]


@pytest.fixture(autouse=True)
def on_the_driver(monkeypatch):
    """Run the stages on the driver: these tests need no cluster."""
    monkeypatch.setattr(_pipeline, "DRIVER_INPUT_BYTES", 1 << 20)


def _jsonl(path, records):
    path.write_text("".join(json.dumps(record) + "\n" for record in records))


def _outputs(out):
    """The kept records (a cluster's parts in order, or one machine's file) and the report."""
    kept = out / "kept.jsonl"
    if not kept.exists():
        kept_bytes = b"".join(p.read_bytes() for p in sorted((out / "kept").iterdir()))
    else:
        kept_bytes = kept.read_bytes()
    return kept_bytes, (out / "duplicates.jsonl").read_bytes()


@pytest.mark.parametrize(
    ("option", "value"), [("against", "some-index"), ("add_kept", True), ("pairs", True)]
)
def test_options_of_one_machine_alone_are_refused_by_name(tmp_path, option, value):
    _jsonl(tmp_path / "a.jsonl", [{"text": t} for t in TEXTS])
    with pytest.raises(ValueError, match=f"does not support {option}={value!r}"):
        dedup(tmp_path / "a.jsonl", tmp_path / "out", **{option: value})
    assert not (tmp_path / "out").exists()


def test_a_plain_text_partition_after_one_with_ids_is_numbered_by_global_row(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    _jsonl(folder / "a.jsonl", [{"id": 0, "text": TEXTS[0]}, {"id": 1, "text": TEXTS[1]}])
    (folder / "b.txt").write_text(f"{TEXTS[2]}\n{TEXTS[0]}\n")
    dedup_file(input_files(folder), tmp_path / "one")
    dedup(folder, tmp_path / "cluster")
    assert _outputs(tmp_path / "cluster") == _outputs(tmp_path / "one")
    (report,) = (tmp_path / "cluster" / "duplicates.jsonl").read_text().splitlines()
    assert json.loads(report)["ids"] == [0, 3]


def test_an_empty_first_partition_leaves_the_ids_of_the_first_record(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "p0.jsonl").write_text("\n")
    records = [{"id": f"doc-{n}", "text": t} for n, t in enumerate(TEXTS)]
    _jsonl(folder / "p1.jsonl", records)
    _jsonl(tmp_path / "all.jsonl", records)
    dedup_file(tmp_path / "all.jsonl", tmp_path / "one")
    dedup(folder, tmp_path / "cluster")
    assert _outputs(tmp_path / "cluster") == _outputs(tmp_path / "one")
    assert '"kept_id": "doc-0"' in (tmp_path / "cluster" / "duplicates.jsonl").read_text()


def test_a_later_run_replaces_every_part_and_a_failed_one_leaves_them(tmp_path):
    for name, n_parts in (("four", 4), ("two", 2)):
        (tmp_path / name).mkdir()
        for p in range(n_parts):
            records = [{"text": f"{name} {p} {t}", "label": 1} for t in TEXTS]
            _jsonl(tmp_path / name / f"p{p}.jsonl", records)
    out = tmp_path / "out"
    dedup(tmp_path / "four", out)
    dedup(tmp_path / "two", out)
    assert sorted(p.name for p in (out / "kept").iterdir()) == [
        "part-00000.jsonl",
        "part-00001.jsonl",
    ]
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    _jsonl(tmp_path / "two" / "p1.jsonl", [{"text": t} for t in TEXTS])  # no label
    with pytest.raises(InputError, match=r"p1\.jsonl, document 1: no field 'label'"):
        dedup(tmp_path / "two", out, truth_field="label")
    after = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert after == before


def test_an_output_folder_holding_the_input_is_refused_before_any_work(tmp_path):
    _jsonl(tmp_path / "a.jsonl", [{"text": t} for t in TEXTS])
    with pytest.raises(ValueError, match="a.jsonl"):
        dedup(tmp_path, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.jsonl"]


def test_a_closed_client_is_refused_by_its_status(tmp_path):
    _jsonl(tmp_path / "a.jsonl", [{"text": t} for t in TEXTS])
    with distributed.Client(processes=False, n_workers=1, dashboard_address=":0") as client:
        pass
    with pytest.raises(ValueError, match="the Dask client is closed: pass a running client"):
        dedup(tmp_path / "a.jsonl", tmp_path / "out", client=client)


def test_a_cluster_without_workers_is_refused_after_a_wait(tmp_path, monkeypatch):
    monkeypatch.setattr(_pipeline, "WAIT_FOR_WORKERS", 1)
    monkeypatch.setattr(_pipeline, "DRIVER_INPUT_BYTES", -1)
    _jsonl(tmp_path / "a.jsonl", [{"text": t} for t in TEXTS])
    with (
        distributed.LocalCluster(n_workers=0, processes=False, dashboard_address=":0") as empty,
        distributed.Client(empty) as client,
        pytest.raises(RuntimeError, match=r"has no workers, and none joined in 1 s"),
    ):
        dedup(tmp_path / "a.jsonl", tmp_path / "out", client=client)
    assert not (tmp_path / "out").exists()


def test_a_csv_part_that_keeps_no_record_has_the_header_of_the_kept_records(tmp_path):
    # one machine's header: no kept record has the url
    folder = tmp_path / "in"
    folder.mkdir()
    _jsonl(folder / "p0.jsonl", [{"id": n, "text": t} for n, t in enumerate(TEXTS)])
    _jsonl(folder / "p1.jsonl", [{"id": 9, "text": TEXTS[1], "url": "u"}])
    dedup_file(input_files(folder), tmp_path / "one", output_format="csv")
    dedup(folder, tmp_path / "out", output_format="csv")
    assert (tmp_path / "one" / "kept.csv").read_bytes().startswith(b"id,text\r\n")
    assert (tmp_path / "out" / "kept" / "part-00001.csv").read_bytes() == b"id,text\r\n"


@pytest.mark.parametrize(
    ("value", "error", "match"),
    [
        ("x", TypeError, "driver_input_bytes must be an int .*, got str 'x'"),
        (True, TypeError, "got bool True"),
        (2.5, TypeError, "got float 2.5"),
        (-2, ValueError, "driver_input_bytes must be -1 or more, got -2"),
    ],
)
def test_a_bad_driver_bound_is_refused_by_name(tmp_path, value, error, match):
    _jsonl(tmp_path / "a.jsonl", [{"text": t} for t in TEXTS])
    with pytest.raises(error, match=match):
        dedup(tmp_path / "a.jsonl", tmp_path / "out", driver_input_bytes=value)

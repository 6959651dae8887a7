"""Parquet and CSV parts of the distributed dedup: one machine's columns and types in every part.

Parquet inputs are written back with their own schema, as one machine writes them; parts whose
schema is inferred (JSONL inputs) are brought to the schema of one file of all their records,
so that a reader of the folder (which takes the first part's schema) gets every column. CSV
parts are brought to the header of one file of all their records: the parts, their headers but
the first left out, are one machine's file. Each run is on the driver and on a cluster of two
worker processes.
"""

import datetime
import decimal
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from dask import distributed

from gpusimhash.dedup.pipeline import dedup_file
from gpusimhash.distributed import _pipeline, dedup
from gpusimhash.io.inputs import input_files

TEXTS = ["red fox jumps high", "blue sky above us", "green sea below", "red fox jumps high"]


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(
        processes=True, n_workers=2, threads_per_worker=1, dashboard_address=":0"
    ) as local:
        yield local


@pytest.fixture(params=["driver", "cluster"])
def run(request, monkeypatch):
    """Return a function running the distributed dedup on the driver, or on the cluster."""
    if request.param == "driver":
        monkeypatch.setattr(_pipeline, "DRIVER_INPUT_BYTES", 1 << 30)

        def on_driver(inputs, out, **options):
            return dedup(inputs, out, **options)

        return on_driver
    local = request.getfixturevalue("cluster")

    def on_cluster(inputs, out, **options):
        with distributed.Client(local) as client:
            return dedup(inputs, out, client=client, **options)

    return on_cluster


def _partitions(tmp_path, *partitions):
    """Write each partition's records as a JSONL file of a new folder; return the folder."""
    folder = tmp_path / "in"
    folder.mkdir()
    for p, records in enumerate(partitions):
        text = "".join(json.dumps(record) + "\n" for record in records)
        (folder / f"{'abc'[p]}.jsonl").write_text(text)
    return folder


def _both(tmp_path, run, folder, **options):
    """Deduplicate on one machine (``one``) and spread (``spread``); return the records' name."""
    dedup_file(input_files(folder), tmp_path / "one", **options)
    run(folder, tmp_path / "spread", **options)
    return "annotated" if options.get("annotate") else "kept"


def _table(texts, first):
    """Records of many column types, ids from ``first``."""
    n = len(texts)
    when = datetime.datetime(2024, 5, 1, 12, 0, 0, 123456, tzinfo=datetime.UTC)
    return pa.table(
        {
            "id": pa.array(range(first, first + n), pa.int32()),
            "text": texts,
            "small": pa.array([1] * n, pa.int8()),
            "at": pa.array([when] * n, pa.timestamp("ns", tz="UTC")),
            "tag": pa.array(["x"] * n).dictionary_encode(),
            "price": pa.array([decimal.Decimal("1.25")] * n, pa.decimal128(9, 2)),
            "half": pa.array([1.5] * n, pa.float16()),
            "bytes": pa.array([b"\x00\x01"] * n, pa.binary()),
        }
    )


def _read(folder):
    """Every part's records, as one table, and each part's schema."""
    parts = sorted(folder.iterdir())
    return pa.concat_tables([pq.read_table(p) for p in parts]), [pq.read_schema(p) for p in parts]


@pytest.mark.parametrize("annotate", [False, True])
def test_parquet_inputs_keep_their_column_types(tmp_path, run, annotate):
    folder = tmp_path / "in"
    folder.mkdir()
    pq.write_table(_table(TEXTS[:2], 0), folder / "a.parquet")
    pq.write_table(_table(TEXTS[2:], 2), folder / "b.parquet")
    name = _both(tmp_path, run, folder, output_format="parquet", annotate=annotate, bits=64)
    one = pq.read_table(tmp_path / "one" / f"{name}.parquet")
    spread, schemas = _read(tmp_path / "spread" / name)
    assert all(schema.equals(one.schema) for schema in schemas)
    assert spread.equals(one)
    assert str(one.schema.field("at").type) == "timestamp[ns, tz=UTC]"


@pytest.mark.parametrize("annotate", [False, True])
def test_inferred_parts_share_the_schema_of_one_file(tmp_path, run, annotate):
    # the first partition keeps nothing (a longer copy of its document follows), the second
    # has a field null in every record, typed in the third, which alone has another field
    folder = _partitions(
        tmp_path,
        [{"text": "red fox jumps", "score": 1}],
        [{"text": "red fox jumps red fox jumps", "note": None, "score": 2}],
        [{"text": "blue sky above", "note": "n", "score": 0.5, "meta": {"lang": "en"}}],
    )
    options = {"output_format": "parquet", "annotate": annotate, "keep": "longest"}
    name = _both(tmp_path, run, folder, **options, min_cosine=0.6)
    one = pq.read_table(tmp_path / "one" / f"{name}.parquet")
    spread, schemas = _read(tmp_path / "spread" / name)
    assert all(schema.equals(one.schema) for schema in schemas)
    assert spread.equals(one)
    # what a reader of the folder gets, though the first part holds no record
    assert pq.read_table(tmp_path / "spread" / name).equals(one)
    assert one.num_rows == (3 if annotate else 2)
    assert one.column("score").type == pa.float64()


def test_a_field_of_two_types_in_two_parts_is_refused_as_one_machine_refuses_it(tmp_path, run):
    folder = _partitions(tmp_path, [{"text": TEXTS[0], "n": 1}], [{"text": TEXTS[1], "n": "one"}])
    options = {"output_format": "parquet", "bits": 64}
    with pytest.raises(ValueError, match=r"field 'n'.* write JSONL instead"):
        dedup_file(input_files(folder), tmp_path / "one", **options)
    with pytest.raises(
        ValueError,
        match=r"column 'n' is string in .*part-00001.parquet, but int64 in .*part-00000.parquet",
    ):
        run(folder, tmp_path / "spread", **options)
    assert not (tmp_path / "spread").exists()


@pytest.mark.parametrize("annotate", [False, True])
def test_csv_parts_share_the_header_of_one_file(tmp_path, run, annotate):
    # the first partition keeps nothing (nor does any part keep its field z); the others'
    # records have fields the others lack
    folder = _partitions(
        tmp_path,
        [{"text": "red fox jumps", "z": 1}],
        [{"b": 'x, "quoted"', "text": "red fox jumps red fox jumps"}],
        [{"text": "blue sky above", "c": [1, 2], "a": None}],
    )
    options = {"output_format": "csv", "annotate": annotate, "keep": "longest"}
    name = _both(tmp_path, run, folder, **options, min_cosine=0.6)
    one = (tmp_path / "one" / f"{name}.csv").read_bytes()
    parts = [p.read_bytes() for p in sorted((tmp_path / "spread" / name).iterdir())]
    header = one.split(b"\r\n", 1)[0] + b"\r\n"
    assert all(part.startswith(header) for part in parts)
    assert header + b"".join(part[len(header) :] for part in parts) == one

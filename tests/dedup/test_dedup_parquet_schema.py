"""Parquet in, Parquet out: kept and annotated records keep the input's own Arrow schema."""

import datetime
import decimal

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusimhash.dedup import pipeline
from gpusimhash.dedup.pipeline import dedup_file
from gpusimhash.io.readers import InputError

N = 2_400
OPTIONS = {"bits": 64, "max_distance": 3, "report": False, "output_format": "parquet"}


def texts(n):
    return [f"story {i // 3} about the river, the mill and {i // 3 % 7} boats" for i in range(n)]


def every_type(n, rng, null_share=0.5):
    """One column of every type pyarrow writes to Parquet, nested ones too, with many nulls."""
    base = datetime.datetime(2001, 2, 3, 4, 5, 6)

    def nulls(values):
        return [None if rng.random() < null_share else v for v in values]

    k = range(n)
    columns = {
        "null": pa.nulls(n),
        "bool": pa.array(nulls([i % 2 == 0 for i in k]), pa.bool_()),
        "int8": pa.array(nulls([i % 100 - 50 for i in k]), pa.int8()),
        "uint64": pa.array(nulls([2**64 - 1 - i for i in k]), pa.uint64()),
        "float16": pa.array(np.arange(n, dtype=np.float16), mask=rng.random(n) < null_share),
        "float32": pa.array(nulls([i / 3 for i in k]), pa.float32()),
        # needs more digits after row 2,000: a type inferred from the first batch would not hold it
        "decimal": pa.array(
            nulls([decimal.Decimal(i if i < 2000 else 10**30 + i) / 1000 for i in k]),
            pa.decimal128(38, 3),
        ),
        "decimal256": pa.array(nulls([decimal.Decimal(10**60 + i) for i in k]), pa.decimal256(70)),
        "date32": pa.array(nulls([datetime.date(2000, 1, 1 + i % 28) for i in k]), pa.date32()),
        "time64ns": pa.array(nulls([i * 1_000_000_001 for i in k]), pa.time64("ns")),
        "time32ms": pa.array(nulls([i for i in k]), pa.time32("ms")),
        "timestamp_ns_tz": pa.array(nulls([i + 10**18 for i in k]), pa.timestamp("ns", "UTC")),
        "timestamp_us": pa.array(
            nulls([base + datetime.timedelta(microseconds=i) for i in k]), pa.timestamp("us")
        ),
        "duration": pa.array(nulls([i * 7 for i in k]), pa.duration("ns")),
        "binary": pa.array(nulls([bytes([i % 256, 0, 255]) for i in k]), pa.binary()),
        "large_binary": pa.array(nulls([b"\x00" * (i % 5) for i in k]), pa.large_binary()),
        "fixed_binary": pa.array(nulls([i.to_bytes(4, "little") for i in k]), pa.binary(4)),
        "large_string": pa.array(nulls([f"é{i}" for i in k]), pa.large_string()),
        "dictionary": pa.array(nulls([f"tag{i % 5}" for i in k]), pa.string()).dictionary_encode(),
        "list": pa.array(nulls([[i, None, -i] for i in k]), pa.list_(pa.int32())),
        "large_list": pa.array(nulls([[str(i)] * (i % 3) for i in k]), pa.large_list(pa.string())),
        "fixed_list": pa.array(nulls([[i / 2, None] for i in k]), pa.list_(pa.float64(), 2)),
        "struct": pa.array(
            nulls([{"a": i % 7, "b": [f"x{i}"] if i % 4 else None} for i in k]),
            pa.struct([("a", pa.int16()), ("b", pa.list_(pa.string()))]),
        ),
        "map": pa.array(
            nulls([[(f"k{i % 3}", i), ("z", None)] for i in k]), pa.map_(pa.string(), pa.int64())
        ),
        "list_of_structs": pa.array(
            nulls([[{"when": datetime.date(1999, 12, 31), "m": {"q": [b"1"]}}] for i in k]),
            pa.list_(
                pa.struct(
                    [("when", pa.date32()), ("m", pa.map_(pa.string(), pa.list_(pa.binary())))]
                )
            ),
        ),
    }
    for name, type_ in [
        ("int16", pa.int16()),
        ("int32", pa.int32()),
        ("int64", pa.int64()),
        ("uint8", pa.uint8()),
        ("uint16", pa.uint16()),
        ("uint32", pa.uint32()),
        ("float64", pa.float64()),
    ]:
        columns[name] = pa.array(nulls([i % 120 for i in k]), type_)
    for unit in ("s", "ms", "us"):
        columns[f"duration_{unit}"] = pa.array(nulls([-i for i in k]), pa.duration(unit))
    columns["timestamp_ms"] = pa.array(nulls([i * 3 for i in k]), pa.timestamp("ms", "Asia/Tokyo"))
    columns["map_of_structs"] = pa.array(
        nulls([[(i, {"x": i % 9})] for i in k]),
        pa.map_(pa.int32(), pa.struct([("x", pa.int8())])),
    )
    columns.update(newer_types(n, nulls))
    return columns


def newer_types(n, nulls):
    """Columns of the types that newer pyarrow releases added, where this one has them."""
    k = range(n)
    columns = {}
    for name in ("string_view", "binary_view"):
        if hasattr(pa, name):
            values = nulls([str(i) if name == "string_view" else bytes(str(i), "ascii") for i in k])
            columns[name] = pa.array(values, getattr(pa, name)())
    if hasattr(pa, "decimal32"):
        columns["decimal32"] = pa.array(
            nulls([decimal.Decimal(i) / 100 for i in k]), pa.decimal32(7, 2)
        )
        columns["decimal64"] = pa.array(
            nulls([decimal.Decimal(i * 10**9) / 1000 for i in k]), pa.decimal64(18, 3)
        )
    for name in ("list_view", "large_list_view"):
        if hasattr(pa, name):
            columns[name] = pa.array(
                nulls([[i % 5] * (i % 3) for i in k]), getattr(pa, name)(pa.int8())
            )
    extensions = {
        "uuid": lambda: pa.array(nulls([i.to_bytes(16, "big") for i in k]), pa.binary(16)),
        "json_": lambda: pa.array(nulls([f'{{"n": {i}}}' for i in k]), pa.string()),
        "bool8": lambda: pa.array(nulls([i % 3 for i in k]), pa.int8()),
    }
    for name, storage in extensions.items():
        if hasattr(pa, name):
            columns[name] = pa.ExtensionArray.from_storage(getattr(pa, name)(), storage())
    if hasattr(pa, "fixed_shape_tensor"):
        tensor = pa.fixed_shape_tensor(pa.int8(), [2])
        storage = pa.array(nulls([[i % 7, -(i % 7)] for i in k]), pa.list_(pa.int8(), 2))
        columns["fixed_shape_tensor"] = pa.ExtensionArray.from_storage(tensor, storage)
    if hasattr(pa, "opaque"):
        opaque = pa.opaque(pa.binary(), "geometry", "some.vendor")
        storage = pa.array(nulls([bytes([i % 256]) for i in k]), pa.binary())
        columns["opaque"] = pa.ExtensionArray.from_storage(opaque, storage)
    return columns


# kinds of Arrow types that a Parquet file cannot hold: pyarrow refuses to write them, or reads
# them back as another kind (date64 as date32)
NOT_IN_PARQUET = {"is_interval", "is_run_end_encoded", "is_union", "is_date64"}


def test_the_columns_cover_every_kind_of_type_pyarrow_writes():
    import io

    types = [column.type for column in every_type(4, np.random.default_rng(0)).values()]
    types.append(pa.string())  # the text column
    kinds = [n for n in dir(pa.types) if n.startswith("is_") and not n.endswith("_value")]
    missing = [kind for kind in kinds if not any(getattr(pa.types, kind)(t) for t in types)]
    assert sorted(missing) == sorted(NOT_IN_PARQUET)
    for kind in NOT_IN_PARQUET - {"is_date64"}:
        example = {
            "is_interval": pa.month_day_nano_interval(),
            "is_run_end_encoded": pa.run_end_encoded(pa.int32(), pa.string()),
            "is_union": pa.sparse_union([pa.field("a", pa.int8())]),
        }[kind]
        with pytest.raises(pa.ArrowNotImplementedError):
            pq.write_table(pa.table({"c": pa.array([None], example)}), io.BytesIO())


def kept_rows(table, kept):
    """The rows of ``kept``, one slice each (Arrow's filter has no kernel for view types)."""
    return pa.concat_tables([table.slice(0, 0)] + [table.slice(i, 1) for i in np.flatnonzero(kept)])


def write_input(path, n, rng, null_share=0.5, metadata=None):
    table = pa.table({"text": texts(n), **every_type(n, rng, null_share)})
    table = table.replace_schema_metadata(metadata)
    pq.write_table(table, path, row_group_size=700)
    return pq.read_table(path)


@pytest.mark.parametrize("annotate", [False, True])
def test_every_arrow_type_is_written_back_with_the_input_schema(tmp_path, annotate):
    source = write_input(tmp_path / "in.parquet", N, np.random.default_rng(0), metadata={"k": "v"})
    out = tmp_path / "out"
    result = dedup_file(tmp_path / "in.parquet", out, batch_size=1000, annotate=annotate, **OPTIONS)
    assert result.kept.sum() < N  # some removed
    written = pq.read_table(out / ("annotated.parquet" if annotate else "kept.parquet"))
    if not annotate:
        assert written.schema.equals(source.schema, check_metadata=True)
        assert written.equals(kept_rows(source, result.kept))
        return
    assert written.select(source.column_names).equals(source)
    assert written.schema.metadata == source.schema.metadata
    removed = ~result.kept
    assert written.column("similarity").null_count == int(result.kept.sum())
    assert written.column("cluster").to_numpy(zero_copy_only=False)[removed].min() >= 0
    assert written.schema.field("duplicate_of").type == pa.int64()  # row numbers


def test_files_of_one_schema_are_one_corpus(tmp_path):
    rng = np.random.default_rng(1)
    first = write_input(tmp_path / "a.parquet", 600, rng, null_share=0.9)
    second = write_input(tmp_path / "b.parquet", 600, rng, null_share=1.0)
    paths = [tmp_path / "a.parquet", tmp_path / "b.parquet"]
    result = dedup_file(paths, tmp_path / "out", batch_size=250, **OPTIONS)
    both = pa.concat_tables([first, second])
    assert pq.read_table(tmp_path / "out" / "kept.parquet").equals(kept_rows(both, result.kept))


@pytest.mark.parametrize(
    ("second", "message"),
    [
        (
            {"text": ["a"], "n": pa.array([1], pa.int32())},
            "column 'n' is int32, but int64 in .*a.parquet",
        ),
        ({"text": ["a"]}, "no column 'n', which .*a.parquet has \\(int64\\)"),
        (
            {"text": ["a"], "n": [1], "extra": [b"x"]},
            "column 'extra' \\(binary\\) is not in .*a.parquet",
        ),
    ],
)
def test_inputs_of_different_schemas_are_refused_before_any_work(
    tmp_path, monkeypatch, second, message
):
    pq.write_table(pa.table({"text": ["a b"], "n": [1]}), tmp_path / "a.parquet")
    pq.write_table(pa.table(second), tmp_path / "b.parquet")

    def no_work(*args, **kwargs):
        raise AssertionError("fingerprinting started")

    monkeypatch.setattr(pipeline, "_fingerprint_pass", no_work)
    paths = [tmp_path / "a.parquet", tmp_path / "b.parquet"]
    with pytest.raises(InputError, match=f"b.parquet: {message}") as error:
        dedup_file(paths, tmp_path / "out", **OPTIONS)
    assert "--output-format jsonl" in str(error.value)


def test_a_column_annotating_would_overwrite_is_refused_before_any_work(tmp_path, monkeypatch):
    pq.write_table(pa.table({"text": ["a b"], "cluster": [1]}), tmp_path / "a.parquet")
    monkeypatch.setattr(pipeline, "_fingerprint_pass", None)  # called: a TypeError
    with pytest.raises(InputError, match="has a column 'cluster', which annotating would"):
        dedup_file(tmp_path / "a.parquet", tmp_path / "out", annotate=True, **OPTIONS)


@settings(max_examples=12, deadline=None)
@given(
    n=st.integers(0, 120),
    batch_size=st.integers(1, 50),
    null_share=st.sampled_from([0.0, 0.5, 0.95, 1.0]),
    seed=st.integers(0, 2**16),
)
def test_kept_records_are_the_input_rows_exactly(tmp_path_factory, n, batch_size, null_share, seed):
    folder = tmp_path_factory.mktemp("rows")
    source = write_input(folder / "in.parquet", n, np.random.default_rng(seed), null_share)
    result = dedup_file(folder / "in.parquet", folder / "out", batch_size=batch_size, **OPTIONS)
    written = pq.read_table(folder / "out" / "kept.parquet")
    assert written.schema.equals(source.schema)
    assert written.equals(kept_rows(source, result.kept))


@pytest.mark.parametrize("annotate", [False, True])
def test_ids_past_int64_are_written_as_the_input_has_them(tmp_path, annotate):
    ids = pa.array([2**64 - 1 - i for i in range(300)], pa.uint64())
    pq.write_table(pa.table({"text": texts(300), "key": ids}), tmp_path / "in.parquet")
    out = tmp_path / "out"
    dedup_file(
        tmp_path / "in.parquet", out, id_field="key", annotate=annotate, pairs=True, **OPTIONS
    )
    pairs = pq.read_table(out / "pairs.parquet")
    duplicates = pq.read_table(out / "duplicates.parquet")
    assert pairs.schema.field("id_a").type == pa.uint64()
    assert duplicates.schema.field("ids").type == pa.list_(pa.uint64())
    first = duplicates.to_pylist()[0]
    assert first["kept_id"] == 2**64 - 1 - first["kept_row"]
    assert first["ids"] == [2**64 - 1 - row for row in first["rows"]]
    if annotate:
        written = pq.read_table(out / "annotated.parquet")
        assert written.schema.field("duplicate_of").type == pa.uint64()
        rows = written.to_pylist()
        kept_key = {r["cluster"]: r["key"] for r in rows if r["duplicate_of"] is None}
        removed = [r for r in rows if r["duplicate_of"] is not None]
        assert removed
        assert all(r["duplicate_of"] == kept_key[r["cluster"]] > 2**63 for r in removed)

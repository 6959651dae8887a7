"""Parquet parts written apart, brought to one schema: the records one file of them all holds."""

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusimhash.io.parquet_parts import unified_schema
from gpusimhash.io.writers import RecordWriter, rewrite_parquet

VALUES = st.one_of(
    st.none(),
    st.integers(-5, 5),
    st.integers(2**63, 2**63 + 5),  # past int64: the column becomes uint64
    st.integers(-5, 5).map(lambda n: n + 0.5),
    st.sampled_from(["x", "y"]),
)
# every kept record has a field (its text at least)
RECORD = st.dictionaries(st.sampled_from(["a", "b", "c"]), VALUES, min_size=1, max_size=3)


def _one_file(path, parts):
    """Write every part's records to one file, a batch per part, as one machine does."""
    with RecordWriter(path, "parquet") as writer:
        for records in parts:
            writer.write(records)
    return pq.read_table(path)


def _apart(folder, parts):
    """Write each part to its own file; return the paths and the schemas written."""
    paths, schemas = [], []
    for k, records in enumerate(parts):
        paths.append(folder / f"part-{k}.parquet")
        with RecordWriter(paths[-1], "parquet") as writer:
            writer.write(records)
            schemas.append(writer.parquet_schema)
    return paths, schemas


@settings(max_examples=150, deadline=None)
@given(parts=st.lists(st.lists(RECORD, max_size=4), min_size=1, max_size=4))
def test_parts_brought_to_one_schema_hold_what_one_file_holds(tmp_path_factory, parts):
    folder = tmp_path_factory.mktemp("parts")
    try:
        expected = _one_file(folder / "one.parquet", parts)
    except ValueError:
        expected = None  # one file refuses these records
    try:
        paths, schemas = _apart(folder, parts)  # a part of its own may refuse its records
        schema = unified_schema([(str(p), s) for p, s in zip(paths, schemas, strict=True)])
        for path in paths:
            rewrite_parquet(path, schema)
    except ValueError:
        assert expected is None
        return
    assert expected is not None
    tables = [pq.read_table(path) for path in paths]
    assert all(table.schema.equals(expected.schema) for table in tables)
    assert pa.concat_tables(tables).to_pylist() == expected.to_pylist()


def test_a_part_without_records_takes_the_others_columns(tmp_path):
    paths, schemas = _apart(tmp_path, [[], [{"id": 1, "tag": None}], [{"id": 2, "tag": "x"}]])
    assert schemas[0] is None
    schema = unified_schema([(str(p), s) for p, s in zip(paths, schemas, strict=True)])
    assert schema == pa.schema([("id", pa.int64()), ("tag", pa.string())])
    rewrite_parquet(paths[0], schema)
    assert pq.read_table(paths[0]).schema == schema
    assert pq.read_table(paths[0]).num_rows == 0


def test_a_column_of_two_types_names_both_parts():
    with pytest.raises(ValueError, match=r"column 'n' is string in b, but int64 in a: .* JSONL"):
        unified_schema(
            [
                ("a", pa.schema([("n", pa.null())])),
                ("a", pa.schema([("n", pa.int64())])),
                ("b", pa.schema([("n", pa.string())])),
            ]
        )


def test_a_column_the_schema_lacks_is_refused_before_the_file_is_touched(tmp_path):
    path = tmp_path / "part.parquet"
    pq.write_table(pa.table({"a": [1], "b": [2]}), path)
    before = path.read_bytes()
    with pytest.raises(ValueError, match=r"part.parquet: column 'b' is not in the schema"):
        rewrite_parquet(path, pa.schema([("a", pa.int64())]))
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["part.parquet"]


def test_values_that_do_not_cast_leave_the_file_as_it_was(tmp_path):
    path = tmp_path / "part.parquet"
    pq.write_table(pa.table({"n": [-1, 2]}), path)
    before = path.read_bytes()
    with pytest.raises(ValueError, match=r"part.parquet: records do not fit .* JSONL"):
        rewrite_parquet(path, pa.schema([("n", pa.uint64())]))
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["part.parquet"]

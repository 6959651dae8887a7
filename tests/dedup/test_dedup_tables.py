"""annotate_table: a DataFrame, an Arrow table or a text column in, every row back annotated."""

import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from gpusimhash.dedup.pipeline import dedup_file
from gpusimhash.dedup.tables import annotate_table
from gpusimhash.io.readers import InputError

TEXTS = [
    "the river flooded the old mill after rain",
    "our team shipped the new search feature on friday",
    "the river flooded the old mill after rain",
    "a quiet street at dawn",
    "our team shipped the new search feature on friday",
]
OPTIONS = {"bits": 64, "max_distance": 0}


def test_a_dataframe_gets_the_files_verdict(tmp_path):
    frame = pd.DataFrame({"url": [f"u{k}" for k in range(5)], "text": TEXTS}, index=[9, 8, 7, 6, 5])
    out = annotate_table(frame, id_field="url", **OPTIONS)
    assert list(out.index) == [9, 8, 7, 6, 5]
    assert list(out.columns) == ["url", "text", "cluster", "duplicate_of", "similarity", "kept"]
    path = tmp_path / "in.jsonl"
    path.write_text(
        "".join(json.dumps({"url": f"u{k}", "text": t}) + "\n" for k, t in enumerate(TEXTS))
    )
    result = dedup_file(path, tmp_path / "o", id_field="url", annotate=True, **OPTIONS)
    annotated = [json.loads(line) for line in (tmp_path / "o" / "annotated.jsonl").open()]
    assert out["kept"].tolist() == result.kept.tolist() == [True, True, False, True, False]
    assert [None if v is pd.NA else v for v in out["duplicate_of"]] == [
        r["duplicate_of"] for r in annotated
    ]
    assert out["duplicate_of"].tolist()[2] == "u0"
    assert [None if v is pd.NA else v for v in out["cluster"]] == [r["cluster"] for r in annotated]


@pytest.mark.parametrize(
    "column",
    [
        pa.array(TEXTS + [None]),
        pa.chunked_array([TEXTS[:2], TEXTS[2:] + [None]], type=pa.large_string()),
        pd.Series(TEXTS + [np.nan]),
    ],
    ids=["array", "chunked", "series"],
)
def test_text_columns_with_missing_values(column):
    with pytest.raises(InputError, match="row 5: column 'text' is missing"):
        annotate_table(column, **OPTIONS)
    out = annotate_table(column, on_missing="featureless", **OPTIONS)
    kept = out.column("kept").to_pylist() if isinstance(out, pa.Table) else out["kept"].tolist()
    assert kept == [True, True, False, True, False, True]


def test_an_arrow_table_and_bad_arguments():
    table = pa.table({"text": TEXTS})
    out = annotate_table(table, **OPTIONS)
    assert out.column_names == ["text", "cluster", "duplicate_of", "similarity", "kept"]
    assert out.column("duplicate_of").to_pylist() == [None, None, 0, None, 1]
    with pytest.raises(ValueError, match="on_missing must be one of error, featureless"):
        annotate_table(table, on_missing="drop")
    with pytest.raises(InputError, match="already has a column 'cluster'"):
        annotate_table(out, **OPTIONS)
    with pytest.raises(TypeError, match="data must be a pandas DataFrame"):
        annotate_table(TEXTS)

"""annotate: every record written with cluster, duplicate_of and similarity, none dropped."""

import json

import pyarrow.parquet as pq
import pytest

from gpusimhash.cli import main
from gpusimhash.dedup.pipeline import dedup_file
from gpusimhash.io.readers import InputError

TEXTS = [
    "the river flooded the old mill after rain",
    "our team shipped the new search feature on friday",
    "the river flooded the old mill after heavy rain all week long",
    "a quiet street at dawn",
    "our team shipped the new search feature on friday",
    "the river flooded the old mill after rain",
]


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def read_jsonl(path):
    return [json.loads(line) for line in path.open()]


@pytest.mark.parametrize("keep", ["first", "longest"])
@pytest.mark.parametrize("with_ids", [False, True])
def test_every_record_is_annotated_as_the_duplicates_file_says(tmp_path, keep, with_ids):
    rows = [
        {"text": t, "n": k} | ({"id": f"d{k}"} if with_ids else {}) for k, t in enumerate(TEXTS)
    ]
    path = write_jsonl(tmp_path / "in.jsonl", rows)
    out = tmp_path / "out"
    result = dedup_file(path, out, bits=64, max_distance=12, verify=False, keep=keep, annotate=True)
    assert not (out / "kept.jsonl").exists()
    annotated = read_jsonl(out / "annotated.jsonl")
    assert [{k: r[k] for k in rows[0]} for r in annotated] == rows  # every record, in order
    clusters = read_jsonl(out / "duplicates.jsonl")
    assert len(clusters) == 2
    expected = {k: (None, None, None) for k in range(len(rows))}
    for cluster in clusters:
        for row, similarity in zip(cluster["rows"], cluster["similarities"], strict=True):
            removed = row != cluster["kept_row"]
            expected[row] = (
                cluster["cluster"],
                cluster["kept_id"] if removed else None,
                similarity if removed else None,
            )
    found = {k: (r["cluster"], r["duplicate_of"], r["similarity"]) for k, r in enumerate(annotated)}
    assert found == expected
    assert [r["duplicate_of"] is None for r in annotated] == result.kept.tolist()
    if keep == "longest":  # the kept document comes after a member of its cluster
        assert annotated[0]["duplicate_of"] == ("d2" if with_ids else 2)


def test_annotated_parquet_and_the_command_line(tmp_path):
    path = write_jsonl(tmp_path / "in.jsonl", [{"id": k, "text": t} for k, t in enumerate(TEXTS)])
    out = tmp_path / "out"
    args = ["dedup", str(path), "--out", str(out), "--annotate", "--output-format", "parquet"]
    assert main([*args, "--bits", "64", "--max-distance", "0", "--no-report", "-q"]) == 0
    table = pq.read_table(out / "annotated.parquet").to_pylist()
    assert [r["duplicate_of"] for r in table] == [None, None, None, None, 1, 0]
    assert [r["cluster"] for r in table] == [0, 1, None, None, 1, 0]


def test_a_record_with_an_annotation_field_is_refused(tmp_path):
    path = write_jsonl(tmp_path / "in.jsonl", [{"text": t, "cluster": "x"} for t in TEXTS])
    with pytest.raises(InputError, match="has a field 'cluster', which annotating would"):
        dedup_file(path, tmp_path / "out", bits=64, max_distance=0, annotate=True)


def test_an_annotation_field_is_named_by_its_file_and_document_there(tmp_path):
    first = write_jsonl(tmp_path / "a.jsonl", [{"text": t} for t in TEXTS[:3]])
    records = [{"text": t} for t in TEXTS[3:]]
    records[1]["similarity"] = 0.5
    second = write_jsonl(tmp_path / "b.jsonl", records)
    with pytest.raises(InputError, match=r"b\.jsonl, document 2: the record has a field 'simil"):
        dedup_file([first, second], tmp_path / "out", bits=64, max_distance=0, annotate=True)

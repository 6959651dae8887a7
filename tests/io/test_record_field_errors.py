"""A bad score or ground-truth label names its value, its file and its document there (from 1)."""

import json

import pytest

from gpusimhash.dedup.pipeline import dedup_file
from gpusimhash.io.readers import InputError, read_batches
from gpusimhash.io.records import file_rows, record_labels, record_scores

TEXT = "the river flooded the old mill after three days of heavy rain"


def write_jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def batch_of(path):
    (batch,) = read_batches(path, records=True)
    return batch


@pytest.mark.parametrize(
    ("score", "shown"),
    [
        ("high", "'high'"),
        (None, "None"),
        (True, "True"),
        ([1], r"\[1\]"),
        ("inf", "'inf'"),
        ("1e400", "'1e400'"),
        (10**400, "1" + "0" * 400),  # beyond the floats: refused, not a crash
    ],
)
def test_a_bad_score_is_shown_as_it_was_read(tmp_path, score, shown):
    path = write_jsonl(
        tmp_path / "s.jsonl", [{"text": "a", "score": 1}, {"text": "x", "score": score}]
    )
    message = rf"s\.jsonl, document 2: score field 'score' must be a finite number, got {shown}$"
    with pytest.raises(InputError, match=message):
        record_scores(file_rows(path), batch_of(path), "score")


def test_scores_that_are_numbers_or_strings_of_numbers_are_read(tmp_path):
    scores = [1, 2.5, "3.25", " -4 "]
    path = write_jsonl(tmp_path / "s.jsonl", [{"text": "a", "score": s} for s in scores])
    assert record_scores(file_rows(path), batch_of(path), "score").tolist() == [1, 2.5, 3.25, -4]


def test_a_label_that_is_not_a_scalar_names_its_row_and_value(tmp_path):
    records = [{"text": "a", "label": 1}, {"text": "b", "label": "x"}, {"text": "c", "label": [1]}]
    path = write_jsonl(tmp_path / "l.jsonl", records)
    message = r"l\.jsonl, document 3: ground-truth label 'label' must be a scalar, got list \[1\]$"
    with pytest.raises(InputError, match=message):
        record_labels(file_rows(path), batch_of(path), "label", {})


def test_new_labels_continue_the_numbering_of_the_table(tmp_path):
    path = write_jsonl(tmp_path / "l.jsonl", [{"text": "a", "label": v} for v in "xyx"])
    table = {"z": 0}
    assert record_labels(file_rows(path), batch_of(path), "label", table).tolist() == [1, 2, 1]
    assert table == {"z": 0, "x": 1, "y": 2}


def test_dedup_names_the_bad_score_and_its_document(tmp_path):
    path = write_jsonl(
        tmp_path / "s.jsonl", [{"text": TEXT, "score": 1}, {"text": "x", "score": "high"}]
    )
    message = r"s\.jsonl, document 2: score field 'score' must be a finite number, got 'high'$"
    with pytest.raises(InputError, match=message):
        dedup_file(path, tmp_path / "out", keep="score", score_field="score")


def test_dedup_names_a_missing_label_from_document_1(tmp_path):
    path = write_jsonl(tmp_path / "m.jsonl", [{"text": TEXT}])
    with pytest.raises(
        InputError, match=r"m\.jsonl, document 1: no field 'label' \(fields: text\)$"
    ):
        dedup_file(path, tmp_path / "out", truth_field="label")


def test_dedup_of_several_files_names_the_file_and_its_own_document(tmp_path):
    first = write_jsonl(
        tmp_path / "a.jsonl", [{"text": TEXT, "label": k, "score": k} for k in range(3)]
    )
    bad = [{"text": TEXT, "label": 1, "score": 1}, {"text": "y", "label": {"k": 1}, "score": "?"}]
    second = write_jsonl(tmp_path / "b.jsonl", bad)
    label = (
        r"b\.jsonl, document 2: ground-truth label 'label' must be a scalar, got dict \{'k': 1\}$"
    )
    with pytest.raises(InputError, match=label):
        dedup_file([first, second], tmp_path / "out", truth_field="label")
    score = r"b\.jsonl, document 2: score field 'score' must be a finite number, got '\?'$"
    with pytest.raises(InputError, match=score):
        dedup_file([first, second], tmp_path / "out2", keep="score", score_field="score")


def test_distributed_dedup_names_the_partition_and_its_own_document(tmp_path):
    pytest.importorskip("distributed")
    from gpusimhash.distributed import dedup

    write_jsonl(tmp_path / "p0.jsonl", [{"text": f"{TEXT} {k}", "label": k} for k in range(5)])
    records = [{"text": f"{TEXT} {k}", "label": k} for k in range(4)]
    del records[2]["label"]
    part = write_jsonl(tmp_path / "p1.jsonl", records)
    message = r"p1\.jsonl, document 3: no field 'label' \(fields: text\)$"
    with pytest.raises(InputError, match=message):
        dedup([tmp_path / "p0.jsonl", part], tmp_path / "out", truth_field="label")

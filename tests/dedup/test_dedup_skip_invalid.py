"""dedup --skip-invalid: the valid records deduplicated as if alone, the others counted."""

import json

import numpy as np

from gpusimhash.cli import main
from gpusimhash.dedup.pipeline import dedup_file

GOOD = [
    {"id": "a", "text": "the river flooded the old mill after rain"},
    {"id": "b", "text": "our team shipped the new search feature on friday"},
    {"id": "c", "text": "the river flooded the old mill after rain"},
]


def test_skipped_records_are_counted_and_the_rest_deduplicated(tmp_path, capsys):
    clean = tmp_path / "clean.jsonl"
    clean.write_text("".join(json.dumps(r) + "\n" for r in GOOD))
    dirty = tmp_path / "dirty.jsonl"
    lines = [
        json.dumps(GOOD[0]),
        "{broken",
        json.dumps(GOOD[1]),
        '{"id": "x"}',
        json.dumps(GOOD[2]),
    ]
    dirty.write_text("\n".join(lines) + "\n")
    expected = dedup_file(clean, tmp_path / "clean", bits=64, max_distance=0)
    result = dedup_file(dirty, tmp_path / "dirty", bits=64, max_distance=0, skip_invalid=True)
    np.testing.assert_array_equal(result.codes, expected.codes)
    assert result.kept.tolist() == [True, True, False]
    assert result.summary["results"]["skipped_invalid"] == 2
    assert [e.split(": ")[0] for e in result.summary["skipped"]] == [
        f"{dirty}, line 2",
        f"{dirty}, line 4",
    ]
    kept = (tmp_path / "dirty" / "kept.jsonl").read_text().splitlines()
    assert kept == (tmp_path / "clean" / "kept.jsonl").read_text().splitlines()
    out = tmp_path / "cli"
    args = ["dedup", str(dirty), "--out", str(out), "--bits", "64", "--max-distance", "0"]
    assert main([*args, "--no-report", "-q"]) == 1
    assert "line 2: not valid JSON" in capsys.readouterr().err
    assert main([*args, "--no-report", "-q", "--skip-invalid"]) == 0
    err = capsys.readouterr().err
    assert "warning: skipped 2 invalid records, the first: " in err
    assert json.loads((out / "summary.json").read_text())["results"]["skipped_invalid"] == 2


def test_an_invalid_first_record_is_skipped_and_the_ids_come_from_the_first_valid_one(tmp_path):
    dirty = tmp_path / "dirty.jsonl"
    dirty.write_text('{"text": 5}\n' + "".join(json.dumps(r) + "\n" for r in GOOD))
    result = dedup_file(dirty, tmp_path / "out", bits=64, max_distance=0, skip_invalid=True)
    assert result.summary["results"]["skipped_invalid"] == 1
    assert result.summary["skipped"] == [f"{dirty}, line 1: field 'text' must be a string, got int"]
    duplicates = json.loads((tmp_path / "out" / "duplicates.jsonl").read_text())
    assert duplicates["ids"] == ["a", "c"]  # the records' own ids, not rows

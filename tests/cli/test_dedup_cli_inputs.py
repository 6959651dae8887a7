import pytest

"""dedup from the command line: an output folder in use is refused, shards, globs and stdin."""

import json
import subprocess
import sys

from gpusimhash.cli import main

TEXTS = [
    "the river flooded the old mill after three days of heavy rain",
    "our team shipped the new search feature to every customer on friday",
    "the river flooded the old mill after three days of heavy rain",
    "bake the bread until the crust turns a deep golden brown",
    "bake the bread until the crust turns a deep golden brown",
    "a quiet street at dawn",
]
ARGS = ["--bits", "64", "--max-distance", "3", "--no-report", "-q"]


def lines(path):
    return path.read_text().splitlines()


def test_an_output_folder_in_use_needs_overwrite(tmp_path, capsys):
    source = tmp_path / "in.txt"
    source.write_text("".join(t + "\n" for t in TEXTS))
    out = tmp_path / "out"
    assert main(["dedup", str(source), "--out", str(out), *ARGS]) == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    capsys.readouterr()
    source.write_text("".join(t + "\n" for t in TEXTS[:3]))
    assert main(["dedup", str(source), "--out", str(out), *ARGS]) == 1
    assert "out is not empty: give --overwrite" in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert main(["dedup", str(source), "--out", str(out), *ARGS, "--overwrite"]) == 0
    assert len(lines(out / "kept.jsonl")) == 2


def test_files_folders_and_globs_are_one_corpus(tmp_path):
    shards = tmp_path / "shards"
    shards.mkdir()
    for k in range(3):
        rows = [{"text": t} for t in TEXTS[2 * k : 2 * k + 2]]
        (shards / f"part-{k}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    whole = tmp_path / "whole.jsonl"
    whole.write_text("".join(json.dumps({"text": t}) + "\n" for t in TEXTS))
    assert main(["dedup", str(whole), "--out", str(tmp_path / "one"), *ARGS]) == 0
    expected = lines(tmp_path / "one" / "kept.jsonl")
    assert len(expected) == 4
    for name, inputs in {
        "folder": [shards],
        "glob": [shards / "part-*.jsonl"],
        "files": [shards / "part-0.jsonl", shards / "part-1.jsonl", shards / "part-2.jsonl"],
    }.items():
        assert main(["dedup", *map(str, inputs), "--out", str(tmp_path / name), *ARGS]) == 0
        assert lines(tmp_path / name / "kept.jsonl") == expected
        assert lines(tmp_path / name / "duplicates.jsonl") == lines(
            tmp_path / "one" / "duplicates.jsonl"
        )


def test_standard_input_is_read_once_and_deduplicated(tmp_path):
    data = "".join(json.dumps({"text": t}) + "\n" for t in TEXTS)
    (tmp_path / "in.jsonl").write_text(data)
    assert main(["dedup", str(tmp_path / "in.jsonl"), "--out", str(tmp_path / "file"), *ARGS]) == 0
    done = subprocess.run(
        [sys.executable, "-m", "gpusimhash", "dedup", "-", "--format", "jsonl"]
        + ["--out", str(tmp_path / "stdin"), *ARGS],
        input=data,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert lines(tmp_path / "stdin" / "kept.jsonl") == lines(tmp_path / "file" / "kept.jsonl")
    assert len(lines(tmp_path / "stdin" / "kept.jsonl")) == 4


def test_nested_and_joined_text_fields(tmp_path):
    rows = [
        {"meta": {"title": "Rain"}, "body": TEXTS[0]},
        {"meta": {"title": "Rain"}, "body": TEXTS[2]},
        {"meta": {"title": "Other"}, "body": TEXTS[2]},
    ]
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    for field, kept in (("body", 1), ("meta.title,body", 2)):
        out = tmp_path / field
        args = ["dedup", str(path), "--text-field", field, "--out", str(out), "--bits", "64"]
        assert main([*args, "--max-distance", "0", "--no-report", "-q"]) == 0
        assert len(lines(out / "kept.jsonl")) == kept


@pytest.mark.slow
def test_out_dash_writes_the_kept_records_to_stdout(tmp_path):
    data = "".join(json.dumps({"text": t}) + "\n" for t in TEXTS)
    path = tmp_path / "in.jsonl"
    path.write_text(data)
    assert main(["dedup", str(path), "--out", str(tmp_path / "file"), *ARGS]) == 0

    def dedup(*extra):
        return subprocess.run(
            [sys.executable, "-m", "gpusimhash", "dedup", "-", "--format", "jsonl", "--out", "-"]
            + ["--bits", "64", "--max-distance", "3", *extra],
            input=data,
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
            cwd=tmp_path,
        )

    done = dedup("-q")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == lines(tmp_path / "file" / "kept.jsonl")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file", "in.jsonl"]
    done = dedup("--annotate")
    assert done.returncode == 0, done.stderr
    assert [json.loads(line)["duplicate_of"] for line in done.stdout.splitlines()] == [
        None,
        None,
        0,
        None,
        3,
        None,
    ]
    assert "gpusimhash dedup:" in done.stderr  # the summary table, on stderr
    done = dedup("--json")
    assert done.returncode == 2
    assert "--out - writes the kept records to standard output: not with --json" in done.stderr


def test_csv_output_keeps_the_input_columns(tmp_path):
    path = tmp_path / "in.csv"
    path.write_text("url,text,lang\n" + "".join(f"u{k},{t},en\n" for k, t in enumerate(TEXTS)))
    out = tmp_path / "out"
    assert main(["dedup", str(path), "--out", str(out), "--output-format", "csv", *ARGS]) == 0
    kept = lines(out / "kept.csv")
    assert kept[0] == "url,text,lang"
    assert kept[1:] == [f"u{k},{TEXTS[k]},en" for k in (0, 1, 3, 5)]
    assert (
        main(
            ["dedup", str(path), "--out", str(out), "--output-format", "csv", "--annotate"]
            + [*ARGS, "--overwrite"]
        )
        == 0
    )
    annotated = lines(out / "annotated.csv")
    assert annotated[0] == "url,text,lang,cluster,duplicate_of,similarity"
    assert annotated[3] == f"u2,{TEXTS[2]},en,0,0,1.0"  # ids are rows: no id column

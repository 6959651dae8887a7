"""`gpusimhash dedup NEW --against INDEX [--add-kept]`: a new batch without what is indexed."""

import json

import pytest
from cli_main import in_process

from gpusimhash import SimHashIndex

OLD = [
    "the river flooded the old mill after three days of heavy rain in the valley",
    "our team shipped the new search feature to every customer on friday night",
]
NEW = [
    {"url": "n0", "text": OLD[0]},  # indexed already: its cluster goes
    {"url": "n1", "text": OLD[0] + "!"},  # same cluster as n0
    {"url": "n2", "text": "bake the bread at two hundred degrees until the crust turns brown"},
    {"url": "n3", "text": "bake the bread at two hundred degrees until the crust turns brown."},
    {"url": "n4", "text": "a quiet library in the north of the city lends tools and books"},
    {"url": "n5", "text": OLD[1]},  # indexed already, alone in its cluster
]


def read_jsonl(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture
def setup(tmp_path, capsys):
    old = tmp_path / "old.jsonl"
    old.write_text(
        "".join(json.dumps({"url": f"o{n}", "text": t}) + "\n" for n, t in enumerate(OLD))
    )
    new = tmp_path / "new.jsonl"
    new.write_text("".join(json.dumps(d) + "\n" for d in NEW))
    index = tmp_path / "idx"
    build = ["index", "build", old, "--id-field", "url", "--out", index, "--bits", "256"]
    build += ["--seed", "7", "-q"]
    assert in_process(build, capsys)[0] == 0
    return new, index


def test_dedup_against_an_index_removes_what_it_holds(setup, tmp_path, capsys):
    new, index = setup
    out = tmp_path / "out"
    args = ["dedup", new, "--id-field", "url", "--against", index, "--out", out, "--json", "-q"]
    code, stdout, err = in_process([*args, "--no-report"], capsys)
    assert code == 0, err
    summary = json.loads(stdout)
    assert (summary["settings"]["bits"], summary["settings"]["seed"]) == (256, 7)  # the index's
    assert (summary["results"]["removed_as_indexed"], summary["results"]["kept"]) == (3, 2)
    assert [r["url"] for r in read_jsonl(out / "kept.jsonl")] == ["n2", "n4"]
    matched, alone = read_jsonl(out / "in_index.jsonl")
    assert (matched["index_id"], matched["kept_id"], matched["ids"]) == ("o0", "n0", ["n0", "n1"])
    assert matched["rows"] == [0, 1]
    assert (alone["index_id"], alone["kept_id"], alone["ids"], alone["rows"]) == (
        "o1",
        "n5",
        ["n5"],
        [5],
    )
    assert SimHashIndex.load(index).ids().tolist() == ["o0", "o1"]  # unchanged without --add-kept


def test_add_kept_grows_the_index_and_a_second_run_removes_everything(setup, tmp_path, capsys):
    new, index = setup
    args = ["dedup", new, "--id-field", "url", "--against", index, "--no-report", "-q"]
    assert in_process([*args, "--add-kept", "--out", tmp_path / "a"], capsys)[0] == 0
    assert SimHashIndex.load(index).ids().tolist() == ["o0", "o1", "n2", "n4"]
    code, _, err = in_process([*args, "--out", tmp_path / "b"], capsys)
    assert code == 0, err
    assert read_jsonl(tmp_path / "b" / "kept.jsonl") == []


def test_against_errors(setup, tmp_path, capsys):
    new, index = setup
    cases = [
        (["dedup", new, "--add-kept"], 2, "--add-kept needs --against DIR"),
        (["dedup", new, "--against", index, "--annotate"], 2, "--annotate does not show"),
        (["dedup", new, "--against", tmp_path / "none"], 1, "manifest.json: missing"),
    ]
    for args, expected, message in cases:
        code, _, err = in_process([*args, "--out", tmp_path / "x", "-q"], capsys)
        assert code == expected, err
        assert message in err
        assert err.count("\n") == 1

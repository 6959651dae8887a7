"""The index in daily use from the command line: string ids, remove, query by id, -k."""

import json

import numpy as np
import pytest
from cli_main import in_process

from gpusimhash import SimHashIndex, fingerprint, hamming

TEXTS = [
    "the river flooded the old mill after three days of heavy rain",
    "the river flooded the old mill after three days of heavy rains",
    "our team shipped the new search feature to every customer on friday",
    "bake the bread until the crust turns a deep golden brown",
    "the river flooded the old mill after days of heavy rain",
]


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def named_index(tmp_path, capsys):
    rows = [{"url": f"https://example.org/{n}", "text": t} for n, t in enumerate(TEXTS)]
    path = write_jsonl(tmp_path / "docs.jsonl", rows)
    folder = tmp_path / "idx"
    code, _, err = in_process(
        ["index", "build", path, "--id-field", "url", "--out", folder, "--bits", "64", "-q"],
        capsys,
    )
    assert code == 0, err
    return folder


def query(folder, capsys, *args):
    code, out, err = in_process(["index", "query", folder, *args, "--json"], capsys)
    assert code == 0, err
    return json.loads(out)["queries"]


def test_string_ids_build_query_by_id_remove(named_index, capsys):
    folder = named_index
    assert SimHashIndex.load(folder).ids().tolist() == [
        f"https://example.org/{n}" for n in range(5)
    ]
    codes = fingerprint(TEXTS, bits=64, device="cpu")
    distances = hamming(codes, np.broadcast_to(codes[0], codes.shape))
    answer = query(folder, capsys, "--id", "https://example.org/0", "-k", "3")
    assert answer[0]["query_id"] == "https://example.org/0"
    hits = answer[0]["results"]
    assert [h["distance"] for h in hits] == sorted(distances.tolist())[:3]
    assert hits[0]["id"] == "https://example.org/0"
    for hit in hits:
        assert hit["distance"] == distances[int(hit["id"].rsplit("/", 1)[1])]

    code, out, _ = in_process(
        ["index", "remove", folder, "https://example.org/1", "https://nowhere", "--json"], capsys
    )
    assert code == 0
    summary = json.loads(out)
    assert (summary["removed"], summary["not_found"], summary["entries"]) == (1, 1, 4)
    assert summary["id_type"] == "key"
    within = query(folder, capsys, "--id", "https://example.org/0", "--max-distance", "64")
    assert "https://example.org/1" not in [h["id"] for h in within[0]["results"]]
    code, _, err = in_process(["index", "query", folder, "--id", "https://example.org/1"], capsys)
    assert code == 1
    assert "'https://example.org/1' is not in the index" in err


def test_add_to_a_string_id_index_keeps_strings(named_index, tmp_path, capsys):
    more = write_jsonl(tmp_path / "more.jsonl", [{"url": 7, "text": "seven"}])
    code, _, err = in_process(
        ["index", "add", named_index, more, "--id-field", "url", "-q"], capsys
    )
    assert code == 0, err
    assert SimHashIndex.load(named_index).ids().tolist()[-1] == "7"
    assert query(named_index, capsys, "--id", "7", "-k", "1")[0]["results"][0]["id"] == "7"
    code, _, err = in_process(["index", "add", named_index, more, "-q"], capsys)
    assert code == 2
    assert "this index has string ids: give --id-field" in err


def test_build_overwrite_replaces_and_force_is_its_old_name(tmp_path, capsys):
    path = tmp_path / "docs.txt"
    path.write_text("".join(t + "\n" for t in TEXTS))
    folder = tmp_path / "idx"
    build = ["index", "build", path, "--out", folder, "--bits", "64", "-q"]
    assert in_process(build, capsys)[0] == 0
    code, _, err = in_process(build, capsys)
    assert code == 1
    assert "already holds an index: give --overwrite to replace it" in err
    for flag in ("--overwrite", "--force"):
        assert in_process([*build, flag], capsys)[0] == 0
    assert len(SimHashIndex.load(folder)) == len(TEXTS)


def test_k_caps_a_threshold_query(tmp_path, capsys):
    path = tmp_path / "docs.txt"
    path.write_text("".join(t + "\n" for t in TEXTS))
    folder = tmp_path / "idx"
    assert (
        in_process(["index", "build", path, "--out", folder, "--bits", "64", "-q"], capsys)[0] == 0
    )
    everything = query(folder, capsys, TEXTS[0], "--max-distance", "64")[0]["results"]
    assert len(everything) == 5
    capped = query(folder, capsys, TEXTS[0], "--max-distance", "64", "-k", "2")[0]["results"]
    assert capped == everything[:2]
    nearest = query(folder, capsys, TEXTS[0])[0]["results"]  # kNN, default k = 10
    assert nearest == everything


def test_integer_index_refuses_a_string_id_on_the_command_line(tmp_path, capsys):
    path = tmp_path / "docs.txt"
    path.write_text("".join(t + "\n" for t in TEXTS))
    folder = tmp_path / "idx"
    assert in_process(["index", "build", path, "--out", folder, "-q"], capsys)[0] == 0
    code, _, err = in_process(["index", "remove", folder, "abc"], capsys)
    assert code == 2
    assert "this index has integer ids, got 'abc'" in err
    ids = tmp_path / "ids.txt"
    ids.write_text("0\n\n3\n")
    code, out, _ = in_process(["index", "remove", folder, "--file", ids, "--json"], capsys)
    assert (code, json.loads(out)["removed"]) == (0, 2)
    assert SimHashIndex.load(folder).ids().tolist() == [1, 2, 4]
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    assert query(folder, capsys, "--file", empty) == []


def test_file_queries_carry_their_ids(named_index, tmp_path, capsys):
    queries = write_jsonl(
        tmp_path / "q.jsonl", [{"qid": "q-1", "text": TEXTS[2]}, {"qid": 2, "text": TEXTS[3]}]
    )
    answer = query(named_index, capsys, "--file", queries, "--id-field", "qid", "-k", "1")
    assert [(q["query_id"], q["query"]) for q in answer] == [("q-1", TEXTS[2]), (2, TEXTS[3])]
    assert [q["results"][0]["id"] for q in answer] == [
        "https://example.org/2",
        "https://example.org/3",
    ]
    code, out, _ = in_process(
        ["index", "query", named_index, "--file", queries, "--id-field", "qid", "-k", "1"], capsys
    )
    assert code == 0
    assert out.startswith(f"query 0: id q-1: {TEXTS[2][:57]}...\n")

import csv
import gzip
import json
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from gpusimhash import TextFeaturizer, fingerprint, hamming
from gpusimhash._backend import gpu_available
from gpusimhash.cli import main
from gpusimhash.cli.compare import big_int_hex
from gpusimhash.cli.options import UserError
from gpusimhash.evaluation import true_cosines

PLOTS = ("hamming_distances.png", "estimated_vs_true_cosine.png", "cluster_sizes.png")

ORIGINALS = [
    "the river flooded the old mill after three days of heavy rain in the valley",
    "our team shipped the new search feature to every customer on friday night",
    "bake the bread at two hundred degrees until the crust turns a deep golden brown",
    "the museum opens a new wing of modern sculpture and early photography next spring",
    "a quiet library in the north of the city lends tools as well as books to members",
    "the ferry to the island leaves every hour from the harbour between six and ten",
    "farmers expect a late harvest because the summer was cold and unusually wet",
    "the orchestra will play two symphonies and a short piano concerto on sunday",
]


def corpus():
    """Originals, exact copies and one-word edits, with ids, groups and scores."""
    docs = [{"id": f"d{i}", "text": t, "group": i, "score": 1.0} for i, t in enumerate(ORIGINALS)]
    for i in (0, 2, 2, 5):
        docs.append({"id": f"x{len(docs)}", "text": ORIGINALS[i], "group": i, "score": 2.0})
    edits = {1: ("friday", "monday"), 3: ("spring", "summer"), 6: ("wet", "rainy")}
    for i, (old, new) in edits.items():
        text = ORIGINALS[i].replace(old, new) + " indeed"
        docs.append({"id": f"n{len(docs)}", "text": text, "group": i, "score": 3.0})
    return docs


DOCS = corpus()


def write_input(tmp_path, kind, docs=DOCS):
    path = tmp_path / f"input.{kind}"
    if kind.startswith("jsonl"):
        opener = gzip.open if kind.endswith(".gz") else open
        with opener(path, "wt", encoding="utf-8") as f:
            for d in docs:
                f.write(json.dumps(d) + "\n")
    elif kind in ("csv", "tsv"):
        with open(path, "w", newline="", encoding="utf-8") as f:
            writer = csv.DictWriter(f, list(docs[0]), delimiter="\t" if kind == "tsv" else ",")
            writer.writeheader()
            writer.writerows(docs)
    elif kind == "parquet":
        pq.write_table(pa.Table.from_pylist(docs), path)
    else:
        path.write_text("".join(d["text"] + "\n" for d in docs), encoding="utf-8")
    return path


def run(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "gpusimhash", *map(str, args)],
        capture_output=True,
        check=False,
        text=True,
        cwd=cwd,
        env={**os.environ, "GPUSIMHASH_TRACEBACK": ""},
        timeout=120,
    )


def expected_kept(texts, bits, radius, keep_priority=None):
    """The test's own oracle: brute-force pairs, components, first (or best) per component."""
    codes = fingerprint(texts, bits=bits, device="cpu")
    n = len(texts)
    i, j = np.triu_indices(n, 1)
    close = hamming(codes[i], codes[j]) <= radius
    graph = coo_matrix((np.ones(close.sum()), (i[close], j[close])), shape=(n, n))
    _, labels = connected_components(graph, directed=False)
    priority = np.zeros(n) if keep_priority is None else -np.asarray(keep_priority, float)
    kept = []
    for label in np.unique(labels):
        members = np.flatnonzero(labels == label)
        kept.append(members[np.lexsort((members, priority[members]))][0])
    return sorted(kept), labels


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["jsonl", "jsonl.gz", "csv", "tsv", "parquet", "txt"])
def test_dedup_every_input_format(tmp_path, kind):
    path = write_input(tmp_path, kind)
    out = tmp_path / "out"
    id_args = [] if kind == "txt" else ["--id-field", "id"]
    if kind != "jsonl":
        id_args.append("--no-report")  # the report is checked once, below (plots are slow)
    done = run(
        "dedup",
        path,
        *id_args,
        "--max-distance",
        "20",
        "--bits",
        "128",
        "--no-verify",
        "--cluster",
        "components",
        "-q",
        "--json",
        "--out",
        out,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    summary = json.loads(done.stdout)
    kept_rows, labels = expected_kept([d["text"] for d in DOCS], 128, 20)
    assert summary["results"]["documents"] == len(DOCS)
    assert summary["results"]["kept"] == len(kept_rows)
    assert summary["settings"]["verify"] is False
    kept = read_jsonl(out / "kept.jsonl")
    if kind == "txt":
        assert kept == [{"id": r, "text": DOCS[r]["text"]} for r in kept_rows]
    elif kind in ("csv", "tsv"):
        assert kept == [{k: str(v) for k, v in DOCS[r].items()} for r in kept_rows]
    else:
        assert kept == [DOCS[r] for r in kept_rows]
    duplicates = read_jsonl(out / "duplicates.jsonl")
    clusters = {tuple(sorted(np.flatnonzero(labels == lab))) for lab in np.unique(labels)}
    assert {tuple(c["rows"]) for c in duplicates} == {c for c in clusters if len(c) > 1}
    for c in duplicates:
        assert c["kept_row"] in kept_rows
        assert c["size"] == len(c["ids"]) == len(c["distances"])
        assert c["distances"][c["rows"].index(c["kept_row"])] == 0
        if kind != "txt":
            assert c["ids"] == [str(DOCS[r]["id"]) for r in c["rows"]]
    assert json.loads((out / "summary.json").read_text()) == summary
    if kind == "jsonl":
        for name in PLOTS:
            assert (out / name).read_bytes()[:4] == b"\x89PNG"
        assert all(f"]({name})" in (out / "report.md").read_text() for name in PLOTS)


@pytest.mark.slow
def test_no_duplicates_and_empty_input(tmp_path, capsys):
    unique = write_input(tmp_path, "jsonl", [{"text": t} for t in ORIGINALS])
    code, out, _ = run_in_process(
        ["dedup", unique, "--json", "-q", "--out", tmp_path / "a"], capsys
    )
    assert code == 0
    assert json.loads(out)["results"]["removed"] == 0
    assert read_jsonl(tmp_path / "a" / "kept.jsonl") == [{"text": t} for t in ORIGINALS]
    assert read_jsonl(tmp_path / "a" / "duplicates.jsonl") == []
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    code, out, _ = run_in_process(["dedup", empty, "--json", "-q", "--out", tmp_path / "b"], capsys)
    assert code == 0
    assert json.loads(out)["results"]["documents"] == 0
    assert (tmp_path / "b" / "kept.jsonl").read_text() == ""


@pytest.mark.slow
def test_exact_copies_are_always_removed(tmp_path):
    path = write_input(tmp_path, "jsonl")
    done = run(
        "dedup",
        path,
        "--id-field",
        "id",
        "--max-distance",
        "0",
        "--truth-field",
        "group",
        "--json",
        "--out",
        tmp_path / "out",
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    kept_ids = {r["id"] for r in read_jsonl(tmp_path / "out" / "kept.jsonl")}
    assert not any(d["id"] in kept_ids for d in DOCS if d["id"].startswith("x"))
    assert summary["results"]["removed"] == 4
    truth = summary["ground_truth"]
    assert truth["removal_precision"] == 1.0
    assert truth["removed_correctly"] == 4
    assert truth["documents_to_remove"] == 7
    assert truth["pair_precision"] == 1.0


def test_parquet_output_and_keep_policies(tmp_path, capsys):
    path = write_input(tmp_path, "parquet")
    texts = [d["text"] for d in DOCS]
    for keep, extra, priority in (
        ("longest", [], [len(t) for t in texts]),
        ("score", ["--score-field", "score"], [d["score"] for d in DOCS]),
    ):
        out = tmp_path / keep
        args = ["dedup", path, "--id-field", "id", "--max-distance", "20", "--keep", keep, *extra]
        args += ["--bits", "128", "--no-verify", "--cluster", "components"]
        args += ["--output-format", "parquet", "--no-report", "-q", "--out", out]
        code, stdout, stderr = run_in_process(args, capsys)
        assert code == 0, stderr
        assert stdout == stderr == ""
        kept_rows, _ = expected_kept(texts, 128, 20, priority)
        assert pq.read_table(out / "kept.parquet").to_pylist() == [DOCS[r] for r in kept_rows]
        assert pq.read_table(out / "duplicates.parquet").num_rows > 0
        assert not (out / "report.md").exists()


@pytest.mark.slow
def test_small_batches_give_the_same_output(tmp_path, capsys):
    path = write_input(tmp_path, "jsonl")
    for size in ("3", "10000"):
        args = ["dedup", path, "--batch-size", size, "--weighting", "tfidf", "--ngram", "2"]
        code, _, stderr = run_in_process(
            [*args, "-q", "--no-report", "--out", tmp_path / size], capsys
        )
        assert code == 0, stderr
    for name in ("kept.jsonl", "duplicates.jsonl"):
        assert (tmp_path / "3" / name).read_bytes() == (tmp_path / "10000" / name).read_bytes()


@pytest.mark.slow
def test_dedup_without_input_runs_on_the_sample(tmp_path):
    done = run("dedup", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "removal precision" in done.stdout
    assert "fingerprint" in done.stderr  # progress bars
    report = tmp_path / "gpusimhash-report"
    summary = json.loads((report / "summary.json").read_text())
    assert summary["results"]["documents"] == 3500
    # issue 10's goal with the defaults: removal precision >= 0.99 at recall >= 0.95
    assert summary["ground_truth"]["removal_precision"] >= 0.99
    assert summary["ground_truth"]["removal_recall"] >= 0.95
    assert summary["results"]["removed_below_threshold"] == 0
    text = (report / "report.md").read_text()
    for png in ("hamming_distances.png", "estimated_vs_true_cosine.png", "cluster_sizes.png"):
        assert f"]({png})" in text
        assert (report / png).read_bytes()[:4] == b"\x89PNG"


@pytest.mark.slow
def test_approximate_join_finds_a_subset_of_the_exact_pairs(tmp_path, capsys):
    results = {}
    for name, extra in (("exact", []), ("approximate", ["--recall", "0.99"])):
        args = ["dedup", "--bits", "128", "--max-distance", "18", "--cluster", "components"]
        args += ["--out", tmp_path / name]
        code, out, _ = run_in_process([*args, *extra, "-q", "--json"], capsys)
        assert code == 0
        results[name] = json.loads(out)
    exact, approximate = results["exact"], results["approximate"]
    assert approximate["settings"]["join"] == "approximate, recall >= 0.99"
    found, total = (r["results"]["near_duplicate_pairs"] for r in (approximate, exact))
    assert 0.95 * total <= found <= total
    kept, kept_approximate = (
        {
            json.loads(line)["id"]
            for line in (tmp_path / name / "kept.jsonl").read_text().splitlines()
        }
        for name in ("exact", "approximate")
    )
    assert kept <= kept_approximate  # missing pairs can only keep more documents


def test_compare(capsys):
    a, b = "the cat sat on the mat", "the cat sat on the warm mat"
    assert main(["compare", a, b, "--bits", "64", "--seed", "7", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    codes = fingerprint([a, b], bits=64, seed=7, device="cpu")
    assert result["fingerprint_a"] == big_int_hex(codes[0])
    assert result["fingerprint_b"] == big_int_hex(codes[1])
    assert result["distance"] == int(hamming(codes[:1], codes[1:])[0])
    assert result["estimated_cosine"] == pytest.approx(np.cos(np.pi * result["distance"] / 64))
    expected = true_cosines(TextFeaturizer(), [a], [b])[0]
    assert result["cosine"] == pytest.approx(expected)
    assert expected == pytest.approx(8 / np.sqrt(8 * 9))


def test_compare_table(capsys):
    done = run("compare", "same words", "Same words!")
    assert done.returncode == 0, done.stderr
    assert "distance          0" in done.stdout
    assert "cosine            1" in done.stdout
    code, out, _ = run_in_process(["compare", "", "words"], capsys)
    assert code == 0
    assert "undefined" in out


def test_big_int_hex_matches_the_seed_layout():
    code = np.packbits(np.eye(16, dtype=np.uint8)[3], bitorder="little")
    assert big_int_hex(code) == f"0x{1 << 3:04x}"


def error_cases(tmp_path):
    good = write_input(tmp_path, "jsonl")
    no_text = tmp_path / "no_text.jsonl"
    no_text.write_text('{"text": "a"}\n{"body": "b"}\n')
    bad_json = tmp_path / "bad.jsonl"
    bad_json.write_text('{"text": "a"}\n{"text": "b"}\n{"text": \n')
    no_column = tmp_path / "no_column.csv"
    no_column.write_text("title,body\nx,y\n")
    bad_parquet = tmp_path / "bad.parquet"
    bad_parquet.write_bytes(b"not parquet at all")
    bad_utf8 = tmp_path / "bad.txt"
    bad_utf8.write_bytes(b"ok\n\xff\xfe\n")
    cut = tmp_path / "cut.jsonl.gz"
    data = gzip.compress(b'{"text": "some words here"}\n' * 3000)
    cut.write_bytes(data[: len(data) // 2])
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    empty_folder = tmp_path / "empty_folder"
    empty_folder.mkdir(exist_ok=True)
    return [
        (["dedup", tmp_path / "missing.jsonl"], 1, "cannot read .*missing.jsonl: no such file"),
        (["dedup", empty_folder], 1, "empty_folder: a folder with no files"),
        (["dedup", good, "--out", tmp_path], 1, "is not empty: give --overwrite"),
        (["dedup", no_text], 1, r"no_text.jsonl, line 2: no field 'text' \(fields: body\)"),
        (["dedup", bad_json], 1, r"bad.jsonl, line 3: not valid JSON"),
        (["dedup", no_column], 1, r"no_column.csv: no column 'text' in the header"),
        (["dedup", no_column, "--text-field", "body", "--id-field", "key"], 1, "no column 'key'"),
        (["dedup", bad_parquet], 1, r"bad.parquet: not a readable Parquet file"),
        (["dedup", bad_utf8], 1, r"bad.txt, line 2: not valid UTF-8"),
        (["dedup", cut], 1, r"cut.jsonl.gz, line \d+: cannot read"),
        (["dedup", good, "--id-field", "nope"], 1, r"line 1: no field 'nope'"),
        (["dedup", good, "--truth-field", "nope"], 1, r"document 1: no field 'nope'"),
        (["dedup", good, "--keep", "score"], 2, "--keep score needs --score-field"),
        (
            ["dedup", good, "--keep", "score", "--score-field", "text"],
            1,
            "score field 'text' must be a finite number",
        ),
        (["dedup", good, "--out", a_file], 1, "it is a file, not a folder"),
        (["dedup", good, "--bits", "12"], 2, "bits must be a multiple of 8"),
        (["dedup", good, "--bits", "lots"], 2, "bits must be an integer"),
        (["dedup", good, "--seed", "-1"], 2, r"seed must be in \[0, 4294967295\]"),
        (["dedup", good, "--min-cosine", "2"], 2, r"min-cosine must be in \[-1, 1\]"),
        (["dedup", good, "--max-distance", "-3"], 2, "max-distance must be >= 0"),
        (["dedup", good, "--min-cosine", "0.9", "--min-jaccard", "0.5"], 2, "not allowed with"),
        (
            ["dedup", good, "--no-verify", "--max-distance", "3", "--min-cosine", "0.9"],
            2,
            "with --no-verify, give one of --max-distance, --min-cosine and --min-jaccard",
        ),
        (["dedup", good, "--candidate-recall", "0"], 2, r"candidate-recall must be in \(0, 1\]"),
        (["dedup", good, "--format", "xml"], 2, "invalid choice: 'xml'"),
        (["dedup", good, "--frobnicate"], 2, "unrecognized arguments: --frobnicate"),
        ([], 2, "the following arguments are required: COMMAND"),
        (["compare", "a", "b", "--weighting", "tfidf"], 2, "invalid choice: 'tfidf'"),
        (["compare", "a"], 2, "required: TEXT_B"),
        (["dedup", "--recall", "1.5"], 2, r"recall must be in \(0, 1\)"),
        (["dedup", "--recall", "most"], 2, "recall must be a number"),
    ]


def run_in_process(args, capsys):
    """Run main() as the console script would, returning (exit code, stdout, stderr)."""
    try:
        code = main([str(a) for a in args])
    except SystemExit as stop:  # argparse usage errors
        code = stop.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_every_error_is_one_line_with_the_right_exit_code(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("GPUSIMHASH_TRACEBACK", raising=False)
    monkeypatch.chdir(tmp_path)  # the default --out, gpusimhash-report, starts missing
    for args, code, message in error_cases(tmp_path):
        returned, out, err = run_in_process(
            [*args, "-q"] if args[:1] == ["dedup"] else args, capsys
        )
        assert returned == code, (args, err)
        assert out == ""
        lines = err.strip().splitlines()
        assert re.search(message, lines[-1]), (args, lines[-1])
        assert lines == [lines[-1]]  # one line, no usage block
        if code == 1:
            assert lines[-1].startswith("gpusimhash: error: ")
        else:  # names the command whose --help shows the usage
            command = re.match(r"(gpusimhash[ a-z]*): error: ", lines[-1])
            assert command, lines[-1]
            assert lines[-1].endswith(f"(see: {command[1]} --help)")


def test_errors_in_a_real_process_have_no_traceback(tmp_path):
    cases = [c for c in error_cases(tmp_path) if "missing.jsonl" in str(c[0]) or c[1] == 2][:3]
    cases.append(next(c for c in error_cases(tmp_path) if "no_text.jsonl" in str(c[0])))
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda case: run(*case[0], cwd=tmp_path), cases))
    for (args, code, message), done in zip(cases, results, strict=True):
        assert done.returncode == code, (args, done.stderr)
        assert "Traceback" not in done.stderr
        last = done.stderr.strip().splitlines()[-1]
        assert re.search(message, last), (args, last)
        # progress bars may come first, but the error is the last line and the only error
        assert sum("error" in line for line in done.stderr.splitlines()) == 1


def test_traceback_on_request(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUSIMHASH_TRACEBACK", "1")
    with pytest.raises(UserError, match="no such file"):
        main(["dedup", str(tmp_path / "input.parquet"), "-q"])


@pytest.mark.skipif(gpu_available(), reason="needs a machine without a GPU")
def test_gpu_request_without_gpu_is_a_clear_error(tmp_path):
    done = run("dedup", write_input(tmp_path, "jsonl"), "--device", "gpu", "--out", tmp_path / "o")
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert done.stderr.startswith("gpusimhash: error: ")
    assert "gpu" in done.stderr.lower()


def test_failed_run_leaves_no_partial_output(tmp_path):
    bad = tmp_path / "late_error.jsonl"
    bad.write_text("".join(json.dumps({"text": t}) + "\n" for t in ORIGINALS) + '{"x": 1}\n')
    out = tmp_path / "out"
    done = run("dedup", bad, "--out", out)
    assert done.returncode == 1
    assert sorted(os.listdir(out)) == []


# ---------------------------------------------------------------- index commands


def int_id_docs():
    return [{"id": 100 + n, "text": d["text"]} for n, d in enumerate(DOCS)]


@pytest.mark.slow
def test_index_build_add_query_stats(tmp_path):
    docs = int_id_docs()
    first = write_input(tmp_path, "csv", docs[:10])
    rest = tmp_path / "rest.jsonl"
    rest.write_text("".join(json.dumps(d) + "\n" for d in docs[10:]))
    folder = tmp_path / "idx"
    done = run(
        "index",
        "build",
        first,
        "--id-field",
        "id",
        "--out",
        folder,
        "--bits",
        "64",
        "--kind",
        "multihash",
        "--json",
        "-q",
    )
    assert done.returncode == 0, done.stderr
    built = json.loads(done.stdout)
    assert (built["added"], built["entries"], built["kind"], built["bits"]) == (
        10,
        10,
        "multihash",
        64,
    )
    done = run("index", "add", folder, rest, "--id-field", "id", "--json")
    assert done.returncode == 0, done.stderr
    assert "index:" in done.stderr  # progress bar
    assert json.loads(done.stdout)["entries"] == len(docs)

    queries = tmp_path / "queries.txt"
    queries.write_text(DOCS[3]["text"] + "\n")
    done = run(
        "index", "query", folder, DOCS[0]["text"].upper(), "--file", queries, "-k", "3", "--json"
    )
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)["queries"]
    codes = fingerprint([d["text"] for d in docs], bits=64, device="cpu")
    for query, row in zip(answer, (0, 3), strict=True):
        distances = hamming(codes, np.broadcast_to(codes[row], codes.shape))
        hits = query["results"]
        assert len(hits) == 3
        assert [h["distance"] for h in hits] == sorted(distances)[:3]
        for hit in hits:
            assert hit["distance"] == distances[hit["id"] - 100]
            assert hit["estimated_cosine"] == pytest.approx(np.cos(np.pi * hit["distance"] / 64))
    done = run("index", "query", folder, DOCS[0]["text"], "--max-distance", "0")
    assert done.returncode == 0, done.stderr
    exact = sorted(100 + n for n, d in enumerate(DOCS) if d["text"] == DOCS[0]["text"])
    assert [int(line.split()[1]) for line in done.stdout.splitlines()[1:]] == exact

    done = run("index", "stats", folder)
    assert done.returncode == 0, done.stderr
    assert f"entries        {len(docs)}" in done.stdout
    assert "kind           multihash" in done.stdout


def test_index_default_ids_and_weighting(tmp_path, capsys):
    path = write_input(tmp_path, "txt")
    folder = tmp_path / "idx"
    args = ["index", "build", path, "--out", folder, "--weighting", "tfidf", "--ngram", "2", "-q"]
    assert run_in_process(args, capsys)[0] == 0
    assert run_in_process(["index", "add", folder, path, "-q"], capsys)[0] == 0
    code, out, _ = run_in_process(
        ["index", "query", folder, DOCS[1]["text"], "-k", "2", "--json"], capsys
    )
    assert code == 0
    ids = [hit["id"] for hit in json.loads(out)["queries"][0]["results"]]
    assert ids == [1, 1 + len(DOCS)]  # rows, then rows continued after the largest id
    code, out, _ = run_in_process(["index", "stats", folder, "--json"], capsys)
    stats = json.loads(out)
    assert (stats["entries"], stats["weighting"], stats["ngram"]) == (2 * len(DOCS), "tfidf", 2)


def test_index_errors(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("GPUSIMHASH_TRACEBACK", raising=False)
    path = write_input(tmp_path, "jsonl", int_id_docs())
    folder = tmp_path / "idx"
    assert (
        run_in_process(["index", "build", path, "--out", folder, "--id-field", "id", "-q"], capsys)[
            0
        ]
        == 0
    )
    string_ids = write_input(tmp_path, "parquet")
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "manifest.json").write_text("{not json")
    cases = [
        (["index", "build", path, "--out", folder], "already holds an index: give --overwrite"),
        (
            ["index", "add", folder, string_ids, "--id-field", "id"],
            r"document 1: this index has integer ids, field 'id' has 'd0'",
        ),
        (
            ["index", "add", folder, path, "--id-field", "id"],
            r"\.jsonl, document 1: id \d+ is already in the index",
        ),
        (["index", "query", tmp_path / "nothing", "a"], r"manifest.json: missing"),
        (["index", "query", broken, "a"], r"manifest.json: unreadable manifest"),
        (["index", "query", folder, "--file", tmp_path / "none.txt"], "cannot read"),
        (["index", "stats", tmp_path / "nothing"], r"manifest.json: missing"),
        (
            ["index", "build", path, "--out", tmp_path / "y", "--kind", "ivf"],
            "needs at least 256 codes",
        ),
    ]
    for args, message in cases:
        code, _, err = run_in_process([*args, "-q"], capsys)
        assert code == 1, (args, err)
        assert err.startswith("gpusimhash: error: "), err
        assert err.count("\n") == 1, err
        assert re.search(message, err), (args, err)
    # a corrupt index file is refused by its checksum
    faiss_file = next(folder.glob("index.*"))
    faiss_file.write_bytes(faiss_file.read_bytes()[:-5] + b"xxxxx")
    code, _, err = run_in_process(["index", "stats", folder], capsys)
    assert code == 1
    assert "SHA-256 mismatch" in err
    code, _, err = run_in_process(["index"], capsys)
    assert code == 2
    assert "required: ACTION" in err

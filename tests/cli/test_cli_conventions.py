"""One set of conventions: exit codes, one-line errors, broken pipes, compare's verdict."""

import json
import os
import re
import subprocess
import sys

import pytest
from cli_main import in_process

from gpusimhash import TextFeaturizer, verify
from gpusimhash.cli import build_parser, compare


def run(*args, stdout=subprocess.PIPE):
    return subprocess.run(
        [sys.executable, "-m", "gpusimhash", *map(str, args)],
        stdout=stdout,
        stderr=subprocess.PIPE,
        check=False,
        text=True,
        env={**os.environ, "GPUSIMHASH_TRACEBACK": ""},
        timeout=120,
    )


@pytest.mark.parametrize(
    ("args", "message", "command"),
    [
        (["index", "query", "idx"], "give query texts", "gpusimhash index query"),
        (["index", "remove", "idx"], "give ids to remove", "gpusimhash index remove"),
        (["index", "query", "idx", "-k", "0"], "k must be >= 1", "gpusimhash index query"),
        (["compare", "a", "b", "--weighting", "tfidf"], "invalid choice", "gpusimhash compare"),
        (["compare", "a", "b", "--show", "-1"], "show must be >= 0", "gpusimhash compare"),
        (["index", "frob"], "invalid choice: 'frob'", "gpusimhash index"),
        (["dedup", "--keep", "score"], "--keep score needs --score-field", "gpusimhash dedup"),
    ],
)
def test_every_bad_command_line_is_one_line_and_exit_2(args, message, command, capsys):
    code, out, err = in_process(args, capsys)
    assert code == 2, err
    assert out == ""
    assert err.count("\n") == 1, err
    assert err.startswith(f"{command}: error: ")
    assert message in err
    assert err.rstrip().endswith(f"(see: {command} --help)")


def test_a_closed_stdout_ends_quietly(tmp_path):
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader went away before the first byte, as `| head -0` does
    try:
        done = run("compare", "the cat sat", "the cat sat down", "--json", stdout=write_end)
    finally:
        os.close(write_end)
    assert done.returncode == 141
    assert done.stderr == ""


def test_broken_pipe_in_a_shell_pipeline(tmp_path):
    queries = tmp_path / "q.txt"
    queries.write_text("".join(f"query number {n} about cats and dogs\n" for n in range(3000)))
    folder = tmp_path / "idx"
    assert run("index", "build", queries, "--out", folder, "--bits", "64", "-q").returncode == 0
    done = subprocess.run(
        f"{sys.executable} -m gpusimhash index query {folder} --file {queries} -k 5 | head -2",
        shell=True,
        capture_output=True,
        text=True,
        check=False,
        executable="/bin/bash",
        timeout=120,
    )
    assert done.returncode == 0
    assert len(done.stdout.splitlines()) == 2
    assert done.stderr == ""


def test_compare_defaults_follow_dedup():
    assert compare.DEFAULT_MIN_COSINE == verify.DEFAULT_MIN_COSINE


def test_compare_verdict_and_features(capsys):
    a, b = "the cat sat on the mat", "the cat sat on a warm mat"
    code, out, _ = in_process(["compare", a, b, "--json"], capsys)
    assert code == 0
    result = json.loads(out)
    # 5 shared words (the: 2 and 1), a has 6 words, b 7: cosine 6 / sqrt(8 * 7)
    assert result["cosine"] == pytest.approx(6 / (8 * 7) ** 0.5)
    assert result["jaccard"] == pytest.approx(5 / 7)
    assert (result["measure"], result["threshold"], result["near_duplicate"]) == (
        "cosine",
        0.8,
        True,
    )
    assert result["shared"][0] == ["the", 2.0, 1.0]  # ties by the smaller weight: input order
    assert sorted(f for f, *_ in result["shared"]) == ["cat", "mat", "on", "sat", "the"]
    assert result["only_a"] == []
    assert sorted(f for f, _ in result["only_b"]) == ["a", "warm"]
    assert (result["features_a"], result["features_b"], result["features_shared"]) == (5, 7, 5)
    code, out, _ = in_process(["compare", a, b, "--min-jaccard", "0.75", "--json"], capsys)
    assert json.loads(out)["near_duplicate"] is False
    distance = result["distance"]
    for radius, expected in ((distance, True), (distance - 1, False)):
        code, out, _ = in_process(["compare", a, b, "--max-distance", radius, "--json"], capsys)
        assert json.loads(out)["near_duplicate"] is expected


def test_compare_files_and_the_table(tmp_path, capsys):
    first, second = tmp_path / "a.txt", tmp_path / "b.txt"
    first.write_text("Fast JSON parser for Python.\nVersion two.\n", encoding="utf-8")
    second.write_text("A fast JSON parser for Python!", encoding="utf-8")
    code, out, _ = in_process(["compare", "--files", first, second, "--show", "2"], capsys)
    assert code == 0
    assert re.search(r"verdict +not near-duplicates: cosine 0\.\d+ < 0\.8", out)
    assert "features          7 in A, 6 in B, 5 shared" in out
    assert "only in A:        'version' 1, 'two' 1" in out
    assert "only in B:        'a' 1" in out
    code, _, err = in_process(["compare", "--files", first, tmp_path / "none.txt"], capsys)
    assert code == 1
    assert "none.txt: no such file" in err
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"ok \xff")
    code, _, err = in_process(["compare", "--files", first, bad], capsys)
    assert (code, err.strip()) == (1, f"gpusimhash: error: {bad}: not valid UTF-8 (byte 3)")


def test_featureless_text_is_never_a_near_duplicate(capsys):
    _code, out, _ = in_process(["compare", "", "", "--json"], capsys)
    result = json.loads(out)
    assert (result["cosine"], result["near_duplicate"]) == (None, False)


def test_compare_help_offers_only_what_works():
    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command")
    text = commands.choices["compare"].format_help()
    assert "tfidf" not in text
    assert "TEXT_A" in text
    assert "--files" in text
    assert TextFeaturizer().weighting in text


def test_verbose_logs_through_logging_and_quiet_by_default(tmp_path, capsys):
    docs = tmp_path / "docs.txt"
    docs.write_text("one fish two fish\nred fish blue fish\n")
    folder = tmp_path / "idx"
    code, _, err = in_process(
        ["index", "build", docs, "--out", folder, "-q", "--bits", "64"], capsys
    )
    assert (code, err) == (0, "")
    code, _, err = in_process(["index", "stats", folder, "--json", "-v"], capsys)
    assert code == 0
    assert re.fullmatch(
        rf"gpusimhash: loaded {re.escape(str(folder))}: 2 entries, 64 bits, kind flat, "
        r"int64 ids \(\d+\.\d{3} s\)\n",
        err,
    )
    code, _, err = in_process(["index", "stats", folder, "--json"], capsys)
    assert (code, err) == (0, "")  # the handler is removed again


def test_threads_reach_numba_and_faiss(capsys):
    script = (
        "from gpusimhash.cli import main\n"
        "code = main(['compare', 'a b', 'a c', '--threads', '1', '-q'])\n"
        "import numba, faiss\n"
        "print(code, numba.config.NUMBA_NUM_THREADS, numba.get_num_threads(), "
        "faiss.omp_get_max_threads())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.split() == ["0", "1", "1", "1"]
    code, _, err = in_process(["compare", "a", "b", "--threads", "0"], capsys)
    assert code == 2
    assert "threads must be >= 1" in err

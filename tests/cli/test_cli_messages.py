"""Command-line errors name the file, line or option at fault: index ids, stdin, kinds, fields."""

import io
import json

import pytest
from cli_main import in_process

from gpusimhash import SimHashIndex
from gpusimhash.io.inputs import spooled_stdin

TEXTS = [
    "the river flooded the old mill after three days of heavy rain",
    "our team shipped the new search feature to every customer on friday",
    "bake the bread until the crust turns a deep golden brown",
]
HUGE = "99999999999999999999999"  # beyond int64


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def numbered_index(tmp_path, capsys):
    path = write_jsonl(tmp_path / "docs.jsonl", [{"text": t} for t in TEXTS])
    folder = tmp_path / "idx"
    code, _, err = in_process(
        ["index", "build", path, "--out", folder, "--bits", "64", "-q"], capsys
    )
    assert code == 0, err
    return folder


def forty_documents(tmp_path):
    rows = [{"text": f"document {n} says {n * n} and {n + 7}"} for n in range(40)]
    return write_jsonl(tmp_path / "forty.jsonl", rows)


# ------------------------------------------------------------------ index remove and query ids


def test_remove_file_of_invalid_utf8_names_the_file_and_line(numbered_index, tmp_path, capsys):
    ids = tmp_path / "ids.txt"
    ids.write_bytes(b"0\n\xff\xfe\n")
    code, _, err = in_process(["index", "remove", numbered_index, "--file", ids], capsys)
    assert code == 1
    assert f"{ids}, line 2: not valid UTF-8 (invalid start byte)" in err
    assert len(SimHashIndex.load(numbered_index)) == 3  # nothing removed


def test_remove_file_reads_one_id_a_line(numbered_index, tmp_path, capsys):
    ids = tmp_path / "ids.txt"
    ids.write_bytes(b"0\r\n\n 2 \n")
    code, out, err = in_process(
        ["index", "remove", numbered_index, "--file", ids, "--json"], capsys
    )
    assert code == 0, err
    assert json.loads(out)["removed"] == 2
    assert SimHashIndex.load(numbered_index).ids().tolist() == [1]


def test_query_by_an_id_beyond_int64_names_the_option(numbered_index, capsys):
    code, _, err = in_process(["index", "query", numbered_index, "--id", HUGE], capsys)
    assert code == 2
    assert f"--id {HUGE}: not an id of this index, whose ids are integers in [0, 2**63)" in err
    assert "dtype" not in err
    code, _, err = in_process(["index", "query", numbered_index, "--id=-1"], capsys)
    assert code == 2
    assert "--id -1: not an id of this index" in err


def test_query_by_an_absent_id_names_it_plainly(numbered_index, capsys):
    code, _, err = in_process(
        ["index", "query", numbered_index, "--id", "1", "--id", "99999"], capsys
    )
    assert code == 1
    assert err.strip() == f"gpusimhash: error: {numbered_index}: --id 99999 is not in the index"


def test_remove_counts_an_id_beyond_int64_as_not_found(numbered_index, capsys):
    code, out, err = in_process(["index", "remove", numbered_index, HUGE, "1", "--json"], capsys)
    assert code == 0, err
    summary = json.loads(out)
    assert (summary["removed"], summary["not_found"], summary["entries"]) == (1, 1, 2)


# ------------------------------------------------------------------ standard input


def stdin_holding(monkeypatch, data):
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(data)))


def test_an_error_on_standard_input_names_stdin_not_its_copy(tmp_path, monkeypatch, capsys):
    stdin_holding(monkeypatch, b'{"id": 1, "text": "a"}\n{"id": 2, "text":\n')
    code, _, err = in_process(
        ["dedup", "-", "--format", "jsonl", "--out", tmp_path / "out", "-q"], capsys
    )
    assert code == 1
    assert "gpusimhash: error: <stdin>, line 2: not valid JSON" in err
    assert "gpusimhash-stdin" not in err


def test_the_summary_and_report_of_standard_input_name_stdin(tmp_path, monkeypatch, capsys):
    records = [{"text": t} for t in [*TEXTS, TEXTS[0]]]
    lines = "".join(json.dumps(r) + "\n" for r in records) + "{not json\n"
    stdin_holding(monkeypatch, lines.encode())
    out = tmp_path / "out"
    args = ["dedup", "-", "--format", "jsonl", "--out", out, "--skip-invalid"]
    code, stdout, err = in_process(args, capsys)
    assert code == 0, err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["input"] == "<stdin>"
    assert summary["skipped"][0].startswith("<stdin>, line 5: not valid JSON")
    assert "Input: `<stdin>`" in (out / "report.md").read_text()
    assert "gpusimhash-stdin" not in stdout + err + (out / "summary.json").read_text()


def test_standard_input_named_twice_is_one_clear_usage_error(tmp_path, monkeypatch, capsys):
    stdin_holding(monkeypatch, b"x\n")
    code, _, err = in_process(["dedup", "-", "-", "--out", tmp_path / "out", "-q"], capsys)
    assert code == 2
    assert "error: - (standard input) is given twice: it can be read once only" in err
    assert "cannot read" not in err


def test_spooled_stdin_renames_an_os_error_file():
    with pytest.raises(FileNotFoundError) as raised, spooled_stdin(io.BytesIO(b"x")) as path:
        raise FileNotFoundError(2, "No such file or directory", str(path))
    assert raised.value.filename == "<stdin>"
    assert str(raised.value) == "[Errno 2] No such file or directory: '<stdin>'"


# ------------------------------------------------------------------ index kinds' settings


def test_a_too_small_first_batch_for_ivf_says_which_nlist_fits(tmp_path, capsys):
    path = forty_documents(tmp_path)
    code, _, err = in_process(
        ["index", "build", path, "--out", tmp_path / "idx", "--kind", "ivf", "-q"], capsys
    )
    assert code == 1
    assert f"{path}: an IVF index with nlist=256 is trained on its first batch" in err
    assert "needs at least 256 codes, got 40: give --nlist 40 or less\n" in err
    code, _, err = in_process(
        ["index", "build", path, "--out", tmp_path / "idx", "--kind", "ivf", "--nlist", "20"]
        + ["--batch-size", "10", "-q"],
        capsys,
    )
    assert code == 1
    assert (
        "needs at least 20 codes, got 10: give --nlist 10 or less, or a larger --batch-size" in err
    )


def test_ivf_settings_are_options_and_quiet_silences_faiss(tmp_path, capfd):
    path = forty_documents(tmp_path)
    build = ["index", "build", path, "--kind", "ivf", "--nlist", "4", "--nprobe", "2", "--json"]
    code, out, err = in_process([*build, "--out", tmp_path / "loud"], capfd)
    assert code == 0, err
    assert "WARNING clustering 40 points to 4 centroids" in err  # FAISS's, without -q
    code, out, err = in_process([*build, "--out", tmp_path / "quiet", "-q"], capfd)
    assert code == 0, err
    assert "WARNING" not in err
    assert json.loads(out)["params"] == {"nlist": 4, "nprobe": 2}
    index = SimHashIndex.load(tmp_path / "quiet")
    assert (index.kind, index.params, len(index)) == ("ivf", {"nlist": 4, "nprobe": 2}, 40)


@pytest.mark.parametrize(
    ("kind", "settings"),
    [
        ("hnsw", {"m": 8, "ef_construction": 30, "ef_search": 20}),
        ("multihash", {"hash_bits": 8}),
    ],
)
def test_other_kinds_settings_are_options(kind, settings, tmp_path, capsys):
    path = forty_documents(tmp_path)
    flags = [f"--{k.replace('_', '-')}={v}" for k, v in settings.items()]
    code, _, err = in_process(
        ["index", "build", path, "--out", tmp_path / "idx", "--kind", kind, *flags, "-q"], capsys
    )
    assert code == 0, err
    assert SimHashIndex.load(tmp_path / "idx").params == settings


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--nlist", "4"], "--nlist is a setting of --kind ivf, not of --kind flat"),
        (["--kind", "ivf", "--m", "8"], "--m is a setting of --kind hnsw, not of --kind ivf"),
        (
            ["--kind", "hnsw", "--hash-bits", "8"],
            "--hash-bits is a setting of --kind multihash, not of --kind hnsw",
        ),
        (["--kind", "hnsw", "--m", "5000"], "--kind hnsw: m must be in [1, 1024], got 5000"),
        (["--kind", "ivf", "--nprobe", "0"], "argument --nprobe: nprobe must be >= 1, got 0"),
    ],
)
def test_a_setting_of_another_kind_is_a_usage_error(args, message, tmp_path, capsys):
    path = forty_documents(tmp_path)
    code, _, err = in_process(["index", "build", path, "--out", tmp_path / "idx", *args], capsys)
    assert code == 2
    assert message in err
    assert not (tmp_path / "idx").exists()


def test_kind_settings_help_states_the_library_defaults():
    from gpusimhash.cli.index import KIND_SETTINGS

    assert {name for name, _, _ in KIND_SETTINGS} == {
        name
        for kind in ("flat", "multihash", "hnsw", "ivf")
        for name in SimHashIndex(kind=kind).params
    }
    for name, kind, text in KIND_SETTINGS:
        assert text.endswith(f"(default: {SimHashIndex(kind=kind).params[name]})"), name


# ------------------------------------------------------------------ plain text has no fields


@pytest.fixture
def two_lines(tmp_path):
    path = tmp_path / "two.txt"
    path.write_text("one line\nanother line\n")
    return path


@pytest.mark.parametrize(
    ("options", "named"),
    [
        (["--id-field", "url", "--text-field", "body"], "--text-field and --id-field"),
        (["--text-field", "text"], "--text-field"),
        (["--id-field", "url"], "--id-field"),
    ],
)
def test_fields_of_plain_text_are_a_usage_error(two_lines, options, named, tmp_path, capsys):
    out = tmp_path / "out"
    code, _, err = in_process(["dedup", two_lines, "--out", out, "-q", *options], capsys)
    assert code == 2
    assert f"{named}: {two_lines} is plain text, one document a line with no fields" in err
    assert not out.exists()


def test_plain_text_without_fields_and_fields_with_a_format_still_run(
    two_lines, tmp_path, monkeypatch, capsys
):
    code, _, err = in_process(["dedup", two_lines, "--out", tmp_path / "a", "-q"], capsys)
    assert code == 0, err
    stdin_holding(monkeypatch, b'{"body": "one line"}\n')
    code, _, err = in_process(
        ["dedup", "-", "--format", "jsonl", "--text-field", "body", "--out", tmp_path / "b"]
        + ["-q"],
        capsys,
    )
    assert code == 0, err


def test_fields_of_plain_text_on_standard_input_and_in_index_commands(
    two_lines, numbered_index, tmp_path, monkeypatch, capsys
):
    stdin_holding(monkeypatch, b"one line\n")
    code, _, err = in_process(
        ["dedup", "-", "--text-field", "body", "--out", tmp_path / "out", "-q"], capsys
    )
    assert code == 2
    assert "--text-field: <stdin> is plain text" in err
    for command in (
        ["index", "build", two_lines, "--out", tmp_path / "idx2", "--id-field", "url"],
        ["index", "add", numbered_index, two_lines, "--text-field", "body"],
        ["index", "query", numbered_index, "--file", two_lines, "--text-field", "body"],
    ):
        code, _, err = in_process([*command, "-q"], capsys)
        assert code == 2, command
        assert f"{two_lines} is plain text" in err
    assert len(SimHashIndex.load(numbered_index)) == 3


# ------------------------------------------------------------------ beyond one machine


def test_tfidf_on_a_cluster_is_a_usage_error(tmp_path, capsys):
    path = write_jsonl(tmp_path / "in.jsonl", [{"id": n, "text": t} for n, t in enumerate(TEXTS)])
    code, _, err = in_process(
        ["dedup", path, "--weighting", "tfidf", "--workers", "1", "--out", tmp_path / "out"]
        + ["-q", "--no-report"],
        capsys,
    )
    assert code == 2
    assert "--weighting tfidf is not supported with --scheduler or --workers" in err
    assert "featurizer.fit" not in err


def test_a_repeated_id_names_the_file_and_its_second_document(tmp_path, capsys):
    path = tmp_path / "docs.jsonl"
    records = [{"id": "a", "text": "one"}, {"id": "b", "text": "two"}, {"id": "a", "text": "x"}]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    args = ["index", "build", path, "--out", tmp_path / "idx", "--id-field", "id", "-q"]
    code, _, err = in_process(args, capsys)
    assert code == 1
    assert f"{path}, document 3: ids must be unique, id 'a' repeats" in err


@pytest.mark.parametrize(
    "flags",
    [["--id-field", "id"], ["--text-field", "body"], ["--format", "csv", "--id-field", "id"]],
)
def test_query_file_options_without_a_file_are_refused(numbered_index, capsys, flags):
    code, _, err = in_process(["index", "query", numbered_index, "some text", *flags], capsys)
    assert code == 2
    named = " and ".join(f for f in flags if f.startswith("--"))
    assert f"{named} describe --file: give --file" in err

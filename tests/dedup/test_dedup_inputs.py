"""dedup over several files (shards) and ids from an ``id`` field."""

import gzip
import json

import numpy as np
import pytest

from gpusimhash.dedup.pipeline import dedup_file
from gpusimhash.io.inputs import input_files
from gpusimhash.io.readers import InputError

TEXTS = [
    "the river flooded the old mill after three days of heavy rain",
    "our team shipped the new search feature to every customer on friday",
    "the river flooded the old mill after three days of heavy rain",
    "bake the bread until the crust turns a deep golden brown",
    "our team shipped the new search feature to every customer on friday",
    "a quiet street at dawn",
    "bake the bread until the crust turns a deep golden brown",
]


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def duplicates(folder):
    return [json.loads(line) for line in (folder / "duplicates.jsonl").open()]


@pytest.mark.parametrize("kind", ["txt", "jsonl"])
def test_shards_are_read_as_one_corpus(tmp_path, kind):
    shards = tmp_path / "shards"
    shards.mkdir()
    whole = tmp_path / f"whole.{kind}"
    parts = [TEXTS[:3], TEXTS[3:4], [], TEXTS[4:]]
    for k, part in enumerate(parts):
        path = shards / f"part-{k}.{kind}"
        if kind == "txt":
            path.write_text("".join(t + "\n" for t in part))
        else:
            write_jsonl(path, [{"text": t} for t in part])
    if kind == "txt":
        whole.write_text("".join(t + "\n" for t in TEXTS))
    else:
        write_jsonl(whole, [{"text": t} for t in TEXTS])
    options = {"bits": 64, "max_distance": 3, "batch_size": 2}
    one = dedup_file(whole, tmp_path / "one", **options)
    files = input_files(shards)
    assert [p.name for p in files] == [f"part-{k}.{kind}" for k in range(4)]
    many = dedup_file(files, tmp_path / "many", **options)
    np.testing.assert_array_equal(many.codes, one.codes)
    np.testing.assert_array_equal(many.kept, one.kept)
    assert many.kept.tolist() == [True, True, False, True, False, True, False]
    assert duplicates(tmp_path / "many") == duplicates(tmp_path / "one")
    assert [d["ids"] for d in duplicates(tmp_path / "many")] == [[0, 2], [1, 4], [3, 6]]
    kept = (tmp_path / "many" / "kept.jsonl").read_text().splitlines()
    assert kept == (tmp_path / "one" / "kept.jsonl").read_text().splitlines()
    assert many.summary["input"] == f"{files[0]} (and 3 more files)"


def test_ids_come_from_an_id_field_when_there_is_one(tmp_path):
    rows = [{"id": f"doc-{k}", "text": t} for k, t in enumerate(TEXTS)]
    first = write_jsonl(tmp_path / "a.jsonl", rows[:4])
    second = write_jsonl(tmp_path / "b.jsonl", rows[4:])
    dedup_file([first, second], tmp_path / "o", bits=64, max_distance=3)
    found = duplicates(tmp_path / "o")
    assert [d["ids"] for d in found] == [["doc-0", "doc-2"], ["doc-1", "doc-4"], ["doc-3", "doc-6"]]
    assert [d["kept_id"] for d in found] == ["doc-0", "doc-1", "doc-3"]
    assert [d["rows"] for d in found] == [[0, 2], [1, 4], [3, 6]]


def test_an_id_field_of_another_type_is_not_taken(tmp_path):
    path = write_jsonl(tmp_path / "a.jsonl", [{"id": 1.5, "text": t} for t in TEXTS])
    dedup_file(path, tmp_path / "o", bits=64, max_distance=3)
    assert [d["ids"] for d in duplicates(tmp_path / "o")] == [[0, 2], [1, 4], [3, 6]]


def test_a_record_without_the_id_field_is_named(tmp_path):
    path = write_jsonl(tmp_path / "a.jsonl", [{"id": 7, "text": "a"}, {"text": "b"}])
    with pytest.raises(InputError, match=r"a\.jsonl, line 2: no field 'id'"):
        dedup_file(path, tmp_path / "o", bits=64, max_distance=3)


def test_a_changed_shard_is_refused(tmp_path, monkeypatch):
    from gpusimhash.dedup import pipeline

    first = write_jsonl(tmp_path / "a.jsonl", [{"text": t} for t in TEXTS[:3]])
    second = write_jsonl(tmp_path / "b.jsonl", [{"text": t} for t in TEXTS[3:]])
    write_kept = pipeline.write_kept

    def append_then_write(source, *args):
        with second.open("a") as stream:
            stream.write('{"text": "late"}\n')
        return write_kept(source, *args)

    monkeypatch.setattr(pipeline, "write_kept", append_then_write)
    with pytest.raises(InputError, match="changed while it was read"):
        dedup_file([first, second], tmp_path / "o", bits=64, max_distance=3)


def test_input_files_refuses_what_it_cannot_read(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such file or folder"):
        input_files(tmp_path / "missing.txt")
    with pytest.raises(FileNotFoundError, match="no file matches this pattern"):
        input_files(str(tmp_path / "*.jsonl"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="a folder with no files"):
        input_files(tmp_path / "empty")
    with pytest.raises(ValueError, match="no input"):
        input_files([])
    with pytest.raises(ValueError, match="standard input"):
        input_files(["-", "-"])
    (tmp_path / "a.txt").write_text("x\n")
    assert input_files([tmp_path / "a.txt", str(tmp_path / "*.txt"), "-"]) == [
        tmp_path / "a.txt",
        type(tmp_path)("-"),
    ]


def test_plain_text_kept_records_are_the_lines_themselves(tmp_path):
    # written from the lines' bytes (no record per line), as the record path writes them:
    # a byte-order mark and CRLF endings dropped, every character JSON escapes, rows across files
    import gzip

    lines = [
        '\ufeffquotes " and back\\slashes and tabs\tin the river flooded the old mill',
        'quotes " and back\\slashes and tabs\tin the river flooded the old mill',
        "ünïcödé 😀 astral\u2028separator",
        "bake the bread until the crust turns a deep golden brown",
    ]
    first = tmp_path / "a.txt"
    first.write_bytes(("\r\n".join(lines[:2]) + "\r\n").encode())
    second = tmp_path / "b.txt.gz"
    second.write_bytes(gzip.compress(("\n".join(lines[2:] + lines[3:]) + "\n").encode()))
    options = {"bits": 64, "batch_size": 2}
    by_lines = dedup_file([first, second], tmp_path / "lines", **options)
    by_records = dedup_file([first, second], tmp_path / "records", skip_invalid=True, **options)
    kept = (tmp_path / "lines" / "kept.jsonl").read_bytes()
    assert kept == (tmp_path / "records" / "kept.jsonl").read_bytes()
    texts = [lines[0].removeprefix("\ufeff"), *lines[1:], lines[3]]
    want = [{"id": row, "text": texts[row]} for row in range(5) if by_lines.kept[row]]
    assert [json.loads(line) for line in kept.decode().split("\n")[:-1]] == want
    assert by_lines.kept.tolist() == by_records.kept.tolist() == [True, False, True, True, False]


def test_kept_jsonl_records_are_their_input_lines_as_they_were(tmp_path):
    # a byte order mark, compact and escaped JSON, a blank line: kept lines come back unchanged
    records = [{"id": f"k{k}", "text": text, "n": 1.5} for k, text in enumerate(TEXTS)]
    lines = [json.dumps(r, separators=(",", ":")) for r in records]
    lines[5] = '{"text":"a quiet street at dawn \\u00e9","id":"k5","n":1.50}'
    path = tmp_path / "docs.jsonl.gz"
    content = "\ufeff" + lines[0] + "\n\n" + "".join(line + "\r\n" for line in lines[1:])
    path.write_bytes(gzip.compress(content.encode("utf-8")))
    result = dedup_file(path, tmp_path / "out", max_distance=3, report=True)
    kept = [line for line, keep in zip(lines, result.kept, strict=True) if keep]
    assert (tmp_path / "out" / "kept.jsonl").read_text(encoding="utf-8").split("\n") == [*kept, ""]
    assert result.kept.tolist() == [True, True, False, True, False, True, False]
    assert [d["ids"] for d in duplicates(tmp_path / "out")] == [
        ["k0", "k2"],
        ["k1", "k4"],
        ["k3", "k6"],
    ]
    # the report's examples take their texts from the parsed lines
    assert f"| 0 (kept) | | | {TEXTS[0]} |" in (tmp_path / "out" / "report.md").read_text()

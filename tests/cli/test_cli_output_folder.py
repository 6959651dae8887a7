"""dedup's --out: a user's file is never replaced; links and mount points are written through."""

import json
import shutil
import subprocess
import sys

import pytest

from gpusimhash._output_names import MANIFEST
from gpusimhash.cli import main

ARGS = ["-q", "--bits", "64", "--max-distance", "3"]


@pytest.fixture
def source(tmp_path):
    path = tmp_path / "in.jsonl"
    texts = ["a b c d", "a b c d", "x y z w"]
    path.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts), encoding="utf-8")
    return path


def test_a_folder_in_place_of_the_report_is_not_deleted(tmp_path, source, capsys):
    out = tmp_path / "out"
    assert main(["dedup", str(source), "--out", str(out), *ARGS]) == 0
    (out / "report.md").unlink()
    (out / "report.md").mkdir()
    (out / "report.md" / "notes.txt").write_text("the user's")
    assert main(["dedup", str(source), "--out", str(out), *ARGS, "--overwrite"]) == 1
    error = capsys.readouterr().err
    assert f"{out}/report.md is a folder that no earlier run wrote" in error
    assert (out / "report.md" / "notes.txt").read_text() == "the user's"


def test_a_file_of_ours_that_no_run_wrote_is_not_replaced(tmp_path, source, capsys):
    out = tmp_path / "out"
    assert main(["dedup", str(source), "--out", str(out), *ARGS, "--no-report"]) == 0
    (out / "report.md").write_text("the user's own report")
    assert main(["dedup", str(source), "--out", str(out), *ARGS, "--overwrite"]) == 1
    assert f"{out}/report.md is a file that no earlier run wrote" in capsys.readouterr().err
    assert (out / "report.md").read_text() == "the user's own report"


def test_a_dangling_link_is_written_through(tmp_path, source):
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "target")
    assert main(["dedup", str(source), "--out", str(link), *ARGS]) == 0
    assert len((tmp_path / "target" / "kept.jsonl").read_text().splitlines()) == 2
    assert link.is_symlink()
    assert main(["dedup", str(source), "--out", str(link), *ARGS, "--overwrite"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl", "link", "target"]


def can_mount():
    if shutil.which("unshare") is None:
        return False
    done = subprocess.run(
        ["unshare", "-rm", "sh", "-c", "mount -t tmpfs none /tmp"],
        capture_output=True,
        check=False,
    )
    return done.returncode == 0


@pytest.mark.skipif(not can_mount(), reason="needs unshare and a tmpfs mount in a namespace")
def test_an_empty_mount_point_is_written_and_overwritten(tmp_path, source):
    mount = tmp_path / "mnt"
    mount.mkdir()
    dedup = [sys.executable, "-m", "gpusimhash", "dedup", str(source), "--out", str(mount), *ARGS]
    script = (
        f"mount -t tmpfs none {mount} && {' '.join(dedup)} && {' '.join(dedup)} --overwrite "
        f"&& ls -a {mount} && wc -l < {mount}/kept.jsonl"
    )
    done = subprocess.run(
        ["unshare", "-rm", "sh", "-c", script],
        capture_output=True,
        check=False,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    listed = done.stdout.split()
    assert listed[-1] == "2"  # kept documents
    assert {MANIFEST, "kept.jsonl", "summary.json"} <= set(listed)
    assert not [name for name in listed if name.startswith(".gpusimhash-") and name != MANIFEST]

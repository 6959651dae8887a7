"""Output folders: only what an earlier run's manifest lists is replaced, wherever the folder is."""

import errno
import json
import os

import pytest

from gpusimhash._output_names import MANIFEST
from gpusimhash.io import _output_folder
from gpusimhash.io._output_folder import output_entries, replacing_folder


def ours(name):
    return name.endswith(".txt") or name == "parts"


def write_run(out, files):
    with replacing_folder(out, owned=ours) as stage:
        for name, text in files.items():
            (stage / name).parent.mkdir(parents=True, exist_ok=True)
            if callable(text):
                text(stage)
            else:
                (stage / name).write_text(text)


def contents(folder):
    return {
        p.relative_to(folder).as_posix(): p.read_text()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != MANIFEST
    }


def test_the_manifest_lists_every_file_and_folder_written(tmp_path):
    out = tmp_path / "out"
    write_run(out, {"a.txt": "1", "parts/p0.txt": "2"})
    manifest = json.loads((out / MANIFEST).read_text())
    assert manifest == {"format": 1, "files": ["a.txt", "parts/p0.txt"], "folders": ["parts"]}
    write_run(out, {"b.txt": "3"})
    assert contents(out) == {"b.txt": "3"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


@pytest.mark.parametrize(
    ("planted", "kind"),
    [
        ("a.txt/notes", "a folder"),  # a name of ours, now a folder holding a user's file
        ("c.txt", "a file"),  # a name of ours the manifest does not list
        ("parts/notes", "a folder"),  # a user's file in one of our folders
    ],
)
def test_an_entry_no_run_wrote_is_refused_and_kept(tmp_path, planted, kind):
    out = tmp_path / "out"
    write_run(out, {"a.txt": "1", "parts/p0.txt": "2"})
    if planted.startswith("a.txt/"):
        (out / "a.txt").unlink()
    (out / planted).parent.mkdir(exist_ok=True)
    (out / planted).write_text("the user's")
    before = contents(out)
    top = planted.split("/")[0]
    with pytest.raises(ValueError, match=f"{out / top} is {kind} that no earlier run wrote"):
        write_run(out, {"b.txt": "3"})
    assert contents(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_a_folder_without_a_manifest_is_refused(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "a.txt").write_text("written by hand")
    with pytest.raises(ValueError, match=f"has no {MANIFEST} listing what an earlier run wrote"):
        write_run(out, {"a.txt": "new"})
    assert (out / "a.txt").read_text() == "written by hand"


def test_a_link_in_place_of_a_listed_file_is_refused(tmp_path):
    out = tmp_path / "out"
    write_run(out, {"a.txt": "1"})
    (tmp_path / "mine.txt").write_text("the user's")
    (out / "a.txt").unlink()
    (out / "a.txt").symlink_to(tmp_path / "mine.txt")
    with pytest.raises(ValueError, match="is a link that no earlier run wrote"):
        write_run(out, {"a.txt": "new"})
    assert (tmp_path / "mine.txt").read_text() == "the user's"


def test_a_manifest_of_a_newer_format_is_refused(tmp_path):
    out = tmp_path / "out"
    write_run(out, {"a.txt": "1"})
    (out / MANIFEST).write_text(json.dumps({"format": 2, "files": ["a.txt"], "folders": []}))
    with pytest.raises(ValueError, match="format 2: written by a newer version, this one reads 1"):
        write_run(out, {"a.txt": "new"})
    assert (out / "a.txt").read_text() == "1"


@pytest.fixture
def mount_point(tmp_path, monkeypatch):
    """An output folder that cannot be renamed, as a mount point: renaming it fails (EBUSY)."""
    out = tmp_path / "mnt"
    out.mkdir()
    rename = os.rename

    def busy(source, target, *args, **kwargs):
        if os.path.realpath(source) == str(out):
            raise OSError(errno.EBUSY, os.strerror(errno.EBUSY), str(source))
        return rename(source, target, *args, **kwargs)

    monkeypatch.setattr(os, "rename", busy)
    monkeypatch.setattr(_output_folder, "_is_mount_point", lambda path: path == out)
    return out


def test_a_mount_point_is_written_through_a_staging_folder_inside(mount_point):
    (mount_point / "lost+found").mkdir()  # a file system's own, at its root: no output
    assert output_entries(mount_point) == []
    write_run(mount_point, {"a.txt": "1", "parts/p0.txt": "2"})
    write_run(mount_point, {"b.txt": "3"})
    assert contents(mount_point) == {"b.txt": "3"}
    assert sorted(os.listdir(mount_point)) == [MANIFEST, "b.txt", "lost+found"]


def test_a_failed_run_in_a_mount_point_leaves_the_earlier_outputs(mount_point):
    write_run(mount_point, {"a.txt": "1"})

    def disk_full(stage):
        (stage / "b.txt").write_text("half")
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(OSError, match="No space left"):
        write_run(mount_point, {"b.txt": disk_full})
    assert contents(mount_point) == {"a.txt": "1"}
    assert sorted(os.listdir(mount_point)) == [MANIFEST, "a.txt"]


def test_a_move_that_fails_puts_back_the_earlier_outputs(mount_point, monkeypatch):
    write_run(mount_point, {"a.txt": "1", "b.txt": "2"})
    rename, calls = os.rename, []

    def third_fails(source, target):
        calls.append(source)
        if len(calls) == 3:
            raise OSError(errno.EIO, "Input/output error")
        return rename(source, target)

    monkeypatch.setattr(os, "rename", third_fails)
    with pytest.raises(OSError, match="Input/output error"):
        write_run(mount_point, {"c.txt": "3"})
    assert contents(mount_point) == {"a.txt": "1", "b.txt": "2"}
    assert sorted(os.listdir(mount_point)) == [MANIFEST, "a.txt", "b.txt"]

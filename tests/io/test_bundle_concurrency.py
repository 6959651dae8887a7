"""Bundles under concurrent writers and readers, and hostile manifests."""

import hashlib
import json
import threading

import pytest

from gpusimhash.io import bundle
from gpusimhash.io.bundle import BundleError, read_bundle, reading, write_bundle, writing


def save(folder, content):
    write_bundle(
        folder,
        {"note": ("txt", lambda p: p.write_text(content))},
        format_name="demo",
        format_version=1,
        metadata={"content": content},
    )


def load(folder):
    with reading(folder):
        metadata, paths = read_bundle(folder, format_name="demo", format_version=1)
        return metadata["content"], paths["note"].read_text()


def test_concurrent_saves_and_loads_always_see_a_whole_bundle(tmp_path):
    folder = tmp_path / "b"
    save(folder, "start")
    errors, loads = [], []
    done = threading.Event()

    def writer(name):
        try:
            for k in range(30):
                save(folder, f"{name} {k}" * (1 + k % 7))
        except (OSError, ValueError) as error:  # every save must succeed
            errors.append(error)

    def reader():
        while not done.is_set():
            try:
                expected, found = load(folder)
            except (OSError, ValueError) as error:  # every load sees the old or the new bundle
                errors.append(error)
                return
            loads.append(expected == found)

    writers = [threading.Thread(target=writer, args=(name,)) for name in "ab"]
    readers = [threading.Thread(target=reader) for _ in range(2)]
    for thread in writers + readers:
        thread.start()
    for thread in writers:
        thread.join()
    done.set()
    for thread in readers:
        thread.join()
    assert errors == []
    assert loads
    assert all(loads)
    content, text = load(folder)
    assert content == text
    assert content in {"a 29" * 2, "b 29" * 2}


def test_a_held_writer_lock_makes_other_writers_wait(tmp_path):
    folder = tmp_path / "b"
    save(folder, "first")
    order = []
    with writing(folder):
        thread = threading.Thread(target=lambda: (save(folder, "second"), order.append("saved")))
        thread.start()
        thread.join(timeout=0.3)
        assert thread.is_alive()  # waiting for the lock
        order.append("released")
        save(folder, "inside")  # re-entrant for the holder
    thread.join()
    assert order == ["released", "saved"]
    assert load(folder) == ("second", "second")


def test_a_busy_reader_keeps_its_files(tmp_path):
    folder = tmp_path / "b"
    save(folder, "old")
    with reading(folder):
        _, paths = read_bundle(folder, format_name="demo", format_version=1)
        save(folder, "new")
        assert paths["note"].read_text() == "old"
    save(folder, "newer")
    names = {p.name for p in folder.iterdir()} - {bundle.WRITER_LOCK, bundle.READER_LOCK}
    assert len(names) == 2  # the manifest and one data file: stale files went with this save


def resign(folder, edit):
    manifest = json.loads((folder / "manifest.json").read_text())
    edit(manifest)
    body = {k: manifest[k] for k in ("format", "format_version", "files", "metadata")}
    manifest["manifest_sha256"] = hashlib.sha256(
        json.dumps(body, sort_keys=True).encode()
    ).hexdigest()
    (folder / "manifest.json").write_text(json.dumps(manifest))


def outside(manifest, folder, target):
    target.write_text("elsewhere")
    entry = manifest["files"]["note"]
    entry.update(
        file=str(target) if target.is_absolute() else f"../{target.name}",
        bytes=target.stat().st_size,
        sha256=bundle.sha256_file(target),
    )


@pytest.mark.parametrize(
    "edit",
    [
        pytest.param(lambda m, f: outside(m, f, f.parent / "elsewhere.txt"), id="dotdot"),
        pytest.param(lambda m, f: outside(m, f, f.parent.resolve() / "abs.txt"), id="absolute"),
        pytest.param(lambda m, f: m.update(files=[1]), id="files-list"),
        pytest.param(lambda m, f: m["files"].update(note="x"), id="entry-string"),
        pytest.param(lambda m, f: m["files"]["note"].pop("file"), id="entry-no-file"),
        pytest.param(lambda m, f: m["files"]["note"].update(bytes="3"), id="bytes-string"),
        pytest.param(lambda m, f: m.update(metadata=[]), id="metadata-list"),
        pytest.param(
            lambda m, f: m["files"]["note"].update(file="other.0123456789abcdef.txt"),
            id="other-name",
        ),
    ],
)
def test_tampered_manifests_are_bundle_errors(tmp_path, edit):
    folder = tmp_path / "b"
    save(folder, "content")
    resign(folder, lambda manifest: edit(manifest, folder))
    with pytest.raises(BundleError, match="manifest.json"):
        read_bundle(folder, format_name="demo", format_version=1)


def test_deeply_nested_manifest_and_links_are_bundle_errors(tmp_path):
    folder = tmp_path / "b"
    save(folder, "content")
    (folder / "manifest.json").write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(BundleError, match="unreadable manifest"):
        read_bundle(folder, format_name="demo", format_version=1)
    save(folder, "content")
    _, paths = read_bundle(folder, format_name="demo", format_version=1)
    target = tmp_path / "target"
    paths["note"].rename(target)
    paths["note"].symlink_to(target)
    with pytest.raises(BundleError, match="not a regular file"):
        read_bundle(folder, format_name="demo", format_version=1)

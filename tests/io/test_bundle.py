import json

import numpy as np
import pytest

from gpusimhash import SimHashIndex, TextFeaturizer
from gpusimhash.io import _atomic, bundle
from gpusimhash.io.bundle import BundleError, read_bundle, write_bundle


def saved_index(tmp_path, kind="flat", n=200, **params):
    rng = np.random.default_rng(0)
    codes = rng.integers(0, 256, (n, 8), dtype=np.uint8)
    index = SimHashIndex(64, kind=kind, seed=11, featurizer=TextFeaturizer(ngram=2), **params)
    index.add(codes, ids=np.arange(n, dtype=np.int64) * 10 + 5)
    path = tmp_path / "index"
    index.save(path)
    return index, codes, path


def data_file(path, name):
    manifest = json.loads((path / "manifest.json").read_text())
    return path / manifest["files"][name]["file"]


@pytest.mark.parametrize(
    ("kind", "params"),
    [("flat", {}), ("multihash", {}), ("hnsw", {"m": 8}), ("ivf", {"nlist": 8, "nprobe": 8})],
)
def test_round_trip_keeps_ids_settings_and_results(tmp_path, kind, params):
    index, codes, path = saved_index(tmp_path, kind, **params)
    index.remove([5, 15, 25])
    index.save(path)
    loaded = SimHashIndex.load(path)
    assert (loaded.kind, loaded.bits, loaded.seed, loaded.params) == (
        index.kind,
        index.bits,
        index.seed,
        index.params,
    )
    assert loaded.featurizer.to_config() == index.featurizer.to_config()
    np.testing.assert_array_equal(loaded.ids(), index.ids())
    assert len(loaded) == 197
    for a, b in zip(loaded.search(codes[:20], k=5), index.search(codes[:20], k=5), strict=True):
        np.testing.assert_array_equal(a, b)
    # still usable: add after load, then save and load again
    loaded.add(codes[:2] ^ 1, ids=[1, 2])
    loaded.save(path)
    again = SimHashIndex.load(path)
    assert len(again) == 199
    assert {1, 2} <= set(again.ids().tolist())
    assert not set(again.ids().tolist()) & {5, 15, 25}
    files = {p.name for p in path.iterdir()} - {bundle.WRITER_LOCK, bundle.READER_LOCK}
    assert len(files) == 3  # manifest + current files only


def test_mmap_load_is_read_only(tmp_path):
    index, codes, path = saved_index(tmp_path)
    loaded = SimHashIndex.load(path, mmap=True)
    np.testing.assert_array_equal(
        loaded.search(codes[:5], k=3).ids, index.search(codes[:5], k=3).ids
    )
    with pytest.raises(RuntimeError, match="read-only"):
        loaded.add(codes[:1], ids=[1])
    with pytest.raises(RuntimeError, match="read-only"):
        loaded.remove([5])


def test_interrupted_save_leaves_previous_index(tmp_path, monkeypatch):
    index, _codes, path = saved_index(tmp_path)
    before = sorted(p.name for p in path.iterdir())
    index.remove([5, 15])

    def failing_save(array, *args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(np, "save", failing_save)  # the tombstones file fails mid-save
    with pytest.raises(OSError, match="disk full"):
        index.save(path)
    monkeypatch.undo()
    assert sorted(p.name for p in path.iterdir()) == before
    loaded = SimHashIndex.load(path)
    assert len(loaded) == 200
    assert 5 in loaded.ids()


def test_crash_before_manifest_swap_leaves_previous_index(tmp_path, monkeypatch):
    index, codes, path = saved_index(tmp_path)
    index.add(codes[:3] ^ 255, ids=[1, 2, 3])

    def crash(*args, **kwargs):
        raise KeyboardInterrupt  # the process dies at the swap

    monkeypatch.setattr(_atomic.os, "replace", crash)
    with pytest.raises(KeyboardInterrupt):
        index.save(path)
    monkeypatch.undo()
    assert len(SimHashIndex.load(path)) == 200
    index.save(path)  # the next save succeeds and cleans up
    assert len(SimHashIndex.load(path)) == 203


def test_truncated_file_is_refused(tmp_path):
    _, _, path = saved_index(tmp_path)
    target = data_file(path, "index")
    target.write_bytes(target.read_bytes()[:-100])
    with pytest.raises(BundleError, match=rf"{target.name}.*truncated"):
        SimHashIndex.load(path)


@pytest.mark.parametrize("name", ["index", "tombstones"])
def test_flipped_byte_is_refused(tmp_path, name):
    _, _, path = saved_index(tmp_path)
    target = data_file(path, name)
    data = bytearray(target.read_bytes())
    data[len(data) // 2] ^= 0x10
    target.write_bytes(bytes(data))
    with pytest.raises(BundleError, match=rf"{target.name}.*corrupt"):
        SimHashIndex.load(path)


def test_corrupt_faiss_file_without_checksum_check_is_refused(tmp_path):
    _, _, path = saved_index(tmp_path)
    target = data_file(path, "index")
    data = bytearray(target.read_bytes())
    data[:4] = b"XXXX"  # not a FAISS index header
    target.write_bytes(bytes(data))
    with pytest.raises(BundleError, match=rf"{target.name}.*FAISS"):
        SimHashIndex.load(path, verify=False)


def test_missing_file_is_refused(tmp_path):
    _, _, path = saved_index(tmp_path)
    target = data_file(path, "tombstones")
    target.unlink()
    with pytest.raises(BundleError, match=rf"{target.name}.*missing"):
        SimHashIndex.load(path)
    with pytest.raises(BundleError, match="manifest.json.*missing"):
        SimHashIndex.load(tmp_path / "nowhere")


def rewrite_manifest(path, change):
    """Edit the manifest and re-seal it, as a different writer would."""
    manifest = json.loads((path / "manifest.json").read_text())
    change(manifest)
    body = {k: manifest[k] for k in ("format", "format_version", "files", "metadata")}
    manifest["manifest_sha256"] = bundle._self_checksum(body)
    (path / "manifest.json").write_text(json.dumps(manifest))


def test_edited_manifest_is_refused(tmp_path):
    _, _, path = saved_index(tmp_path)
    text = (path / "manifest.json").read_text().replace('"seed": 11', '"seed": 12')
    (path / "manifest.json").write_text(text)
    with pytest.raises(BundleError, match="manifest.json.*altered"):
        SimHashIndex.load(path)
    (path / "manifest.json").write_text("{not json")
    with pytest.raises(BundleError, match="manifest.json.*unreadable"):
        SimHashIndex.load(path)


def test_wrong_version_is_refused(tmp_path):
    _, _, path = saved_index(tmp_path)
    rewrite_manifest(path, lambda m: m.update(format_version=99))
    with pytest.raises(BundleError, match="manifest.json.*version 99"):
        SimHashIndex.load(path)


def test_wrong_bits_is_refused(tmp_path):
    _, _, path = saved_index(tmp_path)
    rewrite_manifest(path, lambda m: m["metadata"].update(bits=128))
    with pytest.raises(BundleError, match=r"index\..*128 bits"):
        SimHashIndex.load(path)


def test_wrong_kind_is_refused(tmp_path):
    _, _, path = saved_index(tmp_path)
    rewrite_manifest(
        path, lambda m: m["metadata"].update(kind="multihash", params={"hash_bits": 16})
    )
    with pytest.raises(BundleError, match="IndexBinaryMultiHash"):
        SimHashIndex.load(path)


def test_bundle_refuses_bad_names(tmp_path):
    with pytest.raises(ValueError, match="bad bundle file name"):
        write_bundle(
            tmp_path,
            {"Bad-Name": ("txt", lambda p: p.write_text(""))},
            format_name="x",
            format_version=1,
            metadata={},
        )
    assert [p.name for p in tmp_path.iterdir()] == [bundle.WRITER_LOCK]


def test_bundle_other_format_is_refused(tmp_path):
    write_bundle(tmp_path, {}, format_name="other", format_version=1, metadata={})
    with pytest.raises(BundleError, match="'other'"):
        read_bundle(tmp_path, format_name="gpusimhash-index", format_version=1)

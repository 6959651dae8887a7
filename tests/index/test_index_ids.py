"""SimHashIndex with string ids: keys kept in a saved map, removed and found again."""

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusimhash import SimHashIndex, hamming
from gpusimhash.index._storage import FORMAT_NAME
from gpusimhash.io.bundle import BundleError, read_bundle

KINDS = {"flat": {}, "multihash": {}, "hnsw": {"m": 8}, "ivf": {"nlist": 2, "nprobe": 2}}


def random_codes(n, bits=64, seed=0):
    return np.random.default_rng(seed).integers(0, 256, size=(n, bits // 8), dtype=np.uint8)


@pytest.mark.parametrize("kind", list(KINDS))
def test_string_ids_through_add_search_remove_save_load(tmp_path, kind):
    codes = random_codes(40)
    keys = [f"doc-{n}" for n in range(40)]
    index = SimHashIndex(64, kind=kind, **KINDS[kind])
    assert index.add(codes, ids=keys).tolist() == keys
    assert index.id_type == "key"
    result = index.search(codes[:3], k=1)
    if kind in ("flat", "multihash"):
        assert result.ids[:, 0].tolist() == keys[:3]
    within = index.range_search(codes[5:6], max_distance=0)
    assert within.query(0).ids.tolist() == ["doc-5"]
    assert index.remove(["doc-5", "doc-6", "not-there"]) == 2
    assert index.range_search(codes[5:6], max_distance=0).query(0).ids.tolist() == []
    # a removed key may come back at once (a fresh internal id, no tombstone clash)
    index.add(codes[5:6], ids=["doc-5"])
    index.save(tmp_path / "idx")
    loaded = SimHashIndex.load(tmp_path / "idx")
    expected = [k for k in keys if k not in ("doc-5", "doc-6")] + ["doc-5"]
    assert loaded.ids().tolist() == expected
    np.testing.assert_array_equal(loaded.codes_of(["doc-5", "doc-0"]), codes[[5, 0]])
    loaded.add(codes[6:7], ids=["doc-6"])
    assert sorted(loaded.ids().tolist()) == sorted(keys)


def test_mixed_str_and_int_keys_and_missing_results():
    index = SimHashIndex(64)
    codes = random_codes(3)
    index.add(codes, ids=["a", 7, np.int64(9)])
    assert index.ids().tolist() == ["a", 7, 9]
    padded = index.search(codes[:1], k=5)
    assert padded.ids[0, 3:].tolist() == [None, None]
    assert padded.distances[0, 3:].tolist() == [-1, -1]
    assert padded.ids.dtype == object


def test_id_errors():
    index = SimHashIndex(64)
    index.add(random_codes(2), ids=[1, 2])
    with pytest.raises(TypeError, match="holds integer ids"):
        index.add(random_codes(1), ids=["x"])
    named = SimHashIndex(64)
    named.add(random_codes(2), ids=["x", "y"])
    with pytest.raises(ValueError, match="string ids: give ids"):
        named.add(random_codes(1))
    with pytest.raises(ValueError, match="'x' is already in the index"):
        named.add(random_codes(1), ids=["x"])
    with pytest.raises(ValueError, match="'z' repeats"):
        named.add(random_codes(2), ids=["z", "z"])
    with pytest.raises(TypeError, match="ids must be str or int, got float"):
        named.add(random_codes(1), ids=[1.5])
    with pytest.raises(TypeError, match="got bool"):
        named.add(random_codes(1), ids=[True])
    with pytest.raises(KeyError, match="'nope'"):
        named.codes_of(["nope"])
    with pytest.raises(KeyError, match="5"):
        index.codes_of([5])


def test_query_by_id_equals_query_by_code():
    codes = random_codes(50, bits=128, seed=3)
    index = SimHashIndex(128)
    index.add(codes, ids=range(100, 150))
    by_id = index.search(index.codes_of([120, 101]), k=4)
    by_code = index.search(codes[[20, 1]], k=4)
    np.testing.assert_array_equal(by_id.ids, by_code.ids)
    np.testing.assert_array_equal(by_id.distances, by_code.distances)
    index.remove([120])
    with pytest.raises(KeyError, match="120"):
        index.codes_of([120])


def test_int_id_saves_stay_version_1_and_string_ids_are_version_2(tmp_path):
    ints = SimHashIndex(64)
    ints.add(random_codes(3))
    ints.save(tmp_path / "ints")
    # what an older release reads: version 1, no keys file
    read_bundle(tmp_path / "ints", format_name=FORMAT_NAME, format_version=1)
    named = SimHashIndex(64)
    named.add(random_codes(3), ids=["a", "b", "c"])
    named.save(tmp_path / "named")
    newer = r"version 2, written by gpusimhash \S+, is newer than this release reads \(version 1\)"
    with pytest.raises(BundleError, match=newer):
        read_bundle(tmp_path / "named", format_name=FORMAT_NAME, format_version=1)
    assert SimHashIndex.load(tmp_path / "ints").ids().tolist() == [0, 1, 2]


def rewrite_keys(folder, change):
    """Alter the keys file and re-checksum the manifest, as a buggy writer would."""
    from gpusimhash.io import bundle

    manifest = json.loads((folder / "manifest.json").read_text())
    entry = manifest["files"]["keys"]
    path = folder / entry["file"]
    path.write_text(change(path.read_text()))
    entry["bytes"] = path.stat().st_size
    entry["sha256"] = bundle.sha256_file(path)
    body = {k: manifest[k] for k in ("format", "format_version", "files", "metadata")}
    manifest["manifest_sha256"] = bundle._self_checksum(body)
    (folder / "manifest.json").write_text(json.dumps(manifest))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda text: text[:-3], "not a key map"),
        (lambda text: text.replace('"b"', "[1]"), "ids must be str or int"),
        (lambda text: text.replace('"next": 3', '"next": 1'), r"internal ids must be ints in"),
        (lambda text: text.replace("[0, 1, 2]", "[0, 1, 1]"), "internal ids repeat"),
        (lambda text: text.replace('"a", ', "").replace("[0, ", "["), "names 2 entries"),
    ],
)
def test_a_bad_keys_file_is_named(tmp_path, change, message):
    named = SimHashIndex(64)
    named.add(random_codes(3), ids=["a", "b", "c"])
    named.save(tmp_path / "named")
    rewrite_keys(tmp_path / "named", change)
    with pytest.raises(BundleError, match=message) as error:
        SimHashIndex.load(tmp_path / "named")
    assert "keys." in str(error.value)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.one_of(st.text(max_size=6), st.integers(-5, 2**62)), unique=True, max_size=12))
def test_any_str_or_int_keys_round_trip(tmp_path_factory, keys):
    codes = random_codes(len(keys), seed=len(keys))
    index = SimHashIndex(64)
    if not any(isinstance(k, str) for k in keys):
        keys = [*keys, "s"]  # string ids need a string among the first
        codes = random_codes(len(keys), seed=len(keys))
    index.add(codes, ids=keys)
    folder = tmp_path_factory.mktemp("keys")
    index.save(folder)
    loaded = SimHashIndex.load(folder)
    assert loaded.ids().tolist() == keys
    got = loaded.search(codes, k=1)
    np.testing.assert_array_equal(got.distances[:, 0], np.zeros(len(keys)))
    assert all(
        hamming(codes[keys.index(found)], code)[0] == 0
        for found, code in zip(got.ids[:, 0], codes, strict=True)
    )

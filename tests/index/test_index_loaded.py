"""A saved index whose FAISS file, tombstones or manifest disagree is refused, naming the file.

Each index here is changed in memory and saved, so its checksums are those of the changed
files: what a buggy writer, or an edit with the checksums recomputed, leaves behind.
"""

import json

import faiss
import numpy as np
import pytest

from gpusimhash import SimHashIndex
from gpusimhash.io import bundle
from gpusimhash.io.bundle import BundleError

SMALL = {"flat": {}, "hnsw": {}, "ivf": {"nlist": 4, "nprobe": 4}, "multihash": {}}


def random_codes(n, seed=0):
    return np.random.default_rng(seed).integers(0, 256, (n, 8), dtype=np.uint8)


def built(kind, n=40):
    index = SimHashIndex(64, kind=kind, **SMALL[kind])
    index.add(random_codes(n))
    return index


def rewrite_manifest(folder, change):
    """Change a manifest's metadata and recompute its checksum."""
    path = folder / "manifest.json"
    manifest = json.loads(path.read_text())
    change(manifest["metadata"])
    body = {key: manifest[key] for key in ("format", "format_version", "files", "metadata")}
    manifest["manifest_sha256"] = bundle._self_checksum(body)
    path.write_text(json.dumps(manifest))


def refused(folder, match, file):
    with pytest.raises(BundleError, match=match) as error:
        SimHashIndex.load(folder)
    assert str(error.value).startswith(str(folder / file))


@pytest.mark.parametrize("kind", sorted(SMALL))
@pytest.mark.parametrize(
    ("ids", "match"),
    [
        (lambda n: np.zeros(n, np.int64), "holds the id 0 more than once"),
        (lambda n: -1 - np.arange(n, dtype=np.int64), "holds the negative id -40"),
    ],
)
def test_user_ids_that_repeat_or_are_negative_are_refused(tmp_path, kind, ids, match):
    index = built(kind)
    faiss.copy_array_to_vector(ids(len(index)), index.faiss_index.id_map)
    index.save(tmp_path / "idx")
    refused(tmp_path / "idx", match, "index.")


def test_ivf_lists_that_name_an_entry_twice_or_one_outside_are_refused(tmp_path):
    for name, value in (("twice", None), ("outside", 5_000_000_000)):
        index = built("ivf")
        lists = faiss.downcast_IndexBinary(index.faiss_index.index).invlists
        full = [k for k in range(lists.nlist) if lists.list_size(k) >= 2]
        ids = faiss.rev_swig_ptr(lists.get_ids(full[0]), lists.list_size(full[0]))
        ids[1] = ids[0] if value is None else value
        index.save(tmp_path / name)
        refused(tmp_path / name, "its inverted lists do not name", "index.")


def test_an_hnsw_neighbour_outside_the_graph_is_refused_by_faiss_naming_the_file(tmp_path):
    index = built("hnsw")
    hnsw = faiss.downcast_IndexBinary(index.faiss_index.index).hnsw
    neighbours = faiss.vector_to_array(hnsw.neighbors)
    neighbours[np.flatnonzero(neighbours >= 0)[0]] = 1000
    faiss.copy_array_to_vector(neighbours, hnsw.neighbors)
    index.save(tmp_path / "idx")
    refused(tmp_path / "idx", r"not a readable FAISS .* out of range \[-1, 40\)", "index.")


@pytest.mark.parametrize(
    ("kind", "tombstones", "match"),
    [
        ("flat", [3], "a flat index removes in place"),
        ("hnsw", [5, 5], "tombstones must ascend, each once"),
        ("hnsw", [7, 3], "tombstones must ascend, each once"),
        ("hnsw", [3, 400], "tombstone 400 is not an id of the index"),
        ("ivf", [-1], "tombstone -1 is not an id of the index"),
    ],
)
def test_tombstones_that_name_no_stored_entry_once_are_refused(tmp_path, kind, tombstones, match):
    index = built(kind)
    index._tombstones = np.array(tombstones, np.int64)
    index.save(tmp_path / "idx")
    refused(tmp_path / "idx", match, "tombstones.")


def test_more_tombstones_than_entries_are_refused_by_name(tmp_path):
    index = built("hnsw", n=3)
    index._tombstones = np.arange(5, dtype=np.int64)
    index.save(tmp_path / "idx")
    refused(tmp_path / "idx", "tombstone 3 is not an id of the index", "tombstones.")


@pytest.mark.parametrize(
    ("kind", "params", "match"),
    [
        ("ivf", {"nlist": 1, "nprobe": 1}, "built with nlist=4, the manifest says 1"),
        ("hnsw", {"m": 2, "ef_construction": 40, "ef_search": 64}, "built with m=32"),
        ("hnsw", {"m": 32, "ef_construction": 9, "ef_search": 64}, "ef_construction=40"),
        ("multihash", {"hash_bits": 8}, "built with 4 hash tables of 16 bits"),
    ],
)
def test_settings_the_faiss_file_was_not_built_with_are_refused(tmp_path, kind, params, match):
    built(kind).save(tmp_path / "idx")
    rewrite_manifest(tmp_path / "idx", lambda metadata: metadata.update(params=params))
    refused(tmp_path / "idx", match, "index.")


def test_search_settings_come_from_the_manifest(tmp_path):
    built("ivf").save(tmp_path / "idx")
    rewrite_manifest(tmp_path / "idx", lambda m: m["params"].update(nprobe=1))
    assert SimHashIndex.load(tmp_path / "idx").params["nprobe"] == 1


@pytest.mark.parametrize("name", ["ntotal", "n_tombstones"])
@pytest.mark.parametrize("value", ["40", 40.0, 0.5, True, -1, None])
def test_counts_that_are_not_integers_are_refused(tmp_path, name, value):
    built("hnsw").save(tmp_path / "idx")
    rewrite_manifest(tmp_path / "idx", lambda metadata: metadata.update({name: value}))
    refused(tmp_path / "idx", f"bad index metadata \\({name} must be an integer", "manifest.json")


def test_a_keys_file_with_more_slots_than_memory_is_refused_by_name(tmp_path):
    index = SimHashIndex(64)
    index.add(random_codes(3), ids=["a", "b", "c"])
    index.save(tmp_path / "idx")
    manifest = json.loads((tmp_path / "idx" / "manifest.json").read_text())
    entry = manifest["files"]["keys"]
    path = tmp_path / "idx" / entry["file"]
    path.write_text(path.read_text().replace('"next": 3', f'"next": {10**15}'))
    entry["bytes"] = path.stat().st_size
    entry["sha256"] = bundle.sha256_file(path)
    body = {key: manifest[key] for key in ("format", "format_version", "files", "metadata")}
    manifest["manifest_sha256"] = bundle._self_checksum(body)
    (tmp_path / "idx" / "manifest.json").write_text(json.dumps(manifest))
    refused(tmp_path / "idx", "more slots than the memory holds", "keys.")


@pytest.mark.parametrize("kind", sorted(SMALL))
def test_an_index_with_removals_and_string_ids_loads_as_saved(tmp_path, kind):
    index = SimHashIndex(64, kind=kind, **SMALL[kind])
    keys = [f"doc-{n}" for n in range(40)]
    index.add(random_codes(40), ids=keys)
    index.remove(keys[::3])
    index.save(tmp_path / "idx")
    loaded = SimHashIndex.load(tmp_path / "idx")
    assert loaded.ids().tolist() == index.ids().tolist()
    assert loaded.n_tombstones == index.n_tombstones
    queries = random_codes(5, seed=1)
    assert loaded.search(queries, k=4).ids.tolist() == index.search(queries, k=4).ids.tolist()

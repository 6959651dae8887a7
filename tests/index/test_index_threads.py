"""SimHashIndex shared between threads, huge requests, bad parameters, tampered folders."""

import hashlib
import json
import resource
import signal
import subprocess
import sys
import threading

import numpy as np
import pytest

from gpusimhash import SimHashIndex
from gpusimhash.io.bundle import BundleError


def test_multihash_range_search_is_exact_from_many_threads():
    rng = np.random.default_rng(1)
    base = rng.integers(0, 256, (20_000, 8), dtype=np.uint8)
    queries = base[:200].copy()
    queries[:, [0, 3, 5, 7]] ^= np.array([1, 2, 4, 8], dtype=np.uint8)  # 4 flips, one per block
    index = SimHashIndex(64, kind="multihash")
    index.add(base)
    radii = (2, 11)
    want = {r: index.range_search(queries, max_distance=r) for r in radii}
    wrong = []

    def work(k):
        for j in range(12):
            r = radii[(k + j) % 2]
            found = index.range_search(queries, max_distance=r)
            if not np.array_equal(found.ids, want[r].ids):
                wrong.append(r)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert wrong == []


SEARCH_WHILE_ADDING = """
import sys, threading
import numpy as np
from gpusimhash import SimHashIndex
kind = sys.argv[1]
rng = np.random.default_rng(0)
codes = rng.integers(0, 256, (30_000, 8), dtype=np.uint8)
index = SimHashIndex(64, kind=kind, **({"m": 8} if kind == "hnsw" else {}))
index.add(codes[:1000])
done = threading.Event()
counts = []
def search():
    while not done.is_set():
        result = index.search(codes[:50], k=5)
        assert ((result.ids >= 0) & (result.ids < 30_000)).all()
        if kind != "hnsw":  # exact kinds find each stored code itself
            assert (result.ids[:, 0] == np.arange(50)).all()
        counts.append(len(index.range_search(codes[:20], max_distance=0).ids))
def add():
    for start in range(1000, 30_000, 1000):
        index.add(codes[start : start + 1000])
        index.remove([start])
    done.set()
threads = [threading.Thread(target=search) for _ in range(3)] + [threading.Thread(target=add)]
[t.start() for t in threads]
[t.join() for t in threads]
print(len(index), min(counts) >= 20)
"""


@pytest.mark.parametrize("kind", ["hnsw", "multihash", "flat"])
def test_searching_while_another_thread_adds(kind):
    done = subprocess.run(
        [sys.executable, "-c", SEARCH_WHILE_ADDING, kind],
        capture_output=True,
        check=False,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["29971", "True"]


def test_a_result_that_cannot_fit_is_refused_before_allocating():
    index = SimHashIndex(64)
    index.add(np.zeros((3, 8), np.uint8))
    with pytest.raises(ValueError, match=r"k=1000000000000 for 1 queries needs about"):
        index.search(np.zeros((1, 8), np.uint8), k=10**12)
    assert index.search(np.zeros((1, 8), np.uint8), k=5).ids.tolist() == [[0, 1, 2, -1, -1]]


@pytest.mark.parametrize(
    ("kind", "params", "match"),
    [
        ("hnsw", {"m": 2**31}, r"m must be in \[1, 1024\], got 2147483648"),
        ("ivf", {"nlist": 2**40}, r"nlist must be in \[1, 1048576\]"),
        # a heap of 2**31 entries per query thread aborted the process in FAISS
        ("hnsw", {"ef_search": 2**31 - 1}, r"ef_search must be in \[1, 1048576\]"),
    ],
)
def test_parameters_beyond_what_faiss_takes_are_value_errors(kind, params, match):
    with pytest.raises(ValueError, match=match):
        SimHashIndex(64, kind=kind, **params)


def resign(folder, edit):
    path = folder / "manifest.json"
    manifest = json.loads(path.read_text())
    edit(manifest)
    body = {k: manifest[k] for k in ("format", "format_version", "files", "metadata")}
    digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
    manifest["manifest_sha256"] = digest
    path.write_text(json.dumps(manifest))


def claim_many_tombstones(manifest, folder):
    entry = manifest["files"]["tombstones"]
    path = folder / entry["file"]
    data = path.read_bytes().replace(b"(0,)", b"(100000000000,)")
    path.write_bytes(data)
    entry.update(bytes=len(data), sha256=hashlib.sha256(data).hexdigest())
    manifest["metadata"]["n_tombstones"] = 10**11


@pytest.mark.parametrize(
    "edit",
    [
        pytest.param(claim_many_tombstones, id="npy-header-1e11"),
        pytest.param(lambda m, f: m["metadata"]["params"].update(nlist=2**40), id="nlist"),
        pytest.param(lambda m, f: m["metadata"].update(params=[1]), id="params-list"),
        pytest.param(lambda m, f: m["metadata"].update(ntotal=1e400), id="ntotal-inf"),
        pytest.param(lambda m, f: m["files"].pop("tombstones"), id="no-tombstones"),
        pytest.param(
            lambda m, f: m["metadata"]["featurizer"].update(
                document_frequencies={"n_docs": 1, "states": [-1], "df": [1]}
            ),
            id="featurizer-state",
        ),
    ],
)
def test_tampered_index_folders_are_bundle_errors(tmp_path, edit):
    index = SimHashIndex(64, kind="ivf", nlist=4, nprobe=4)
    index.add(np.random.default_rng(0).integers(0, 256, (50, 8), dtype=np.uint8))
    index.save(tmp_path)
    resign(tmp_path, lambda manifest: edit(manifest, tmp_path))
    with pytest.raises(BundleError):
        SimHashIndex.load(tmp_path)


def test_a_full_disk_during_save_is_an_os_error(tmp_path):
    index = SimHashIndex(64)
    index.add(np.random.default_rng(0).integers(0, 256, (20_000, 8), dtype=np.uint8))
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    previous = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (50_000, hard))
    try:
        with pytest.raises(OSError, match="File too large"):
            index.save(tmp_path / "idx")
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, previous)
    assert not (tmp_path / "idx" / "manifest.json").exists()


def test_loads_during_saves_see_the_old_or_the_new_index(tmp_path):
    rng = np.random.default_rng(2)
    index = SimHashIndex(64, kind="multihash")
    index.add(rng.integers(0, 256, (5000, 8), dtype=np.uint8))
    index.save(tmp_path)
    sizes, errors = [], []
    done = threading.Event()

    def save():
        for _ in range(15):
            index.add(rng.integers(0, 256, (100, 8), dtype=np.uint8))
            index.save(tmp_path)
        done.set()

    def load():
        while not done.is_set():
            try:
                sizes.append(len(SimHashIndex.load(tmp_path)))
            except (OSError, ValueError) as error:
                errors.append(error)

    threads = [threading.Thread(target=save), threading.Thread(target=load)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert sizes
    assert set(sizes) <= set(range(5000, 6501, 100))


@pytest.mark.slow
def test_string_ids_under_concurrent_searches_and_changes():
    from gpusimhash import hamming

    rng = np.random.default_rng(5)
    codes = rng.integers(0, 256, (4_000, 8), dtype=np.uint8)
    index = SimHashIndex(64, kind="multihash")
    index.add(codes[:2_000], ids=[f"k{n}" for n in range(2_000)])
    stop = threading.Event()
    wrong, searches = [], []

    def search():
        while not stop.is_set():
            found = index.search(codes[:300], k=3)
            keys, distances = found.ids.ravel(), found.distances.ravel()
            rows = np.array([-1 if k is None else int(k[1:]) for k in keys])
            queries = np.repeat(np.arange(300), 3)
            got = rows >= 0
            # a key names the row whose code lies at the distance reported: ids map right
            real = hamming(codes[rows[got]], codes[queries[got]])
            if not np.array_equal(real, distances[got]):
                wrong.append(1)
            searches.append(1)

    threads = [threading.Thread(target=search) for _ in range(4)]
    for thread in threads:
        thread.start()
    for start in range(2_000, 4_000, 100):
        index.add(codes[start : start + 100], ids=[f"k{n}" for n in range(start, start + 100)])
        index.remove([f"k{n}" for n in range(start - 2_000, start - 1_900)])
        index.search(codes[:1], k=1)  # let the searching threads in between changes
    stop.set()
    for thread in threads:
        thread.join()
    assert wrong == []
    assert len(searches) >= 4
    assert index.ids().tolist() == [f"k{n}" for n in range(2_000, 4_000)]

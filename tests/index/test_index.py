import numpy as np
import pytest

from gpusimhash import SimHashIndex, TextFeaturizer, fingerprint, hamming_matrix

KIND_PARAMS = {
    "flat": {},
    "multihash": {},
    "hnsw": {"m": 16, "ef_search": 128},
    "ivf": {"nlist": 16, "nprobe": 16},  # nprobe == nlist: exhaustive, so exact
}


def clustered(rng, n, width=8, n_centres=20, flip_rate=0.04):
    centres = rng.integers(0, 256, (n_centres, width), dtype=np.uint8)
    codes = centres[rng.integers(0, n_centres, n)]
    flips = rng.random((n, width * 8)) < flip_rate
    return codes ^ np.packbits(flips, axis=1, bitorder="little")


def build(kind, codes, ids=None, **extra):
    index = SimHashIndex(codes.shape[1] * 8, kind=kind, **{**KIND_PARAMS[kind], **extra})
    index.add(codes, ids)
    return index


def check_knn_exact(result, codes, queries, ids, k):
    distances = hamming_matrix(queries, codes)
    expected = np.sort(distances, axis=1)[:, :k]
    np.testing.assert_array_equal(result.distances, expected)
    for q in range(len(queries)):
        # ids as sets within each distance, except the last (ties cut by k)
        for d in np.unique(expected[q])[:-1]:
            assert set(result.ids[q][result.distances[q] == d]) == set(ids[distances[q] == d])
        assert (distances[q][np.searchsorted(ids, result.ids[q])] == result.distances[q]).all()


@pytest.mark.parametrize("kind", ["flat", "multihash", "ivf"])
def test_knn_exact(kind):
    rng = np.random.default_rng(0)
    codes = clustered(rng, 600)
    ids = np.arange(600, dtype=np.int64) * 3 + 7
    index = build(kind, codes, ids)
    queries = clustered(rng, 25)
    result = index.search(queries, k=10)
    assert result.distances.dtype == np.int32
    assert result.ids.dtype == np.int64
    assert result.distances.shape == result.ids.shape == (25, 10)
    check_knn_exact(result, codes, queries, ids, 10)
    np.testing.assert_allclose(result.estimated_cosines, np.cos(np.pi * result.distances / 64))


def test_hnsw_recall_is_high_and_results_consistent():
    rng = np.random.default_rng(1)
    codes = clustered(rng, 2000, n_centres=200)
    index = build("hnsw", codes)
    queries = codes[:100]
    result = index.search(queries, k=5)
    exact = np.sort(hamming_matrix(queries, codes), axis=1)[:, :5]
    recall = np.mean(result.distances == exact)
    assert recall >= 0.95
    # every reported distance is the true distance of the reported id
    true = hamming_matrix(queries, codes)[np.arange(100)[:, None], result.ids]
    np.testing.assert_array_equal(true, result.distances)
    assert (np.diff(result.distances, axis=1) >= 0).all()


@pytest.mark.parametrize("kind", ["flat", "multihash", "hnsw", "ivf"])
@pytest.mark.parametrize("radius", [0, 3, 6, 12])
def test_range_search_exact(kind, radius):
    rng = np.random.default_rng(radius)
    codes = clustered(rng, 500)
    ids = np.arange(500, dtype=np.int64) + 1000
    index = build(kind, codes, ids)
    queries = clustered(rng, 20)
    result = index.range_search(queries, max_distance=radius)
    distances = hamming_matrix(queries, codes)
    for q in range(20):
        part = slice(result.lims[q], result.lims[q + 1])
        expected = np.flatnonzero(distances[q] <= radius)
        assert sorted(result.ids[part].tolist()) == sorted(ids[expected].tolist())
        np.testing.assert_array_equal(result.distances[part], distances[q][result.ids[part] - 1000])
        assert (np.diff(result.distances[part]) >= 0).all()


def test_range_search_min_cosine_equals_radius():
    rng = np.random.default_rng(2)
    codes = clustered(rng, 300)
    index = build("flat", codes)
    by_cosine = index.range_search(codes[:10], min_cosine=0.9)
    by_radius = index.range_search(codes[:10], max_distance=9)  # floor(64 acos(0.9) / pi)
    for a, b in zip(by_cosine, by_radius, strict=True):
        np.testing.assert_array_equal(a, b)
    assert (by_cosine.estimated_cosines >= 0.9).all()


def test_text_and_documents_use_stored_settings():
    featurizer = TextFeaturizer(analyzer="char", ngram=3)
    index = SimHashIndex(128, seed=7, featurizer=featurizer)
    texts = [
        "red apples and green pears",
        "a completely different sentence",
        "red apples & green pears",
    ]
    index.add(texts)
    expected = fingerprint(texts, bits=128, seed=7, featurizer=featurizer)
    np.testing.assert_array_equal(index.to_codes(texts), expected)
    result = index.search(["red apples and green pears"], k=3)
    assert result.ids[0, 0] == 0
    assert result.distances[0, 0] == 0
    docs = [{"red": 1.0, "apples": 2.0}]
    np.testing.assert_array_equal(index.to_codes(docs), fingerprint(docs, bits=128, seed=7))


@pytest.mark.parametrize("kind", ["flat", "multihash", "hnsw", "ivf"])
def test_ids_survive_add_remove_compact(kind):
    rng = np.random.default_rng(3)
    codes = clustered(rng, 400)
    index = build(kind, codes[:300])
    np.testing.assert_array_equal(index.ids(), np.arange(300))
    new_ids = index.add(codes[300:])
    np.testing.assert_array_equal(new_ids, np.arange(300, 400))
    removed = np.arange(0, 400, 3)
    assert index.remove(np.concatenate([removed, [10_000]])) == removed.size
    assert index.remove(removed) == 0
    live = np.setdiff1d(np.arange(400), removed)
    assert len(index) == live.size
    np.testing.assert_array_equal(np.sort(index.ids()), live)
    result = index.search(codes[removed[:20]], k=5)
    assert not np.isin(result.ids, removed).any()
    in_range = index.range_search(codes[:50], max_distance=64)
    assert not np.isin(in_range.ids, removed).any()
    assert np.isin(in_range.ids, live).all()
    assert in_range.lims[1] == live.size
    if kind != "flat":
        assert index.n_tombstones == removed.size
        with pytest.raises(ValueError, match="tombstoned"):
            index.add(codes[:1], ids=[0])
        index.compact()
        assert index.n_tombstones == 0
        assert index.faiss_index.ntotal == live.size
    np.testing.assert_array_equal(np.sort(index.ids()), live)
    result = index.search(codes[live[:10]], k=1)
    np.testing.assert_array_equal(result.distances[:, 0], 0)
    index.add(codes[:1], ids=[0])
    assert 0 in index.ids()


def test_search_pads_missing_results():
    index = SimHashIndex(64)
    index.add(np.zeros((2, 8), np.uint8), ids=[5, 6])
    result = index.search(np.zeros((1, 8), np.uint8), k=4)
    assert result.ids.tolist() == [[5, 6, -1, -1]]
    assert result.distances.tolist() == [[0, 0, -1, -1]]
    assert np.isnan(result.estimated_cosines[0, 2:]).all()
    empty = SimHashIndex(64).search(np.zeros((3, 8), np.uint8), k=2)
    assert (empty.ids == -1).all()
    assert empty.ids.shape == (3, 2)


def test_faiss_index_is_read_only_attribute():
    index = SimHashIndex(64)
    with pytest.raises(AttributeError):
        index.faiss_index = None


def test_bad_input():
    index = SimHashIndex(64)
    with pytest.raises(TypeError, match="uint8"):
        index.add(np.zeros((2, 1), np.uint64))
    with pytest.raises(ValueError, match="8 bytes"):
        index.add(np.zeros((2, 16), np.uint8))
    with pytest.raises(ValueError, match="8 bytes"):
        index.search(np.zeros((2, 4), np.uint8))
    index.add(np.zeros((2, 8), np.uint8), ids=[1, 2])
    with pytest.raises(ValueError, match="already"):
        index.add(np.zeros((1, 8), np.uint8), ids=[2])
    with pytest.raises(ValueError, match="unique"):
        index.add(np.zeros((2, 8), np.uint8), ids=[3, 3])
    with pytest.raises(ValueError, match="shape"):
        index.add(np.zeros((2, 8), np.uint8), ids=[3])
    with pytest.raises(TypeError, match="integers"):
        index.add(np.zeros((1, 8), np.uint8), ids=[1.5])
    with pytest.raises(ValueError, match="kind"):
        SimHashIndex(64, kind="lsh")
    with pytest.raises(ValueError, match="unknown parameter"):
        SimHashIndex(64, kind="flat", nlist=4)
    with pytest.raises(ValueError, match="k"):
        index.search(np.zeros((1, 8), np.uint8), k=0)
    with pytest.raises(ValueError, match="exactly one"):
        index.range_search(np.zeros((1, 8), np.uint8))
    with pytest.raises(ValueError, match="nlist"):
        SimHashIndex(64, kind="ivf", nlist=64).add(np.zeros((10, 8), np.uint8))


def test_too_few_codes_for_nlist_are_named_with_nlist_even_at_the_wrong_width():
    from gpusimhash import fingerprint

    codes = fingerprint([f"document {i}" for i in range(8)])  # 64 bits, the default
    index = SimHashIndex(kind="ivf", nlist=16)  # 128 bits, the default
    with pytest.raises(ValueError, match="nlist=16") as error:
        index.add(codes)
    assert str(error.value) == (
        "data must have 16 bytes per code (128 bits), got 8 (codes of 64 bits need an index "
        "made with bits=64); and an IVF index with nlist=16 is trained on its first batch, which "
        "needs at least 16 codes, got 8 (a smaller nlist trains on fewer)"
    )
    with pytest.raises(ValueError, match=r"^an IVF index with nlist=16 .* got 8 \(a smaller"):
        SimHashIndex(64, kind="ivf", nlist=16).add(codes)
    with pytest.raises(ValueError, match=r"^an IVF index with nlist=16 .* got 3 "):
        SimHashIndex(kind="ivf", nlist=16).add(["a", "b", "c"])
    trained = SimHashIndex(kind="ivf", nlist=2, nprobe=2)
    trained.add(fingerprint(["a b", "c d", "e f"], bits=128))
    with pytest.raises(ValueError, match=r"got 8 \(codes of 64 bits need .* bits=64\)$"):
        trained.add(codes)  # trained: no word of nlist

"""The CUDA kernel source, run on the CPU through g++ (tests/cuda_emu), against the NumPy path.

The same ``gpusimhash._gpu.Engine`` that drives CuPy on a GPU drives here NumPy arrays and the
emulated kernels, so these tests cover the kernels' logic and the GPU orchestration together.
Every comparison is exact.
"""

from __future__ import annotations

import numpy as np
import pytest
from cuda_emu import emulator
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusimhash import _validate
from gpusimhash._cpu._fingerprint import fingerprint_batch as cpu_fingerprint_batch
from gpusimhash._gpu import kernels
from gpusimhash._gpu.engine import encode_texts, size_classes, split_documents
from gpusimhash.features import FeatureBatch
from gpusimhash.text import TextFeaturizer

BITS = (8, 24, 40, 64, 128, 256)
# (task_size, threads_per_block, max_blocks): split documents and grid-stride loops, or neither
LAYOUTS = ((3, 32, 3), (1024, 64, 1), (1, 8, 2))


@pytest.fixture(params=LAYOUTS, ids=lambda layout: "task{}-tpb{}-grid{}".format(*layout))
def engine(request, emulated_kernels):
    task_size, threads, blocks = request.param
    return emulator.engine(
        emulated_kernels, task_size=task_size, threads_per_block=threads, max_blocks=blocks
    )


def _random_batch(rng, n_docs, max_len, weights):
    lengths = rng.integers(0, max_len + 1, n_docs)
    offsets = np.zeros(n_docs + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    # a small vocabulary makes repeated features inside documents common
    states = rng.integers(0, 50, offsets[-1]).astype(np.uint32) * np.uint32(2654435761)
    if weights == "none":
        values = None
    elif weights == "normal":
        values = rng.normal(size=offsets[-1])
    elif weights == "counts":
        values = rng.integers(-3, 10, offsets[-1]).astype(np.float64)
    else:  # magnitudes across the whole double range, zeros and subnormals included
        exponents = rng.integers(-1070, 1020, offsets[-1])
        values = np.ldexp(rng.uniform(-1, 1, offsets[-1]), exponents)
        values[rng.random(offsets[-1]) < 0.1] = 0.0
    return FeatureBatch(states, offsets, values)


def _gpu_codes(engine, batch, bits, seed):
    plan = engine.plan_tasks(batch.offsets)
    return engine.accumulate(batch.states, batch.offsets, batch.weights, plan, bits=bits, seed=seed)


@pytest.mark.parametrize("n_docs", [0, 1, 255, 257])
@pytest.mark.parametrize("weights", ["none", "normal", "counts", "extreme"])
def test_accumulate_matches_numpy(engine, n_docs, weights):
    rng = np.random.default_rng(n_docs)
    batch = _random_batch(rng, n_docs, 12, weights)
    for bits in BITS:
        expected = cpu_fingerprint_batch(batch, bits=bits, seed=12345)
        np.testing.assert_array_equal(_gpu_codes(engine, batch, bits, 12345), expected)


@pytest.mark.parametrize("bits", [8, 1000, 4096])
def test_accumulate_long_documents_and_every_width(engine, bits):
    rng = np.random.default_rng(bits)
    batch = _random_batch(rng, 5, 300, "normal")
    for seed in (0, 9, 2**32 - 1):
        expected = cpu_fingerprint_batch(batch, bits=bits, seed=seed)
        np.testing.assert_array_equal(_gpu_codes(engine, batch, bits, seed), expected)


def test_accumulate_ties_and_zero_weights_give_zero_bits(engine):
    states = np.array([5, 5, 7], dtype=np.uint32)
    offsets = np.array([0, 2, 3, 3], dtype=np.int64)
    weights = np.array([1.5, -1.5, 0.0])  # cancelling pair, a zero weight, an empty document
    codes = _gpu_codes(engine, FeatureBatch(states, offsets, weights), 64, 1)
    np.testing.assert_array_equal(codes, np.zeros((3, 8), dtype=np.uint8))


@settings(max_examples=40, deadline=None)
@given(
    lengths=st.lists(st.integers(0, 9), max_size=12),
    data=st.data(),
    bits=st.sampled_from(BITS),
    seed=st.integers(0, 2**32 - 1),
)
def test_accumulate_property(emulated_kernels, lengths, data, bits, seed):
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    nnz = int(offsets[-1])
    states = np.array(
        data.draw(st.lists(st.integers(0, 2**32 - 1), min_size=nnz, max_size=nnz)), dtype=np.uint32
    )
    finite = st.floats(allow_nan=False, allow_infinity=False)
    weights = data.draw(st.none() | st.lists(finite, min_size=nnz, max_size=nnz))
    batch = FeatureBatch(states, offsets, None if weights is None else np.array(weights))
    engine = emulator.engine(emulated_kernels, task_size=4)
    expected = cpu_fingerprint_batch(batch, bits=bits, seed=seed)
    np.testing.assert_array_equal(_gpu_codes(engine, batch, bits, seed), expected)


TEXTS = [
    "The cat sat on the MAT",
    "",
    "  ,, ",
    "ÄÖÜ straße İstanbul ΣΑΣ 𝐀𝐁c 😀 x_y",
    "one",
    "a b",
    "İİ",
    "Ab  ab",
    "a\ud800b",
    "\n\nhi\n",
    "x" * 300,
    " ".join(["w"] * 200),
]


def _featurizers():
    for analyzer in ("word", "char"):
        for ngram in (1, 2, 3, 5):
            for weighting in ("count", "binary", "logtf", "tfidf"):
                for lowercase in (True, False):
                    yield TextFeaturizer(analyzer, ngram, weighting, lowercase=lowercase)


def _fitted(featurizer, corpus):
    return featurizer.fit(corpus) if featurizer.weighting == "tfidf" else featurizer


def _longest(texts):
    """The most code points of one document, its newline included (text_batch's bound)."""
    return max((len(t) for t in texts), default=0) + 1


def _assert_text_parity(engine, texts, featurizer, bits=64, seed=7):
    expected_batch = featurizer.transform(texts)
    code_points, doc_starts = encode_texts(texts)
    longest = _longest(texts)
    states, offsets, weights = engine.text_batch(
        code_points, doc_starts, featurizer, longest=longest
    )
    # sized by the code points (no round trip for the total): the features come first
    assert states.size == code_points.size
    nnz = int(offsets[-1])
    np.testing.assert_array_equal(states[:nnz], expected_batch.states)
    np.testing.assert_array_equal(offsets, expected_batch.offsets)
    if weights is None:  # count (weights None) and binary (all ones) on the CPU
        assert expected_batch.weights is None or (expected_batch.weights == 1.0).all()
    else:
        np.testing.assert_array_equal(weights[:nnz], expected_batch.entry_weights())
    plan = engine.plan_tasks(offsets, capacity=states.size)  # padded, as the pipeline plans
    largest = min(engine.task_size, longest)
    codes = engine.accumulate(
        states, offsets, weights, plan, bits=bits, seed=seed, largest_task=largest
    )
    np.testing.assert_array_equal(
        codes, cpu_fingerprint_batch(expected_batch, bits=bits, seed=seed)
    )


@pytest.mark.parametrize("featurizer", list(_featurizers()), ids=repr)
def test_text_on_device_matches_featurizer(emulated_kernels, featurizer):
    engine = emulator.engine(emulated_kernels, task_size=16)
    featurizer = _fitted(featurizer, TEXTS[:6] + ["the cat", "mat", "unseen words only"])
    _assert_text_parity(engine, TEXTS, featurizer)


def test_text_edge_batches(emulated_kernels):
    engine = emulator.engine(emulated_kernels, task_size=16)
    for texts in ([], [""], ["", ""], [" "], ["a"], ["😀"], ["Σ" * 5000]):
        for featurizer in (TextFeaturizer(), TextFeaturizer("char", 4, "logtf")):
            _assert_text_parity(engine, texts, featurizer, bits=128, seed=3)


ALPHABET = st.sampled_from(
    list("aAbB zZ_9.,\n\t-")
    + ["é", "É", "İ", "ß", "Σ", "ς", "日", "𝐀", "😀", "\u00a0", "\u2028", "\ud800", "\x00"]
)


@settings(max_examples=40, deadline=None)
@given(
    texts=st.lists(st.text(alphabet=ALPHABET, max_size=30), max_size=8),
    analyzer=st.sampled_from(["word", "char"]),
    ngram=st.integers(1, 4),
    weighting=st.sampled_from(["count", "binary", "logtf", "tfidf"]),
    lowercase=st.booleans(),
)
def test_text_property(emulated_kernels, texts, analyzer, ngram, weighting, lowercase):
    engine = emulator.engine(emulated_kernels, task_size=5)
    featurizer = _fitted(TextFeaturizer(analyzer, ngram, weighting, lowercase=lowercase), texts[:3])
    _assert_text_parity(engine, texts, featurizer, bits=40, seed=11)


class _NoSizeFromData:
    """NumPy without the functions whose output size depends on the data.

    On CuPy each of them reads a size back from the device (a host round trip); the text path
    must not call them.
    """

    FORBIDDEN = frozenset(
        {"flatnonzero", "nonzero", "argwhere", "unique", "repeat", "compress", "extract"}
    )

    def __getattr__(self, name):
        if name in self.FORBIDDEN:
            raise AssertionError(f"xp.{name} sizes its output from the data (a round trip)")
        return getattr(np, name)


@pytest.mark.parametrize("analyzer", ["word", "char"])
@pytest.mark.parametrize("weighting", ["count", "binary", "logtf", "tfidf"])
def test_text_to_codes_takes_sizes_from_bounds(emulated_kernels, analyzer, weighting):
    """Featurizing and the padded plan size everything from host bounds, never from the data."""
    engine = emulator.engine(emulated_kernels, task_size=3)
    engine.xp = _NoSizeFromData()
    featurizer = _fitted(TextFeaturizer(analyzer, 2, weighting), TEXTS[:4])
    _assert_text_parity(engine, TEXTS, featurizer, bits=128, seed=5)
    with pytest.raises(AssertionError, match="flatnonzero"):
        engine.plan_tasks(np.array([0, 5, 5], np.int64))  # the exact plan does


@pytest.mark.parametrize("weights", ["none", "normal"])
@pytest.mark.parametrize("spare", [0, 1, 7, 100])
def test_a_padded_plan_gives_the_exact_plans_codes(engine, weights, spare):
    """Task lists sized from a bound (padding: document -1) give the same codes."""
    batch = _random_batch(np.random.default_rng(spare), 30, 9, weights)
    plan = engine.plan_tasks(batch.offsets, capacity=int(batch.offsets[-1]) + spare)
    exact = engine.plan_tasks(batch.offsets)
    real = plan["task_docs"] >= 0
    np.testing.assert_array_equal(plan["task_docs"][real], exact["task_docs"])
    np.testing.assert_array_equal(plan["task_starts"][real], exact["task_starts"])
    np.testing.assert_array_equal(plan["partial_rows"], exact["partial_rows"])
    split = plan["split_docs"] >= 0
    np.testing.assert_array_equal(plan["split_docs"][split], exact["split_docs"])
    assert (plan["task_docs"][~real] == -1).all()
    assert not real[real.argmin() :].any() or real.all()  # padding only at the end
    for bits in (24, 256):
        codes = engine.accumulate(
            batch.states, batch.offsets, batch.weights, plan, bits=bits, seed=4
        )
        np.testing.assert_array_equal(codes, cpu_fingerprint_batch(batch, bits=bits, seed=4))


def test_a_padded_plan_of_no_documents_is_empty(engine):
    plan = engine.plan_tasks(np.zeros(1, np.int64), capacity=10)
    assert all(plan[key].size == 0 for key in ("task_docs", "task_starts", "split_docs"))
    assert plan["class_ends"].tolist() == [0] * len(kernels.UNIT_KERNELS)
    codes = engine.accumulate(
        np.zeros(0, np.uint32), np.zeros(1, np.int64), None, plan, bits=64, seed=0
    )
    assert codes.shape == (0, 8)


def test_split_documents_covers_every_document_once():
    sizes = np.array([5, 0, 3, 50, 1, 1, 1, 0], dtype=np.int64)
    ranges = list(split_documents(sizes, 6))
    assert ranges == [(0, 2), (2, 3), (3, 4), (4, 8)]
    assert list(split_documents(np.zeros(0, dtype=np.int64), 6)) == []


def test_batches_split_by_budget_give_the_same_codes(emulated_kernels):
    engine = emulator.engine(emulated_kernels, task_size=4)
    batch = _random_batch(np.random.default_rng(5), 40, 10, "normal")
    pieces = []
    for start, stop in split_documents(np.diff(batch.offsets), 25):
        first, last = batch.offsets[start], batch.offsets[stop]
        local = batch.offsets[start : stop + 1] - first
        pieces.append(
            engine.accumulate(
                batch.states[first:last],
                local,
                batch.weights[first:last],
                engine.plan_tasks(local),
                bits=64,
                seed=2,
            )
        )
    np.testing.assert_array_equal(
        np.concatenate(pieces), cpu_fingerprint_batch(batch, bits=64, seed=2)
    )


def test_encode_texts_names_the_bad_document():
    with pytest.raises(TypeError, match="document 12"):
        encode_texts(["a", b"b"], first_index=11)


def test_check_device_batch_errors():
    states = np.zeros(3, dtype=np.uint32)
    good = np.array([0, 1, 3], dtype=np.int64)
    with pytest.raises(TypeError, match="states"):
        _validate.device_batch(np, FeatureBatch(states.astype(np.int64), good, None))
    with pytest.raises(ValueError, match="offsets must run"):
        _validate.device_batch(np, FeatureBatch(states, np.array([0, 1, 2], np.int64), None))
    with pytest.raises(ValueError, match="non-decreasing"):
        _validate.device_batch(np, FeatureBatch(states, np.array([0, 2, 1, 3], np.int64), None))
    with pytest.raises(ValueError, match="finite"):
        _validate.device_batch(np, FeatureBatch(states, good, np.array([1.0, np.nan, 2.0])))
    with pytest.raises(ValueError, match="weights must have shape"):
        _validate.device_batch(np, FeatureBatch(states, good, np.ones(2)))


def test_tfidf_before_fit_raises_the_featurizers_error(emulated_kernels):
    engine = emulator.engine(emulated_kernels, task_size=4)
    code_points, doc_starts = encode_texts(["a b"])
    with pytest.raises(ValueError, match="fit"):
        engine.text_batch(code_points, doc_starts, TextFeaturizer(weighting="tfidf"), longest=4)


def test_unit_weight_counters_hold_the_largest_task(emulated_kernels):
    """Bit-sliced counters at their limit: a task of 2**11 - 1 entries, one feature repeated."""
    source = kernels.kernel_source("simhash.cu")
    assert f"#define GSH_COUNT_PLANES {kernels.COUNT_PLANES}\n" in source
    largest = 2**kernels.COUNT_PLANES - 1
    engine = emulator.engine(emulated_kernels, task_size=largest)
    states = np.concatenate(
        [
            np.full(largest, 7, np.uint32),  # every slot counts 2047 ones or none
            np.full(largest - 1, 7, np.uint32),
            np.array([99], np.uint32),
            np.arange(largest, dtype=np.uint32),  # a long document of distinct features
        ]
    )
    offsets = np.array([0, largest, 2 * largest, 3 * largest], np.int64)
    batch = FeatureBatch(states, offsets, None)
    for bits in (32, 96):
        expected = cpu_fingerprint_batch(batch, bits=bits, seed=3)
        np.testing.assert_array_equal(_gpu_codes(engine, batch, bits, 3), expected)
    with pytest.raises(ValueError, match="task_size"):
        emulator.engine(emulated_kernels, task_size=largest + 1)


@pytest.mark.parametrize("bits", [8, 40, 128, 256, 288, 1000])
def test_every_size_class_matches_numpy(emulated_kernels, bits):
    """Tasks of every size class, each counted by its own unit kernel, split documents too."""
    engine = emulator.engine(emulated_kernels, task_size=300, threads_per_block=32, max_blocks=2)
    rng = np.random.default_rng(bits)
    lengths = np.concatenate([rng.integers(0, 16, 20), rng.integers(16, 256, 8), [300, 700]])
    offsets = np.zeros(lengths.size + 1, dtype=np.int64)
    np.cumsum(rng.permutation(lengths), out=offsets[1:])
    states = rng.integers(0, 60, offsets[-1]).astype(np.uint32) * np.uint32(2654435761)
    batch = FeatureBatch(states, offsets, None)
    plan = engine.plan_tasks(batch.offsets)
    entries = np.minimum(batch.offsets[plan["task_docs"] + 1] - plan["task_starts"], 300)
    bounds = [0, *plan["class_ends"].tolist()]
    for size_class, (planes, _) in enumerate(kernels.UNIT_KERNELS):
        members = entries[bounds[size_class] : bounds[size_class + 1]]
        assert members.size  # every class has tasks
        assert (members < 2**planes).all()
        assert size_class == 0 or (members >= 2 ** kernels.UNIT_KERNELS[size_class - 1][0]).all()
    codes = engine.accumulate(batch.states, batch.offsets, None, plan, bits=bits, seed=77)
    np.testing.assert_array_equal(codes, cpu_fingerprint_batch(batch, bits=bits, seed=77))
    launched = [name for name in engine.launch.launched if name.startswith("simhash_acc")]
    assert launched == [f"simhash_accumulate_unit<{p}, {g}>" for p, g in kernels.UNIT_KERNELS]


def test_size_classes_launch_only_what_the_largest_task_needs(emulated_kernels):
    engine = emulator.engine(emulated_kernels, task_size=64)
    batch = _random_batch(np.random.default_rng(3), 30, 12, "none")
    codes = engine.accumulate(
        batch.states,
        batch.offsets,
        None,
        engine.plan_tasks(batch.offsets),
        bits=64,
        seed=1,
        largest_task=12,
    )
    np.testing.assert_array_equal(codes, cpu_fingerprint_batch(batch, bits=64, seed=1))
    assert engine.launch.launched == ["simhash_accumulate_unit<4, 8>"]
    assert size_classes(15) == 1
    assert size_classes(2**kernels.COUNT_PLANES - 1) == len(kernels.UNIT_KERNELS)
    with pytest.raises(ValueError, match="planes"):
        size_classes(2**kernels.COUNT_PLANES)


def test_seed_suffix_digits():
    from gpusimhash._gpu.engine import seed_suffix

    for seed in (0, 7, 10, 12345, 2**32 - 1):
        digits, length = seed_suffix(seed)
        text = "".join(str((int(digits) >> (4 * k)) & 15) for k in reversed(range(int(length))))
        assert text == str(seed)


def test_max_abs_runs_only_for_split_documents(emulated_kernels):
    """A document of one task finds its largest |weight| while accumulating."""
    batch = _random_batch(np.random.default_rng(6), 20, 10, "extreme")
    for task_size, split in ((64, False), (3, True)):
        engine = emulator.engine(emulated_kernels, task_size=task_size)
        codes = _gpu_codes(engine, batch, 64, 8)
        np.testing.assert_array_equal(codes, cpu_fingerprint_batch(batch, bits=64, seed=8))
        assert ("simhash_max_abs" in engine.launch.launched) == split

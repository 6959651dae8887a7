"""The GPU pipeline and the UTF-8 input, on the emulated kernels and an emulated staging.

``gpusimhash._gpu.pipeline`` is the orchestration the CuPy layer runs; here it runs on NumPy with
``EmulatedStaging``, which raises where a device would race (a pinned buffer rewritten under a
copy in flight, a device buffer overwritten under running kernels). Codes are compared exactly
with the CPU engine.
"""

from __future__ import annotations

import numpy as np
import pytest
from cuda_emu import emulator

from gpusimhash._cpu._fingerprint import fingerprint_batch as cpu_fingerprint_batch
from gpusimhash._gpu import pipeline
from gpusimhash.features import FeatureBatch
from gpusimhash.text import TextFeaturizer
from gpusimhash.utf8 import Utf8Texts


@pytest.fixture
def engine(emulated_kernels):
    return emulator.engine(emulated_kernels, task_size=4, threads_per_block=32, max_blocks=2)


def _batch(seed, n_docs=60, max_len=9):
    rng = np.random.default_rng(seed)
    offsets = np.zeros(n_docs + 1, dtype=np.int64)
    np.cumsum(rng.integers(0, max_len + 1, n_docs), out=offsets[1:])
    states = rng.integers(0, 40, offsets[-1]).astype(np.uint32) * np.uint32(2654435761)
    return FeatureBatch(states, offsets, rng.normal(size=offsets[-1]))


def _codes(results):
    return np.concatenate(results) if results else np.zeros((0, 8), np.uint8)


def test_back_to_back_runs_on_host_input_leave_no_copy_in_flight(engine):
    """Two fingerprint_device-like calls in a row, each of several batches, one pipeline."""
    staging = emulator.EmulatedStaging()
    runner = pipeline.Pipeline(staging)
    for seed in (1, 2):
        batch = _batch(seed)
        jobs = pipeline.feature_jobs(engine, batch, bits=64, seed=seed, budget=40)
        codes = _codes(runner.run(jobs))
        assert staging.in_flight == {}  # nothing may still read a pinned buffer
        np.testing.assert_array_equal(codes, cpu_fingerprint_batch(batch, bits=64, seed=seed))
    assert staging.copies > 4  # several batches per call, both slots reused


def test_staging_catches_a_rewrite_under_a_copy_in_flight():
    staging = emulator.EmulatedStaging()
    staging.host_buffer(0, 16)
    staging.device_buffer(0, 16)
    staging.copy(0, 16)
    with pytest.raises(emulator.StagingError, match="in flight"):
        staging.host_buffer(0, 16)
    staging.compute_waits(staging.copy(1, 0))
    with pytest.raises(emulator.StagingError, match="kernels may read"):
        staging.copy(1, 0)


def test_a_pipeline_without_the_final_drain_is_caught(engine, monkeypatch):
    """The fix of the review's item 5: without drain(), the next call would race."""
    staging = emulator.EmulatedStaging()
    runner = pipeline.Pipeline(staging)
    monkeypatch.setattr(runner, "drain", lambda: None)
    jobs = pipeline.feature_jobs(engine, _batch(3), bits=64, seed=0, budget=10**6)
    runner.run(jobs)
    assert staging.in_flight  # the copy a real device could still be running


def test_the_next_job_is_prepared_while_this_one_computes():
    """Job i + 1's preparation overlaps job i's compute (a worker thread), results in order."""
    import threading

    staging = emulator.EmulatedStaging()
    prepared = [threading.Event() for _ in range(3)]
    events = []

    def jobs():
        for index in range(3):
            events.append(f"prepare {index}")
            prepared[index].set()
            yield [np.full(4, index, np.int64)], lambda arrays, index=index: compute(index, arrays)

    def compute(index, arrays):
        if index + 1 < 3:  # waits for the next job's preparation: deadlocks if not overlapped
            assert prepared[index + 1].wait(timeout=10)
        events.append(f"compute {index}")
        return arrays[0].copy()

    results = pipeline.Pipeline(staging).run(jobs())
    assert [r.tolist() for r in results] == [[0] * 4, [1] * 4, [2] * 4]
    for index in range(3):
        assert events.index(f"prepare {index}") < events.index(f"compute {index}")
    assert staging.in_flight == {}


def test_a_checked_result_is_checked_once_the_next_job_is_enqueued():
    """A job's round trip (Checked.check) waits behind the next job's work, not before it."""
    staging = emulator.EmulatedStaging()
    events = []

    def compute(index, arrays):
        events.append(f"compute {index}")
        return pipeline.Checked(arrays[0].copy(), lambda: events.append(f"check {index}"))

    jobs = [
        ([np.full(2, index, np.int64)], lambda arrays, index=index: compute(index, arrays))
        for index in range(3)
    ]
    results = pipeline.Pipeline(staging).run(jobs)
    assert [r.tolist() for r in results] == [[0, 0], [1, 1], [2, 2]]
    assert events == ["compute 0", "compute 1", "check 0", "compute 2", "check 1", "check 2"]


def test_an_error_while_preparing_drains_and_propagates(engine):
    staging = emulator.EmulatedStaging()

    def jobs():
        yield [np.ones(3)], lambda arrays: arrays[0].copy()
        raise TypeError("document 7: expected text")

    with pytest.raises(TypeError, match="document 7"):
        pipeline.Pipeline(staging).run(jobs())
    assert staging.in_flight == {}


def test_a_failing_job_still_drains(engine):
    staging = emulator.EmulatedStaging()

    def fail(arrays):
        raise RuntimeError("kernel failed")

    with pytest.raises(RuntimeError, match="kernel failed"):
        pipeline.Pipeline(staging).run([([np.ones(3)], fail)])
    assert staging.in_flight == {}


TEXTS = [
    "The cat sat on the MAT",
    "",
    "ÄÖÜ straße İstanbul ΣΑΣ 𝐀𝐁c 😀 x_y",
    "a b",
    "\n\nhi\n",
    "x" * 40,
    " ".join(["w"] * 30),
    "日本語 テキスト",
]
FEATURIZERS = [
    TextFeaturizer(),
    TextFeaturizer("word", 2, "logtf"),
    TextFeaturizer("char", 3, "binary", lowercase=False),
    TextFeaturizer("char", 4, "tfidf"),
]


@pytest.mark.parametrize("featurizer", FEATURIZERS, ids=repr)
@pytest.mark.parametrize("budget", [10**6, 25])
def test_utf8_and_str_jobs_match_the_cpu(engine, featurizer, budget):
    featurizer = featurizer.fit(TEXTS[:4]) if featurizer.weighting == "tfidf" else featurizer
    expected = cpu_fingerprint_batch(featurizer.transform(TEXTS), bits=128, seed=5)
    runner = pipeline.Pipeline(emulator.EmulatedStaging())
    texts = Utf8Texts.from_strings(TEXTS)
    utf8 = pipeline.utf8_jobs(engine, texts, featurizer, bits=128, seed=5, budget=budget)
    np.testing.assert_array_equal(_codes(runner.run(utf8)), expected)
    strings = pipeline.text_jobs(engine, TEXTS, featurizer, bits=128, seed=5, budget=budget)
    np.testing.assert_array_equal(_codes(runner.run(strings)), expected)


def test_str_jobs_keep_lone_surrogates(engine):
    texts = ["a\ud800b", "\udfff x"]
    featurizer = TextFeaturizer("char", 2)
    expected = cpu_fingerprint_batch(featurizer.transform(texts), bits=64, seed=1)
    jobs = pipeline.text_jobs(engine, texts, featurizer, bits=64, seed=1, budget=100)
    codes = _codes(pipeline.Pipeline(emulator.EmulatedStaging()).run(jobs))
    np.testing.assert_array_equal(codes, expected)


@pytest.mark.parametrize("budget", [10**6, 12])  # one job, or the bad document in the middle
def test_invalid_utf8_names_the_document_on_both_engines(engine, budget):
    texts = Utf8Texts.from_strings(["fine", "also fine", "bad \xff", "after it"])
    data = texts.data.copy()
    data[texts.offsets[2] + 4] = 0xFF  # a byte no UTF-8 sequence contains
    bad = Utf8Texts(data, texts.offsets)
    jobs = pipeline.utf8_jobs(
        engine, bad, TextFeaturizer(), bits=64, seed=0, budget=budget, first_index=10
    )
    staging = emulator.EmulatedStaging()
    with pytest.raises(ValueError, match="document 12: not valid UTF-8 \\(byte 4"):
        pipeline.Pipeline(staging).run(jobs)
    assert staging.in_flight == {}
    with pytest.raises(ValueError, match="document 12: not valid UTF-8 \\(byte 4"):
        TextFeaturizer().transform(bad, first_index=10)


INVALID = [
    b"\xc3",  # truncated
    b"\xc3(",  # bad continuation
    b"\xa9",  # stray continuation
    b"\xc0\xaf",  # overlong
    b"\xe0\x80\x80",  # overlong
    b"\xed\xa0\x80",  # surrogate
    b"\xf4\x90\x80\x80",  # above U+10FFFF
    b"\xf8\x88\x80\x80\x80",  # 5-byte form
    b"\xe2\x82\xac\xa9",  # one continuation too many
]


@pytest.mark.parametrize("raw", INVALID, ids=lambda raw: raw.hex())
def test_decoders_reject_what_python_rejects(engine, raw):
    with pytest.raises(UnicodeDecodeError):
        raw.decode("utf-8")
    texts = Utf8Texts(np.frombuffer(b"ok " + raw + b" x", np.uint8), np.array([0, 3, len(raw) + 5]))
    with pytest.raises(ValueError, match="document 1: not valid UTF-8"):
        TextFeaturizer().transform(texts)
    data, offsets = texts.compact()
    _, _, first_error = engine.decode_utf8(data, offsets)
    assert 3 <= int(first_error[0]) < 3 + len(raw)


def test_decoder_layout_matches_the_str_encoding(engine):
    from gpusimhash._gpu.engine import encode_texts

    texts = Utf8Texts.from_strings(TEXTS)
    data, offsets = texts.compact()
    code_points, doc_starts, first_error = engine.decode_utf8(data, offsets)
    expected, expected_starts = encode_texts(TEXTS)
    assert int(first_error[0]) == 2**64 - 1
    np.testing.assert_array_equal(doc_starts, expected_starts)
    np.testing.assert_array_equal(code_points[: expected.size], expected)
    assert (code_points[expected.size :] == 0x0A).all()

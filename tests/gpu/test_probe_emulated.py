"""The GPU parity probe (gpusimhash._gpu.probe) on the emulated kernels, with planted faults.

The probe runs the kernels compiled by g++ (cuda_emu) through the same Engine, pipeline,
DeviceJoin and Verifier as on a device. A kernel made wrong by one flipped output bit, a
launcher that raises as CUDA does on an illegal memory access, and a device that cannot be set
up must each fail the probe, naming what failed: ``device="auto"`` then warns once and computes
on the CPU, exactly, and ``device="gpu"`` raises with the same words.
"""

from __future__ import annotations

import ctypes
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from cuda_emu import emulator

from gpusimhash import (
    SimHashIndex,
    _backend,
    fingerprint,
    near_duplicate_groups,
    verified_near_duplicates,
)
from gpusimhash._gpu import probe, probe_cases
from gpusimhash.fingerprinting import resolve_device

TEXTS = ["the cat sat on the mat", "The cat sat on the mat!", "a dog ran", "", "ÉTÉ 😀 straße"]


class IllegalAddress(RuntimeError):
    """Stands for cupy.cuda.runtime.CUDARuntimeError (CuPy is not installed here)."""


class CompileException(Exception):
    """Stands for cupy.cuda.compiler.CompileException (an NVRTC failure)."""


def _launcher(library: ctypes.CDLL) -> emulator.EmulatedLauncher:
    return emulator.EmulatedLauncher(library, threads_per_block=32, max_blocks=3)


@pytest.fixture
def emulated_gpu(
    monkeypatch: pytest.MonkeyPatch, emulated_kernels: ctypes.CDLL
) -> Callable[[Any], list[int]]:
    """Make the process see a GPU whose kernels are the emulated ones behind ``launcher``.

    Returns ``install(launcher)``; ``install`` returns a list counting the probe's device set-ups.
    """
    monkeypatch.setattr(probe, "_STATE", probe._State())
    monkeypatch.setattr(_backend, "gpu_available", lambda: True)
    monkeypatch.setattr(_backend, "require_gpu", lambda: np)
    monkeypatch.delenv(probe.SKIP_VARIABLE, raising=False)

    def install(launcher: Any) -> list[int]:
        set_ups: list[int] = []

        def device() -> probe_cases.Device:
            set_ups.append(1)
            if isinstance(launcher, Exception):
                raise launcher
            return emulator.probe_device(launcher)

        monkeypatch.setattr(probe, "gpu_device", device)
        return set_ups

    return install


@pytest.mark.slow
def test_every_family_passes_and_runs_each_kernel(emulated_kernels: ctypes.CDLL) -> None:
    launcher = _launcher(emulated_kernels)
    outcome = probe.run(probe.FAMILIES, emulator.probe_device(launcher))
    assert outcome.failure is None
    assert set(outcome.seconds) == set(probe.FAMILIES)
    expected = {
        name
        for names in (
            ("simhash_max_abs", "simhash_accumulate_weighted", "simhash_pack_partials"),
            ("simhash_accumulate_unit<4, 8>", "simhash_accumulate_unit<8, 8>"),
            ("simhash_accumulate_unit<11, 4>",),
            ("text_classify", "text_decode_utf8", "text_word_states", "text_char_states"),
            ("join_bucket_pairs<1>", "join_bucket_pairs<2>"),
            ("join_tiles<1>", "join_tiles<2>", "join_tiles<4>", "knn_topk<1>", "knn_topk<4>"),
            ("verify_pairs<unsigned int>", "verify_pairs<unsigned long long>"),
        )
        for name in names
    }
    assert set(launcher.launched) == expected


@pytest.mark.parametrize(
    ("kernel", "family", "case"),
    [
        ("text_decode_utf8", "fingerprint", "text input, word1-count, 64 bits"),
        ("text_char_states", "fingerprint", "text input, char3-logtf, 256 bits"),
        ("simhash_accumulate_unit<11, 4>", "fingerprint", "text input, word2-binary, 64 bits"),
        ("simhash_accumulate_weighted", "fingerprint", "text input, char3-logtf, 256 bits"),
        ("simhash_pack_partials", "fingerprint", "text input, word1-count, 64 bits"),
        ("join_bucket_pairs<2>", "join", "128 bits radius 18, 10 blocks"),
        ("join_tiles<1>", "join", "64 bits radius 3, 4 blocks"),
        pytest.param("knn_topk<4>", "knn", "256 bits, k = 10", marks=pytest.mark.slow),
        ("verify_pairs<unsigned long long>", "verify", "word features, uint64 states"),
    ],
)
def test_a_wrong_kernel_fails_its_family(
    emulated_kernels: ctypes.CDLL, kernel: str, family: str, case: str
) -> None:
    wrong = emulator.WrongKernel(_launcher(emulated_kernels), kernel)
    outcome = probe.run([family], emulator.probe_device(wrong))
    assert wrong.corrupted > 0
    assert outcome.failure is not None
    assert outcome.failure.startswith(f"{family}, {case}: ")
    assert "differ" in outcome.failure or "not the same" in outcome.failure


@pytest.mark.parametrize(
    ("kernel", "family"),
    [
        ("text_classify", "fingerprint"),
        ("simhash_accumulate_unit<4, 8>", "fingerprint"),
        ("join_bucket_pairs<1>", "join"),
        ("knn_topk<1>", "knn"),
        ("verify_pairs<unsigned int>", "verify"),
    ],
)
def test_a_raising_launch_fails_its_family(
    emulated_kernels: ctypes.CDLL, kernel: str, family: str
) -> None:
    error = IllegalAddress("cudaErrorIllegalAddress: an illegal memory access was encountered")
    launcher = emulator.RaisingLauncher(_launcher(emulated_kernels), kernel, error)
    outcome = probe.run(["verify", family], emulator.probe_device(launcher))
    assert outcome.failure is not None
    assert outcome.failure.startswith(f"{family}, ")
    assert outcome.failure.endswith(
        "IllegalAddress: cudaErrorIllegalAddress: an illegal memory access was encountered"
    )


def test_auto_warns_once_and_computes_on_the_cpu(
    emulated_gpu: Callable[[Any], list[int]], emulated_kernels: ctypes.CDLL
) -> None:
    set_ups = emulated_gpu(emulator.WrongKernel(_launcher(emulated_kernels), "text_word_states"))
    with pytest.warns(probe.GpuProbeWarning) as caught:
        codes = fingerprint(TEXTS, bits=64, device="auto")
    assert len(caught) == 1
    message = str(caught[0].message)
    assert message.startswith(
        "the GPU failed the CPU parity probe: fingerprint, text input, word1-count, 64 bits: "
    )
    assert "codes differ from the CPU's" in message
    assert message.endswith("the CPU computes instead for the rest of this process")
    np.testing.assert_array_equal(codes, fingerprint(TEXTS, bits=64, device="cpu"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no second warning, no second probe
        again = fingerprint(TEXTS, bits=64)
        pairs, _ = verified_near_duplicates(TEXTS, min_cosine=0.9)
        index = SimHashIndex(bits=64, kind="flat", device="auto")
    np.testing.assert_array_equal(again, codes)
    assert pairs.tolist() == [[0, 1]]
    assert index.device == "cpu"
    assert set_ups == [1]


def test_gpu_raises_with_the_same_words(
    emulated_gpu: Callable[[Any], list[int]], emulated_kernels: ctypes.CDLL
) -> None:
    emulated_gpu(emulator.WrongKernel(_launcher(emulated_kernels), "simhash_pack_partials"))
    with pytest.raises(probe.GpuProbeError) as raised:
        fingerprint(TEXTS, bits=64, device="gpu")
    failure = str(raised.value).split("; device='gpu'")[0]
    assert failure.startswith("the GPU failed the CPU parity probe: fingerprint, ")
    with pytest.raises(RuntimeError, match="device='gpu' refuses it"):
        resolve_device("gpu")  # every time, without probing again
    with pytest.warns(probe.GpuProbeWarning) as caught:
        assert resolve_device("auto") == "cpu"
    assert str(caught[0].message).startswith(failure + "; ")


def test_each_entry_point_probes_the_family_it_uses(
    emulated_gpu: Callable[[Any], list[int]], emulated_kernels: ctypes.CDLL
) -> None:
    error = IllegalAddress("cudaErrorIllegalAddress: an illegal memory access was encountered")
    emulated_gpu(emulator.RaisingLauncher(_launcher(emulated_kernels), "knn_topk<1>", error))
    codes = fingerprint(TEXTS, bits=64, device="cpu")
    with pytest.raises(probe.GpuProbeError, match="knn, 64 bits, k = 10: IllegalAddress"):
        SimHashIndex(bits=64, kind="flat", device="gpu")
    with pytest.raises(probe.GpuProbeError, match="knn, 64 bits"):  # the failure is sticky
        near_duplicate_groups(codes, max_distance=3, device="gpu")


def test_a_join_fault_stops_a_gpu_join(
    emulated_gpu: Callable[[Any], list[int]], emulated_kernels: ctypes.CDLL
) -> None:
    emulated_gpu(emulator.WrongKernel(_launcher(emulated_kernels), "join_bucket_pairs<1>"))
    codes = fingerprint(TEXTS, bits=64, device="cpu")
    with pytest.raises(probe.GpuProbeError, match="join, 64 bits radius 3, 4 blocks: "):
        near_duplicate_groups(codes, max_distance=3, device="gpu")


def test_a_device_that_cannot_be_set_up(emulated_gpu: Callable[[Any], list[int]]) -> None:
    emulated_gpu(CompileException("NVRTC_ERROR_COMPILATION (6): simhash.cu(12): error"))
    with pytest.warns(probe.GpuProbeWarning, match="setting up the device: CompileException: "):
        assert resolve_device("auto", uses=("verify",)) == "cpu"


@pytest.mark.slow
def test_families_that_passed_are_not_probed_again(
    emulated_gpu: Callable[[Any], list[int]], emulated_kernels: ctypes.CDLL
) -> None:
    launcher = _launcher(emulated_kernels)
    set_ups = emulated_gpu(launcher)
    assert resolve_device("auto", uses=("verify",)) == "gpu"
    assert set(launcher.launched) == {
        "verify_pairs<unsigned int>",
        "verify_pairs<unsigned long long>",
    }
    assert resolve_device("gpu", uses=("verify",)) == "gpu"
    assert set_ups == [1]
    launched = len(launcher.launched)
    assert resolve_device("auto", uses=("verify", "knn")) == "gpu"  # knn only
    assert {name.split("<")[0] for name in launcher.launched[launched:]} == {"knn_topk"}
    assert set_ups == [1, 1]


def test_the_skip_variable_trusts_the_gpu_unchecked(
    emulated_gpu: Callable[[Any], list[int]], monkeypatch: pytest.MonkeyPatch
) -> None:
    set_ups = emulated_gpu(CompileException("never reached"))
    monkeypatch.setenv(probe.SKIP_VARIABLE, "1")
    assert resolve_device("auto") == "gpu"
    assert resolve_device("gpu", uses=probe.FAMILIES) == "gpu"
    assert set_ups == []
    monkeypatch.setenv(probe.SKIP_VARIABLE, "0")  # "0" probes
    with pytest.warns(probe.GpuProbeWarning):
        assert resolve_device("auto") == "cpu"


def test_no_gpu_probes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(probe, "_STATE", probe._State())
    monkeypatch.setattr(_backend, "gpu_available", lambda: False)
    monkeypatch.setattr(probe, "gpu_device", lambda: pytest.fail("probed without a GPU"))
    assert resolve_device("auto", uses=probe.FAMILIES) == "cpu"
    assert not probe.trusted(probe.FAMILIES)


@pytest.mark.parametrize(("n", "bits", "radius", "blocks"), probe_cases.JOINS)
def test_the_probes_cpu_join_is_the_cpu_join(n: int, bits: int, radius: int, blocks: int) -> None:
    rng = np.random.default_rng(bits)
    codes = probe_cases.clustered_codes(rng, n, bits, flips=radius // 2 + 1, crowd=n // 20)
    inverse, pairs = probe_cases.cpu_join(codes, radius)
    groups = near_duplicate_groups(codes, max_distance=radius, device="cpu")
    np.testing.assert_array_equal(inverse, groups.inverse)
    np.testing.assert_array_equal(pairs, groups.unique_pairs)
    assert len(pairs) > n // 4

"""The GPU radius join (kernels/join.cu), run on the CPU through g++ (cuda_emu).

The same ``DeviceJoin`` that drives CuPy on a GPU drives here NumPy arrays and the emulated
kernels, so these tests cover the kernels' logic (popcount compares, warp ballots and shuffles,
dynamic shared memory, overflow counters) and the orchestration together. The join must give
exactly the CPU join's pair set, kNN exactly FAISS IndexBinaryFlat's results. Tiny tiles, output
capacities and bucket caps make the rare paths run: the exact-size rerun after an overflow and
the tiled fallback for oversized bucket pairs.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from cuda_emu import emulator
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusimhash import SimHashIndex, _backend, near_duplicate_groups, near_duplicates
from gpusimhash._gpu import join as gpu_join
from gpusimhash._gpu import knn as gpu_knn
from gpusimhash._gpu import probe
from gpusimhash._gpu.join import (
    DeviceJoin,
    JoinSettings,
    block_keys,
    even_bounds,
    n_masks,
    neighbour_masks,
    word_layout,
)
from gpusimhash._gpu.knn import DeviceKnn, KnnSettings
from gpusimhash.join._groups import DuplicateGroups

# Settings that send a few hundred codes down every path: capacities of a few pairs (reruns),
# bucket pairs of more than 12 compares to join_tiles, tiles of 8 columns.
TINY: dict[str, Any] = {
    "pair_capacity": 2,
    "pairs_per_code": 0.0,
    "big_capacity": 1,
    "big_pairs": 12,
    "tile_cols": 8,
}


def _join(library: ctypes.CDLL, threads: int = 32, grid: int = 3, **overrides: Any) -> DeviceJoin:
    launcher = emulator.EmulatedLauncher(library, threads_per_block=threads, max_blocks=grid)
    return DeviceJoin(np, launcher, JoinSettings(**overrides))


def _flip(rng: np.random.Generator, code: np.ndarray, n_bits: int) -> np.ndarray:
    """A copy of ``code`` with ``n_bits`` distinct random bits flipped."""
    bits = np.unpackbits(code, bitorder="little")
    chosen = rng.choice(bits.size, n_bits, replace=False)
    bits[chosen] ^= 1
    return np.packbits(bits, bitorder="little")


def planted(rng: np.random.Generator, n: int, bits: int, radius: int) -> np.ndarray:
    """Random codes with partners at distance exactly ``radius`` and ``radius + 1``, and copies."""
    width = bits // 8
    codes = rng.integers(0, 256, (n, width), dtype=np.uint8)
    for i in range(0, n - 3, 4):
        codes[i + 1] = _flip(rng, codes[i], min(radius, bits))
        codes[i + 2] = _flip(rng, codes[i], min(radius + 1, bits))
        codes[i + 3] = codes[i] if i % 8 == 0 else _flip(rng, codes[i], radius // 2)
    return codes


def assert_same_as_cpu(join: DeviceJoin, codes: np.ndarray, radius: int) -> None:
    inverse, unique_pairs = join.groups(codes, radius)
    expected = near_duplicate_groups(codes, max_distance=radius)
    np.testing.assert_array_equal(inverse, expected.inverse)
    np.testing.assert_array_equal(unique_pairs, expected.unique_pairs)


# (bits, radius, blocks): 0 blocks is the tiled brute force
CASES = [
    (8, 1, 0),
    (8, 2, 2),
    (24, 3, 2),
    (64, 3, 4),
    (64, 7, 4),
    (64, 9, 5),
    (128, 18, 8),
    (128, 18, 0),
    (256, 45, 16),
    (512, 60, 32),
    (640, 70, 40),  # wider than 8 words: template 0
    (1024, 100, 0),
]


@pytest.mark.parametrize(("bits", "radius", "blocks"), CASES)
def test_planted_pairs_match_the_cpu_join(
    emulated_kernels: ctypes.CDLL, bits: int, radius: int, blocks: int
) -> None:
    rng = np.random.default_rng(bits + radius)
    codes = planted(rng, 203, bits, radius)  # not a multiple of any tile
    join = _join(emulated_kernels, blocks=blocks, max_key_bits=16)
    assert_same_as_cpu(join, codes, radius)
    assert len(join.groups(codes, radius)[1]) > 0


@pytest.mark.parametrize(("bits", "radius", "blocks"), [(64, 7, 4), (128, 18, 8), (40, 5, 0)])
@pytest.mark.parametrize("threads", [32, 64])
def test_overflow_rerun_and_big_buckets(
    emulated_kernels: ctypes.CDLL, bits: int, radius: int, blocks: int, threads: int
) -> None:
    rng = np.random.default_rng(bits)
    # clusters: many codes share block keys, so bucket pairs are oversized
    centres = rng.integers(0, 256, (4, bits // 8), dtype=np.uint8)
    codes = np.stack(
        [_flip(rng, centres[i % 4], int(rng.integers(0, radius + 2))) for i in range(100)]
    )
    join = _join(emulated_kernels, threads=threads, blocks=blocks, max_key_bits=16, **TINY)
    assert_same_as_cpu(join, codes, radius)
    assert join.stats.reruns > 0
    if blocks:
        assert join.stats.big_bucket_pairs > 0
        assert any(name.startswith("join_tiles") for name in join.stats.launches)


def test_all_identical_codes(emulated_kernels: ctypes.CDLL) -> None:
    codes = np.full((500, 16), 0xA7, dtype=np.uint8)
    join = _join(emulated_kernels, **TINY)
    inverse, unique_pairs = join.groups(codes, 18)
    np.testing.assert_array_equal(inverse, np.zeros(500, dtype=np.int64))
    assert unique_pairs.shape == (0, 2)
    assert join.stats.launches == {}  # one distinct code: nothing to launch
    codes[::7, 3] ^= 0x0F  # two distinct codes four bits apart
    for radius in (3, 4):
        assert_same_as_cpu(join, codes, radius)


@pytest.mark.parametrize("n", [0, 1, 2])
def test_tiny_inputs(emulated_kernels: ctypes.CDLL, n: int) -> None:
    codes = np.arange(n * 8, dtype=np.uint8).reshape(n, 8)
    assert_same_as_cpu(_join(emulated_kernels), codes, 64)


def test_radius_past_the_code_length(emulated_kernels: ctypes.CDLL) -> None:
    codes = planted(np.random.default_rng(5), 50, 16, 3)
    for blocks in (0, 2):
        assert_same_as_cpu(_join(emulated_kernels, blocks=blocks), codes, 16)


def test_expanded_pairs_equal_near_duplicates(emulated_kernels: ctypes.CDLL) -> None:
    rng = np.random.default_rng(3)
    codes = planted(rng, 120, 64, 5)
    inverse, unique_pairs = _join(emulated_kernels, blocks=4).groups(codes, 5)
    groups = DuplicateGroups(inverse=inverse, unique_pairs=unique_pairs, max_distance=5)
    np.testing.assert_array_equal(groups.pairs(), near_duplicates(codes, max_distance=5))


@settings(max_examples=25, deadline=None)
@given(
    width=st.integers(1, 9),
    n=st.integers(0, 60),
    radius=st.integers(0, 12),
    blocks=st.integers(0, 5),
    seed=st.integers(0, 2**32 - 1),
)
def test_join_property(
    emulated_kernels: ctypes.CDLL, width: int, n: int, radius: int, blocks: int, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    codes = planted(rng, n, width * 8, radius)
    blocks = min(blocks, width * 8)
    if blocks and -(-width * 8 // blocks) > 16:
        blocks = 0  # keys this wide would need 2**17 buckets or more
    assert_same_as_cpu(
        _join(emulated_kernels, blocks=blocks, max_key_bits=16, **TINY), codes, radius
    )


@pytest.mark.slow
def test_planner_chooses_brute_force_or_valid_blocks(emulated_kernels: ctypes.CDLL) -> None:
    rng = np.random.default_rng(0)
    join = _join(emulated_kernels, brute_force_max=100, max_key_bits=12, sample_size=64)
    small = rng.integers(0, 256, (100, 8), dtype=np.uint8)
    words, _ = join.words(small)
    assert join.plan(words, 64, 3) is None
    codes = planted(rng, 2000, 64, 3)
    assert_same_as_cpu(join, codes, 3)
    plan = join.stats.plan
    assert plan is not None
    assert plan.bounds[0] == 0
    assert plan.bounds[-1] == 64
    assert np.diff(plan.bounds).max() <= 12
    assert plan.block_radius == 3 // (len(plan.bounds) - 1)


def test_planner_measures_bucket_occupancy(emulated_kernels: ctypes.CDLL) -> None:
    """Codes sharing most of their bits crowd a few buckets: the planner sees it and brute-forces."""
    rng = np.random.default_rng(2)
    join = _join(emulated_kernels, brute_force_max=100, max_key_bits=12, sample_size=256)
    uniform = rng.integers(0, 256, (2000, 8), dtype=np.uint8)
    words, _ = join.words(uniform)
    assert join.plan(words, 64, 3) is not None
    skewed = uniform.copy()
    skewed[:, :6] = 0x5A  # 48 equal bits: the keys of most blocks are one value
    words, _ = join.words(skewed)
    assert join.plan(words, 64, 3) is None
    assert_same_as_cpu(join, skewed[:300], 3)


def test_forced_blocks_wider_than_the_key_limit_raise(emulated_kernels: ctypes.CDLL) -> None:
    join = _join(emulated_kernels, blocks=2, max_key_bits=16)
    with pytest.raises(ValueError, match="max_key_bits"):
        join.groups(np.arange(24, dtype=np.uint8).reshape(3, 8), 1)


def test_helpers() -> None:
    assert even_bounds(10, 3) == (0, 3, 6, 10)
    for key_bits, radius in [(1, 0), (4, 2), (7, 7), (10, 3)]:
        masks = neighbour_masks(key_bits, radius)
        assert masks.size == n_masks(key_bits, radius) == len(set(masks.tolist()))
        assert np.bitwise_count(masks).max() <= radius
    assert [word_layout(w) for w in (1, 8, 9, 17, 64, 65)] == [
        (1, 1),
        (1, 1),
        (2, 2),
        (4, 4),
        (8, 8),
        (9, 0),
    ]
    rng = np.random.default_rng(1)
    codes = rng.integers(0, 256, (20, 24), dtype=np.uint8)
    words = np.ascontiguousarray(codes).view(np.uint64)
    bits = np.unpackbits(codes, axis=1, bitorder="little").astype(np.int64)
    for lo, hi in [(0, 1), (3, 25), (60, 70), (63, 64), (100, 122), (170, 192)]:
        expected = (bits[:, lo:hi] << np.arange(hi - lo)).sum(axis=1)
        np.testing.assert_array_equal(block_keys(np, words, lo, hi), expected)


# ---- the public API's device paths, with the emulated kernels standing in for CuPy -------------


@dataclass
class EmulatedGpu:
    """The device join and kNN the CuPy layer runs, on NumPy and the emulated kernels."""

    join: DeviceJoin
    knn: DeviceKnn


@pytest.fixture
def emulated_gpu(monkeypatch: pytest.MonkeyPatch, emulated_kernels: ctypes.CDLL) -> EmulatedGpu:
    """Run the CuPy layer on NumPy and the emulated kernels, tiny sizes (every path).

    The parity probe is skipped: it would set up CuPy's launcher (test_probe_emulated.py
    drives it on the emulated kernels).
    """
    launcher = emulator.EmulatedLauncher(emulated_kernels, threads_per_block=64, max_blocks=3)
    gpu = EmulatedGpu(
        DeviceJoin(np, launcher, JoinSettings(**TINY)),
        DeviceKnn(np, launcher, KnnSettings(chunk=32, query_tile=3)),
    )
    monkeypatch.setenv(probe.SKIP_VARIABLE, "1")
    monkeypatch.setattr(_backend, "require_gpu", lambda: np)
    monkeypatch.setattr(gpu_join, "device_join", lambda: gpu.join)
    monkeypatch.setattr(gpu_knn, "device_knn", lambda: gpu.knn)
    return gpu


@pytest.mark.parametrize("bits", [8, 64, 128, 256])
def test_near_duplicates_on_the_device(emulated_gpu: EmulatedGpu, bits: int) -> None:
    rng = np.random.default_rng(bits)
    radius = bits // 8
    codes = planted(rng, 150, bits, radius)
    groups = near_duplicate_groups(codes, max_distance=radius, device="gpu")
    expected = near_duplicate_groups(codes, max_distance=radius, device="cpu")
    np.testing.assert_array_equal(groups.inverse, expected.inverse)
    np.testing.assert_array_equal(groups.unique_pairs, expected.unique_pairs)
    assert groups.max_distance == expected.max_distance == radius
    np.testing.assert_array_equal(
        near_duplicates(codes, min_cosine=0.9, device="gpu"),
        near_duplicates(codes, min_cosine=0.9),
    )
    assert emulated_gpu.join.stats.launches  # the kernels ran


def test_device_join_errors_match_the_cpu(emulated_gpu: EmulatedGpu) -> None:
    for device in ("cpu", "gpu"):
        with pytest.raises(TypeError, match="packed uint8 codes"):
            near_duplicates(np.zeros((3, 8), dtype=np.int64), max_distance=1, device=device)
        with pytest.raises(ValueError, match="shape"):
            near_duplicates(np.zeros((3, 0), dtype=np.uint8), max_distance=1, device=device)
        with pytest.raises(ValueError, match="exactly one"):
            near_duplicates(np.zeros((3, 8), dtype=np.uint8), device=device)
    with pytest.raises(ValueError, match="device"):
        near_duplicates(np.zeros((3, 8), dtype=np.uint8), max_distance=1, device="tpu")


@pytest.mark.skipif(_backend.gpu_available(), reason="a GPU is usable here")
def test_asking_for_a_missing_gpu_raises() -> None:
    codes = np.zeros((3, 8), dtype=np.uint8)
    with pytest.raises(RuntimeError, match="GPU"):
        near_duplicate_groups(codes, max_distance=1, device="gpu")
    with pytest.raises(RuntimeError, match="GPU"):
        SimHashIndex(bits=64, device="gpu")
    assert near_duplicate_groups(codes, max_distance=1, device="auto").n_unique == 1
    assert SimHashIndex(bits=64, device="auto").device == "cpu"


@pytest.mark.parametrize("kind", ["flat", "multihash"])
def test_index_search_on_the_device(emulated_gpu: EmulatedGpu, kind: str) -> None:
    rng = np.random.default_rng(7)
    codes = rng.integers(0, 256, (300, 8), dtype=np.uint8)
    codes[150:] = codes[:150]  # ties, broken by insertion order as FAISS does
    queries = np.concatenate([codes[:10], rng.integers(0, 256, (10, 8), dtype=np.uint8)])
    ids = rng.permutation(10_000)[:300]
    gpu, cpu = SimHashIndex(bits=64, kind=kind, device="gpu"), SimHashIndex(bits=64, kind=kind)
    assert gpu.device == "gpu"
    for index in (gpu, cpu):
        index.add(codes, ids=ids)
    for k in (1, 10, 299, 400):
        for got, expected in zip(gpu.search(queries, k), cpu.search(queries, k), strict=True):
            np.testing.assert_array_equal(got, expected)
    for index in (gpu, cpu):  # the device copy follows removals and additions
        index.remove(ids[::3])
        index.add(codes[:5], ids=np.arange(20_000, 20_005))
    for got, expected in zip(gpu.search(queries, 12), cpu.search(queries, 12), strict=True):
        np.testing.assert_array_equal(got, expected)
    assert "knn_topk<1>" in emulated_gpu.knn.launches


def test_index_device_choices(emulated_gpu: EmulatedGpu, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="approximate"):
        SimHashIndex(bits=64, kind="hnsw", device="gpu")
    with pytest.raises(ValueError, match="device"):
        SimHashIndex(bits=64, device="tpu")
    index = SimHashIndex(bits=64)
    index.add(np.arange(80, dtype=np.uint8).reshape(10, 8))
    index.save(tmp_path / "index")
    loaded = SimHashIndex.load(tmp_path / "index", device="gpu")
    assert loaded.device == "gpu"
    for got, expected in zip(
        loaded.search(index._stored_codes(), 3), index.search(index._stored_codes(), 3), strict=True
    ):
        np.testing.assert_array_equal(got, expected)


# ---- the emulation itself -----------------------------------------------------------------------

_INTRINSICS_PROGRAM = r"""
#include "cuda_emu.h"
#include <cstdio>
int main(int argc, char**) {
    unsigned ballots[64] = {};
    int shuffled[64] = {}, counts[64] = {}, shared_sums[2] = {};
    cuda_emu::launch(2, 64, [&] {
        unsigned char* shared = gsh_dynamic_shared();  // 64 bytes for the launch
        shared[threadIdx.x] = (unsigned char)(threadIdx.x + blockIdx.x);
        __syncthreads();
        if (threadIdx.x == 0) {
            int sum = 0;
            for (int i = 0; i < 64; ++i) sum += shared[i];
            shared_sums[blockIdx.x] = sum;
        }
        ballots[threadIdx.x] = __ballot_sync(0xffffffffu, threadIdx.x % 3 == 0);
        shuffled[threadIdx.x] = __shfl_sync(0xffffffffu, (int)threadIdx.x * 10, 7);
        counts[threadIdx.x] = __popc(ballots[threadIdx.x]) + __popcll(~0ull << threadIdx.x);
        __syncwarp();
    }, 64);
    std::printf("%u %u %d %d %d %d %d %d\n", ballots[0], ballots[40], shuffled[3], shuffled[33],
                counts[0], counts[63], shared_sums[0], shared_sums[1]);
    if (argc > 1) {  // diverge
        cuda_emu::launch(1, 32, [&] {
            if (threadIdx.x != 5) ballots[threadIdx.x] = __ballot_sync(0xffffffffu, 1);
        });
    }
}
"""


@pytest.mark.skipif(emulator.compiler() is None, reason="g++ is not installed")
def test_emulated_intrinsics(tmp_path: Path) -> None:
    """Ballots, shuffles, popcounts and dynamic shared memory; divergent warps abort."""
    import subprocess

    source, binary = tmp_path / "intrinsics.cpp", tmp_path / "intrinsics"
    source.write_text(_INTRINSICS_PROGRAM)
    compiler = str(emulator.compiler())
    subprocess.run(
        [compiler, "-std=c++20", "-O0", "-pthread", f"-I{emulator.HERE}"]
        + ["-DCUDA_EMU_WARP_TIMEOUT_S=1", str(source), "-o", str(binary)],
        check=True,
    )
    outputs = [
        subprocess.run([str(binary), *extra], capture_output=True, text=True, check=False)
        for extra in ([], ["diverge"])
    ]
    fine, diverged = outputs
    assert fine.returncode == 0, fine.stderr
    every_third = sum(1 << lane for lane in range(32) if lane % 3 == 0)
    every_third_of_warp_1 = sum(1 << lane for lane in range(32) if (lane + 32) % 3 == 0)
    expected = [every_third, every_third_of_warp_1, 70, 390, 11 + 64, 11 + 1, 2016, 2080]
    assert [int(value) for value in fine.stdout.split()] == expected
    assert diverged.returncode != 0
    assert "not reached by every lane" in diverged.stderr

"""Build the emulated kernels with g++ and launch them through ctypes on NumPy arrays.

``build(folder)`` compiles ``glue.cpp`` (which includes ``cuda_emu.h``, ``kernels/common.cuh``
and every ``kernels/*.cu``) into a shared library; ``EmulatedLauncher`` is a launcher for
``gpusimhash._gpu.Engine``, ``gpusimhash._gpu.join.DeviceJoin`` and
``gpusimhash._gpu.verify.Verifier`` with ``xp = numpy``: it maps
kernel names to the library's entry points and runs each launch on a small grid, so grid-stride
loops and block boundaries are exercised.
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np

from gpusimhash._gpu import kernels
from gpusimhash._gpu.engine import Engine
from gpusimhash.unicode_tables import load_tables

HERE = Path(__file__).resolve().parent
KERNELS = HERE.parents[2] / "kernels"
# kernel name -> entry point in glue.cpp
ENTRY_POINTS = {
    "simhash_max_abs": "emu_simhash_max_abs",
    "simhash_accumulate_weighted": "emu_simhash_accumulate_weighted",
    **{
        f"simhash_accumulate_unit<{planes}, {group}>": f"emu_simhash_accumulate_unit_{planes}_{group}"
        for planes, group in kernels.UNIT_KERNELS
    },
    "simhash_pack_partials": "emu_simhash_pack_partials",
    "text_classify": "emu_text_classify",
    "text_decode_utf8": "emu_text_decode_utf8",
    "text_word_states": "emu_text_word_states",
    "text_char_states": "emu_text_char_states",
    "verify_pairs<unsigned int>": "emu_verify_pairs_uint32",
    "verify_pairs<unsigned long long>": "emu_verify_pairs_uint64",
}
# the join and kNN kernels, whose entry points take the dynamic shared memory size as well
SHARED_MEMORY_KERNELS = {
    f"{kernel}<{words}>": f"emu_{kernel}_{words}"
    for kernel in ("join_bucket_pairs", "join_tiles", "knn_topk")
    for words in (0, 1, 2, 4, 8)
}
ENTRY_POINTS.update(SHARED_MEMORY_KERNELS)
SCALARS = {
    np.dtype(np.int64): ctypes.c_longlong,
    np.dtype(np.int32): ctypes.c_int,
    np.dtype(np.uint32): ctypes.c_uint,
    np.dtype(np.uint64): ctypes.c_ulonglong,
}


def compiler() -> str | None:
    """Path of g++, or None."""
    return shutil.which("g++")


def build(folder: Path) -> ctypes.CDLL:
    """Compile the emulated kernels into ``folder`` and load them."""
    library = folder / "gpusimhash_emu.so"
    command = [
        compiler() or "g++",
        "-std=c++20",
        "-O2",
        "-ffp-contract=off",
        "-fPIC",
        "-shared",
        "-pthread",
        f"-I{KERNELS}",
        f"-I{HERE}",
        str(HERE / "glue.cpp"),
        "-o",
        str(library),
    ]
    subprocess.run(command, check=True, capture_output=True, text=True)
    return ctypes.CDLL(str(library))


def _argument(value: object) -> object:
    """Convert one kernel argument to its ctypes form (arrays by pointer, scalars by dtype)."""
    if isinstance(value, np.ndarray):
        if not value.flags.c_contiguous:
            raise ValueError("kernel arrays must be C-contiguous")
        return ctypes.c_void_p(value.ctypes.data)
    if isinstance(value, np.generic) and value.dtype in SCALARS:
        return SCALARS[value.dtype](value.item())
    raise TypeError(f"unwrapped kernel argument {value!r}: pass arrays or NumPy scalars")


class EmulatedLauncher:
    """Launch emulated kernels: ``launch(name, n_items, args, shared_bytes=0)`` like ``Launcher``.

    Parameters
    ----------
    library : ctypes.CDLL
        From ``build``.
    threads_per_block, max_blocks : int
        Launch shape; small values make the kernels' grid-stride loops go round.
    """

    def __init__(self, library: ctypes.CDLL, threads_per_block: int = 32, max_blocks: int = 3):
        self.library = library
        self.threads_per_block = threads_per_block
        self.max_blocks = max_blocks
        self.launched: list[str] = []

    def __call__(self, name: str, n_items: int, args: tuple, *, shared_bytes: int = 0) -> None:
        assert n_items > 0, f"{name} launched with no work"
        blocks = kernels.grid_size(n_items, self.threads_per_block, self.max_blocks)
        entry = getattr(self.library, ENTRY_POINTS[name])
        entry.restype = None
        shape = [ctypes.c_uint(blocks), ctypes.c_uint(self.threads_per_block)]
        if name in SHARED_MEMORY_KERNELS:
            shape.append(ctypes.c_ulonglong(shared_bytes))
        else:
            assert shared_bytes == 0, f"{name} takes no dynamic shared memory"
        entry(*shape, *map(_argument, args))
        self.launched.append(name)


def engine(
    library: ctypes.CDLL, *, task_size: int, threads_per_block: int = 32, max_blocks: int = 3
) -> Engine:
    """An Engine running the emulated kernels on NumPy arrays."""
    tables = load_tables()
    return Engine(
        np,
        EmulatedLauncher(library, threads_per_block, max_blocks),
        (tables.word.astype(np.uint8), tables.lower.astype(np.uint32)),
        task_size=task_size,
    )


class StagingError(AssertionError):
    """The pipeline broke a rule that a real device would punish with a data race."""


class _Event:
    def __init__(self, stream: str, number: int, slot: int = -1) -> None:
        self.stream, self.number, self.slot = stream, number, slot


class EmulatedStaging:
    """``gpusimhash._gpu.pipeline.Staging`` on NumPy that checks the device's ordering rules.

    Copies happen at once, but a copy counts as in flight until the host synchronizes its
    event (or a later one of the copy stream), as on a device. It raises StagingError when:

    - a host buffer is handed out for writing while a copy from it may be in flight (a pinned
      buffer rewritten under a running DMA);
    - a copy starts into a device buffer that compute work enqueued after the copy stream's
      last wait may still read.
    """

    def __init__(self) -> None:
        self.host = [np.zeros(0, np.uint8) for _ in range(2)]
        self.device = [np.zeros(0, np.uint8) for _ in range(2)]
        self.in_flight: dict[int, _Event] = {}  # slot -> its unsynchronized copy
        self.copies = 0
        self.computes = 0
        self.copy_after = -1  # compute events the copy stream has waited for
        self.read_since: dict[int, int] = {}  # slot -> first compute event reading its copy
        self.log: list[str] = []

    def host_buffer(self, slot: int, nbytes: int) -> np.ndarray:
        if slot in self.in_flight:
            raise StagingError(f"host buffer {slot} rewritten while its copy may be in flight")
        if self.host[slot].size < nbytes:
            self.host[slot] = np.zeros(max(nbytes, 2 * self.host[slot].size), np.uint8)
        return self.host[slot]

    def device_buffer(self, slot: int, nbytes: int) -> np.ndarray:
        if self.device[slot].size < nbytes:
            self.device[slot] = np.zeros(max(nbytes, 2 * self.device[slot].size), np.uint8)
        return self.device[slot]

    def copy(self, slot: int, nbytes: int) -> _Event:
        reader = self.read_since.get(slot)
        if reader is not None and self.copy_after < reader:
            raise StagingError(f"device buffer {slot} overwritten while kernels may read it")
        self.device[slot][:nbytes] = self.host[slot][:nbytes]
        event = _Event("copy", self.copies, slot)
        self.copies += 1
        self.in_flight[slot] = event
        self.log.append(f"copy {slot}")
        return event

    def record_compute(self) -> _Event:
        event = _Event("compute", self.computes)
        self.computes += 1
        return event

    def compute_waits(self, event: _Event) -> None:
        if event.stream == "copy":  # the work enqueued from now on reads this slot
            self.read_since[event.slot] = self.computes
        self.log.append(f"compute waits {event.slot}")

    def copy_waits(self, event: _Event) -> None:
        if event.stream == "compute":
            self.copy_after = max(self.copy_after, event.number)

    def synchronize(self, event: _Event) -> None:
        if event.stream == "copy":  # stream order: every earlier copy has finished too
            for slot, pending in list(self.in_flight.items()):
                if pending.number <= event.number:
                    del self.in_flight[slot]


def probe_device(launcher: EmulatedLauncher | Any) -> Any:
    """``gpusimhash._gpu.probe_cases.Device`` on NumPy: every kernel through ``launcher``.

    Fingerprints go through ``pipeline.Pipeline`` on an ``EmulatedStaging``, in jobs of at most
    65,536 entries or code points (several per probe input), as the CuPy layer runs them.
    """
    from gpusimhash._gpu import pipeline, probe_cases

    tables = load_tables()
    engine = Engine(np, launcher, (tables.word.astype(np.uint8), tables.lower.astype(np.uint32)))
    runner = pipeline.Pipeline(EmulatedStaging())
    budget = 1 << 16

    def fingerprint(kind: str, batch: Any, featurizer: Any, bits: int, seed: int) -> np.ndarray:
        if kind == "vectors":
            jobs = pipeline.feature_jobs(engine, batch, bits=bits, seed=seed, budget=budget)
        elif kind == "utf8":
            jobs = pipeline.utf8_jobs(
                engine, batch, featurizer, bits=bits, seed=seed, budget=budget
            )
        else:
            jobs = pipeline.text_jobs(
                engine, batch, featurizer, bits=bits, seed=seed, budget=budget
            )
        return np.concatenate(runner.run(jobs))

    return probe_cases.Device(np, launcher, fingerprint)


class WrongKernel:
    """A launcher whose kernel ``name`` is wrong: one bit of what it wrote is flipped.

    After each launch of ``name``, the first byte that changed in the last array argument the
    kernel wrote gets its lowest bit flipped (the kernel's output, for every kernel here).
    """

    def __init__(self, inner: EmulatedLauncher, name: str) -> None:
        self.inner = inner
        self.name = name
        self.corrupted = 0

    @property
    def threads_per_block(self) -> int:
        return self.inner.threads_per_block

    def __call__(self, name: str, n_items: int, args: tuple, *, shared_bytes: int = 0) -> None:
        if name != self.name:
            self.inner(name, n_items, args, shared_bytes=shared_bytes)
            return
        arrays = [a for a in args if isinstance(a, np.ndarray)]
        before = [a.reshape(-1).view(np.uint8).copy() for a in arrays]
        self.inner(name, n_items, args, shared_bytes=shared_bytes)
        written = [
            (a.reshape(-1).view(np.uint8), np.flatnonzero(a.reshape(-1).view(np.uint8) != b))
            for a, b in zip(arrays, before, strict=True)
        ]
        written = [(data, changed) for data, changed in written if changed.size]
        if written:
            data, changed = written[-1]
            data[changed[0]] ^= 1
            self.corrupted += 1


class RaisingLauncher:
    """A launcher that raises ``error`` when kernel ``name`` is launched (a CUDA fault)."""

    def __init__(self, inner: EmulatedLauncher, name: str, error: Exception) -> None:
        self.inner = inner
        self.name = name
        self.error = error

    @property
    def threads_per_block(self) -> int:
        return self.inner.threads_per_block

    def __call__(self, name: str, n_items: int, args: tuple, *, shared_bytes: int = 0) -> None:
        if name == self.name:
            raise self.error
        self.inner(name, n_items, args, shared_bytes=shared_bytes)

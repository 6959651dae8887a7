"""Build the emulated kernels with g++ and launch them through ctypes on NumPy arrays.

``build(folder)`` compiles ``glue.cpp`` (which includes ``cuda_emu.h``, ``kernels/common.cuh``
and every ``kernels/*.cu``) into a shared library; ``EmulatedLauncher`` is a launcher for
``gpusimhash._gpu.Engine`` and ``gpusimhash._gpu.join.DeviceJoin`` with ``xp = numpy``: it maps
kernel names to the library's entry points and runs each launch on a small grid, so grid-stride
loops and block boundaries are exercised.
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

import numpy as np

from gpusimhash._gpu import kernels
from gpusimhash._gpu.engine import Engine
from gpusimhash.unicode_tables import load_tables

HERE = Path(__file__).resolve().parent
KERNELS = HERE.parents[2] / "kernels"
# kernel name -> entry point in glue.cpp
ENTRY_POINTS = {
    "simhash_max_abs": "emu_simhash_max_abs",
    "simhash_accumulate<true>": "emu_simhash_accumulate_true",
    "simhash_accumulate<false>": "emu_simhash_accumulate_false",
    "simhash_pack_partials": "emu_simhash_pack_partials",
    "text_classify": "emu_text_classify",
    "text_span_states": "emu_text_span_states",
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

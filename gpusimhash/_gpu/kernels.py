"""CUDA kernel sources: finding them, compiling them once per process, and launching them.

The sources live in the top-level ``kernels/`` folder of a checkout and in ``gpusimhash/kernels``
of a wheel. Each file is compiled with ``common.cuh`` prefixed, under ``#line`` markers, by one
``cupy.RawModule`` keyed on the source text. Nothing here imports CuPy at import time.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from gpusimhash import _backend

# (counter planes, sign words per thread) of the unit-weight kernels: the host takes the first
# whose planes hold its largest task (entries < 2**planes); fewer planes, fewer registers.
UNIT_KERNELS = ((4, 8), (8, 8), (11, 4))
# uint64 words per code of the join and kNN kernels' instantiations; 0 takes any width.
CODE_WORDS = (1, 2, 4, 8, 0)
# Every kernel file and the kernel names (template instantiations included) compiled from it.
KERNELS = {
    "simhash.cu": (
        "simhash_max_abs",
        "simhash_accumulate_weighted",
        *(f"simhash_accumulate_unit<{planes}, {group}>" for planes, group in UNIT_KERNELS),
        "simhash_pack_partials",
    ),
    "text.cu": ("text_classify", "text_decode_utf8", "text_word_states", "text_char_states"),
    "join.cu": tuple(
        f"{kernel}<{words}>"
        for kernel in ("join_bucket_pairs", "join_tiles")
        for words in CODE_WORDS
    ),
    "knn.cu": tuple(f"knn_topk<{words}>" for words in CODE_WORDS),
    "verify.cu": ("verify_pairs<unsigned int>", "verify_pairs<unsigned long long>"),
}
COMMON_HEADER = "common.cuh"
# fmad=false: no multiply-add contraction anywhere, so device float math is plain IEEE.
COMPILE_OPTIONS = ("--std=c++17", "--fmad=false")
# Every kernel's __launch_bounds__ (GSH_BLOCK in common.cuh): no launch may use more threads.
THREADS_PER_BLOCK = 256
BLOCKS_PER_SM = 32
# The most bit-sliced counter planes of a unit-weight kernel (GSH_COUNT_PLANES in simhash.cu):
# every task's entry count must fit in them.
COUNT_PLANES = max(planes for planes, _ in UNIT_KERNELS)
# Flags written by text_classify (GSH_FLAG_* in text.cu).
FLAG_KEEP, FLAG_TOKEN_START = 2, 4


def kernel_dir() -> Path:
    """Return the folder holding the kernel sources.

    Returns
    -------
    Path
        ``gpusimhash/kernels`` in an installed wheel, else ``kernels/`` of the checkout.

    Raises
    ------
    FileNotFoundError
        Neither folder holds the kernels.
    """
    package = Path(__file__).resolve().parents[1]
    candidates = (package / "kernels", package.parent / "kernels")
    for folder in candidates:
        if (folder / COMMON_HEADER).is_file():
            return folder
    raise FileNotFoundError(
        f"CUDA kernel sources not found in {candidates[0]} (wheel) or {candidates[1]} (checkout)"
    )


def kernel_source(filename: str) -> str:
    """Return the source compiled for one kernel file: ``common.cuh`` then the file.

    Each part starts with a ``#line`` marker naming its file, so compiler messages point at the
    right file and line. The text is the compile cache's key: editing either file recompiles.

    Parameters
    ----------
    filename : str
        A key of ``KERNELS``.

    Returns
    -------
    str
    """
    folder = kernel_dir()
    parts = []
    for path in (folder / COMMON_HEADER, folder / filename):
        parts.append(f'#line 1 "{path}"\n{path.read_text(encoding="utf-8")}\n')
    return "".join(parts)


@functools.cache
def _compiled(source: str, names: tuple[str, ...]) -> Any:
    """Compile one kernel file with CuPy (once per process and source text)."""
    cupy = _backend.require_gpu()
    return cupy.RawModule(code=source, options=COMPILE_OPTIONS, name_expressions=names)


@functools.cache
def _kernel(name: str) -> Any:
    """Return the compiled kernel ``name`` (a key of some ``KERNELS`` entry)."""
    for filename, names in KERNELS.items():
        if name in names:
            return _compiled(kernel_source(filename), names).get_function(name)
    raise KeyError(f"no kernel named {name!r}")


def grid_size(n_items: int, threads_per_block: int, max_blocks: int) -> int:
    """Blocks for ``n_items`` threads' worth of work (kernels loop over the rest).

    Parameters
    ----------
    n_items : int
        Work items, at least 1.
    threads_per_block : int
        Block size.
    max_blocks : int
        Cap on the grid (the kernels use grid-stride loops).

    Returns
    -------
    int
    """
    return max(1, min(-(-n_items // threads_per_block), max_blocks))


class Launcher:
    """Launch compiled kernels on the current device with the grid from ``grid_size``.

    Parameters
    ----------
    threads_per_block : int
        Block size of every launch, a multiple of 32 up to ``THREADS_PER_BLOCK``.

    Raises
    ------
    ValueError
        A block size the kernels' launch bounds do not allow.
    """

    def __init__(self, threads_per_block: int = THREADS_PER_BLOCK) -> None:
        if threads_per_block % 32 or not 0 < threads_per_block <= THREADS_PER_BLOCK:
            raise ValueError(
                f"threads_per_block must be a multiple of 32 in [32, {THREADS_PER_BLOCK}], "
                f"got {threads_per_block}"
            )
        cupy = _backend.require_gpu()
        device = cupy.cuda.Device()
        sm_count = device.attributes["MultiProcessorCount"]
        self.threads_per_block = threads_per_block
        self.max_blocks = sm_count * BLOCKS_PER_SM

    def __call__(
        self, name: str, n_items: int, args: tuple[Any, ...], *, shared_bytes: int = 0
    ) -> None:
        """Run kernel ``name`` over at least ``n_items`` threads with ``args``.

        ``shared_bytes`` of dynamic shared memory go to each block (at most 48 KiB).
        """
        blocks = grid_size(n_items, self.threads_per_block, self.max_blocks)
        _kernel(name)((blocks,), (self.threads_per_block,), args, shared_mem=shared_bytes)

"""The only place CuPy is imported: is a GPU usable, and which array module holds an array."""

from __future__ import annotations

import functools
from types import ModuleType
from typing import Any

import numpy as np

INSTALL_HINT = (
    "install CuPy for your CUDA version (pip install 'gpusimhash[gpu]' brings cupy-cuda13x; "
    "use cupy-cuda12x on CUDA 12) and run on a machine with an NVIDIA GPU"
)


@functools.cache
def cupy_module() -> ModuleType | None:
    """Return the cupy module, or None when it is not installed or fails to import."""
    try:
        import cupy
    except Exception:  # a broken CUDA install raises more than ImportError
        return None
    return cupy


@functools.cache
def gpu_available() -> bool:
    """Whether CuPy is installed and at least one CUDA device answers (cached).

    Returns
    -------
    bool

    Examples
    --------
    >>> isinstance(gpu_available(), bool)
    True
    """
    cupy = cupy_module()
    if cupy is None:
        return False
    try:
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # no driver, no device: CUDARuntimeError and friends
        return False


def require_gpu() -> ModuleType:
    """Return cupy, or raise RuntimeError with an install hint when no GPU is usable.

    Returns
    -------
    module
        cupy.

    Raises
    ------
    RuntimeError
        CuPy missing or no CUDA device.
    """
    cupy = cupy_module()
    if cupy is None or not gpu_available():
        raise RuntimeError(f"a GPU was asked for but none is usable: {INSTALL_HINT}")
    return cupy


def is_device_array(array: Any) -> bool:
    """Whether ``array`` is a CuPy array (False whenever CuPy is absent)."""
    cupy = cupy_module()
    return cupy is not None and isinstance(array, cupy.ndarray)


def to_host(array: Any) -> np.ndarray:
    """Copy a CuPy array to a NumPy array; NumPy arrays pass through unchanged.

    Parameters
    ----------
    array : ndarray or cupy.ndarray
        Any array.

    Returns
    -------
    ndarray
    """
    if is_device_array(array):
        return array.get()
    return np.asarray(array)

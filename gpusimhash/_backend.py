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
    except Exception:  # noqa: BLE001 - a broken CUDA install raises more than ImportError
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
    except Exception:  # noqa: BLE001 - no driver, no device: CUDARuntimeError and friends
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


def array_module(*arrays: Any) -> ModuleType:
    """Return the module (numpy or cupy) that holds the given arrays (None entries are skipped).

    Parameters
    ----------
    *arrays : ndarray, cupy.ndarray or None
        Arrays that must all live on the same side.

    Returns
    -------
    module
        ``cupy`` when the arrays are CuPy arrays, else ``numpy``.

    Raises
    ------
    TypeError
        NumPy and CuPy arrays mixed.

    Examples
    --------
    >>> import numpy as np
    >>> array_module(np.zeros(2), None).__name__
    'numpy'
    """
    on_device = {is_device_array(a) for a in arrays if a is not None}
    if len(on_device) > 1:
        raise TypeError("arrays must all be NumPy or all be CuPy, got a mix of both")
    if on_device == {True}:
        return require_gpu()
    return np

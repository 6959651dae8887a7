"""Exact pair similarities on the GPU, written once over an array module and a kernel launcher.

Like ``Engine`` and ``DeviceJoin``, ``Verifier`` drives CuPy and the compiled kernel
(kernels/verify.cu) on a device, and NumPy with the same kernel source compiled by g++ in the
tests (tests/gpu/cuda_emu). It holds one set of documents' sorted features (the arrays of
``gpusimhash.verify.DocumentFeatures``) and computes, for each pair, what
``gpusimhash._cpu._verify_loops.pair_similarities`` computes: the same float64 values, bit for
bit. The functions at the end are the CuPy layer: host or device arrays in.
"""

from __future__ import annotations

import functools
from types import ModuleType
from typing import Any

import numpy as np

from gpusimhash import _backend
from gpusimhash._gpu import kernels
from gpusimhash._gpu.engine import Launch

# State dtype -> the kernel instantiation that reads it.
KERNEL_NAMES = {
    np.dtype(np.uint32): "verify_pairs<unsigned int>",
    np.dtype(np.uint64): "verify_pairs<unsigned long long>",
}


def _checked(xp: ModuleType, value: Any, name: str, dtype: Any, size: int | None) -> Any:
    """``value`` as a C-contiguous 1-D ``xp`` array of ``dtype``, or raise naming it."""
    array = xp.asarray(value)
    if array.dtype != np.dtype(dtype):
        raise TypeError(f"{name} must have dtype {np.dtype(dtype)}, got {array.dtype}")
    if array.ndim != 1 or (size is not None and array.size != size):
        expected = "(n,)" if size is None else f"({size},)"
        raise ValueError(f"{name} must have shape {expected}, got {array.shape}")
    return xp.ascontiguousarray(array)


class Verifier:
    """Similarities of document pairs from sorted features, over an array module and a launcher.

    Parameters
    ----------
    xp : module
        ``cupy`` on a GPU; ``numpy`` with an emulated launcher in the tests.
    launch : callable
        ``launch(kernel_name, n_items, args)``, as for ``Engine``.
    states : array, shape (nnz,), dtype uint32 or uint64
        Each document's distinct feature states, ascending.
    offsets : array, shape (n_docs + 1,), dtype int64
        Row starts, non-decreasing from 0 to ``nnz``.
    weights : array, shape (nnz,), dtype float64
        Summed weight of each state.
    exponents : array, shape (n_docs,), dtype int64
        ``e`` with ``max |w| = m * 2**e``, ``0.5 <= m < 1`` (0 for a featureless document).
    squared_norms : array, shape (n_docs,), dtype float64
        ``sum (w * 2**-e)**2`` of each document.

    Raises
    ------
    TypeError
        An array of another dtype (states of neither uint32 nor uint64).
    ValueError
        Arrays of inconsistent shapes, or offsets that do not run from 0 to ``nnz``
        (checked with one host round trip).
    """

    def __init__(
        self,
        xp: ModuleType,
        launch: Launch,
        states: Any,
        offsets: Any,
        weights: Any,
        exponents: Any,
        squared_norms: Any,
    ) -> None:
        self.xp = xp
        self.launch = launch
        states = xp.asarray(states)
        if states.dtype not in KERNEL_NAMES:
            raise TypeError(f"states must have dtype uint32 or uint64, got {states.dtype}")
        self.states = _checked(xp, states, "states", states.dtype, None)
        self.offsets = _checked(xp, offsets, "offsets", np.int64, None)
        if self.offsets.size == 0:
            raise ValueError("offsets must have shape (n_docs + 1,), got (0,)")
        self.n_docs = int(self.offsets.size - 1)
        self.weights = _checked(xp, weights, "weights", np.float64, self.states.size)
        self.exponents = _checked(xp, exponents, "exponents", np.int64, self.n_docs)
        self.squared_norms = _checked(xp, squared_norms, "squared_norms", np.float64, self.n_docs)
        descents = (self.offsets[1:] < self.offsets[:-1]).sum()
        check = xp.stack([self.offsets[0], self.offsets[-1], descents])
        first, last, descending = (int(v) for v in _host(check))
        if first != 0 or last != self.states.size or descending:
            raise ValueError(
                f"offsets must be non-decreasing from 0 to {self.states.size} (the states), "
                f"got {first} .. {last}"
            )

    def pair_similarities(self, left: Any, right: Any) -> tuple[Any, Any, Any]:
        """Cosine, set Jaccard and weighted Jaccard of the pairs ``(left[p], right[p])``.

        Parameters
        ----------
        left, right : array, shape (m,), dtype int64
            Documents in ``[0, n_docs)`` (checked with one host round trip: an index out of
            range would read outside the arrays).

        Returns
        -------
        cosine, jaccard, weighted : array, shape (m,), dtype float64
            ``xp`` arrays, equal bit for bit to the CPU loop's; NaN for all three where a
            document is featureless, and a weighted Jaccard of NaN where its denominator is 0.

        Raises
        ------
        TypeError
            Indices that are not int64.
        ValueError
            Arrays of different shapes, or an index out of range.
        """
        xp = self.xp
        left = _checked(xp, left, "left", np.int64, None)
        right = _checked(xp, right, "right", np.int64, left.size)
        m = left.size
        out = tuple(xp.empty(m, dtype=xp.float64) for _ in range(3))
        if m == 0:
            return out
        extremes = xp.stack(
            [xp.minimum(left.min(), right.min()), xp.maximum(left.max(), right.max())]
        )
        low, high = (int(value) for value in _host(extremes))
        if low < 0 or high >= self.n_docs:
            bad = low if low < 0 else high
            raise ValueError(f"pairs must index documents in [0, {self.n_docs}), got {bad}")
        self.launch(
            KERNEL_NAMES[self.states.dtype],
            m,
            (
                self.states,
                self.offsets,
                self.weights,
                self.exponents,
                self.squared_norms,
                left,
                right,
                np.int64(m),
                *out,
            ),
        )
        return out


def _host(array: Any) -> np.ndarray:
    """Copy an array of any module to NumPy (a host round trip for a device one)."""
    get = getattr(array, "get", None)
    return np.asarray(get() if callable(get) else array)


# ---- the CuPy layer ---------------------------------------------------------------------------


def device_verifier(
    states: Any, offsets: Any, weights: Any, exponents: Any, squared_norms: Any
) -> Verifier:
    """Upload sorted features once and verify pairs on the GPU with the compiled kernel.

    Parameters
    ----------
    states, offsets, weights, exponents, squared_norms : ndarray or cupy.ndarray
        As for `Verifier` (the arrays of ``DocumentFeatures``), host or device.

    Returns
    -------
    Verifier
        ``pair_similarities(left, right)`` returns CuPy arrays.

    Raises
    ------
    RuntimeError
        No usable GPU.
    TypeError, ValueError
        As `Verifier`.
    """
    cupy = _backend.require_gpu()
    return Verifier(cupy, _launcher(), states, offsets, weights, exponents, squared_norms)


@functools.cache
def _launcher() -> kernels.Launcher:
    """Return the process's kernel launcher (the device's SM count asked once)."""
    return kernels.Launcher()


def pair_similarities(
    states: Any,
    offsets: Any,
    weights: Any,
    exponents: Any,
    squared_norms: Any,
    left: Any,
    right: Any,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Verify pairs on the GPU: ``_cpu._verify_loops.pair_similarities``'s arguments and results.

    Parameters
    ----------
    states, offsets, weights, exponents, squared_norms : ndarray or cupy.ndarray
        As for `Verifier`.
    left, right : ndarray or cupy.ndarray, shape (m,), dtype int64
        The pairs.

    Returns
    -------
    cosine, jaccard, weighted : ndarray, shape (m,), dtype float64
        On the host; bit for bit the CPU loop's.

    Raises
    ------
    RuntimeError
        No usable GPU.
    TypeError, ValueError
        As `Verifier` and `Verifier.pair_similarities`.
    """
    verifier = device_verifier(states, offsets, weights, exponents, squared_norms)
    cosine, jaccard, weighted = verifier.pair_similarities(left, right)
    return _host(cosine), _host(jaccard), _host(weighted)

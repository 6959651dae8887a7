"""Checks at the public boundary, shared by every engine so they raise identical errors."""

from __future__ import annotations

import numbers
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np

from gpusimhash._choices import DEVICES, MAX_BITS, MIN_BITS

if TYPE_CHECKING:
    from gpusimhash.features import FeatureBatch


def _integer(value: Any, name: str) -> int:
    """Return ``value`` as an int, refusing bools, floats and other kinds."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__} {value!r}")
    return int(value)


def bits(value: Any) -> int:
    """Validate a fingerprint length.

    Parameters
    ----------
    value : int
        A multiple of 8 in ``[8, 4096]``.

    Returns
    -------
    int

    Raises
    ------
    TypeError
        Not an integer.
    ValueError
        Out of range or not a multiple of 8.
    """
    value = _integer(value, "bits")
    if value % 8 or not MIN_BITS <= value <= MAX_BITS:
        raise ValueError(f"bits must be a multiple of 8 in [{MIN_BITS}, {MAX_BITS}], got {value}")
    return value


def seed(value: Any) -> int:
    """Validate a global seed: an integer in ``[0, 2**32)``.

    Parameters
    ----------
    value : int
        The seed.

    Returns
    -------
    int

    Raises
    ------
    TypeError
        Not an integer.
    ValueError
        Out of range.
    """
    value = _integer(value, "seed")
    if not 0 <= value < 2**32:
        raise ValueError(f"seed must be in [0, 2**32), got {value}")
    return value


def positive_integer(value: Any, name: str) -> int:
    """Validate an integer >= 1 (a batch size, a block count).

    Parameters
    ----------
    value : int
        The value.
    name : str
        Its argument name, for the message.

    Returns
    -------
    int

    Raises
    ------
    TypeError
        Not an integer.
    ValueError
        Less than 1.
    """
    value = _integer(value, name)
    if value < 1:
        raise ValueError(f"{name} must be >= 1, got {value}")
    return value


def recall(value: Any) -> float:
    """Return a recall as a float in ``(0, 1)``, or raise naming the problem.

    Raises
    ------
    TypeError
        Not a real number (bools too).
    ValueError
        Outside ``(0, 1)``.

    Examples
    --------
    >>> recall(0.99)
    0.99
    """
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise TypeError(f"recall must be a number, got {type(value).__name__}")
    if not 0.0 < float(value) < 1.0:
        raise ValueError(f"recall must be in (0, 1), got {value!r}")
    return float(value)


def device(value: Any) -> str:
    """Validate a device name: ``"auto"``, ``"cpu"`` or ``"gpu"``.

    Parameters
    ----------
    value : str
        The device.

    Returns
    -------
    str

    Raises
    ------
    ValueError
        Any other value.
    """
    if value not in DEVICES:
        raise ValueError(f"device must be one of {DEVICES}, got {value!r}")
    return str(value)


def codes(value: Any, name: str = "codes") -> np.ndarray:
    """Validate packed fingerprints: a 2-D uint8 array with at least one byte per row.

    Parameters
    ----------
    value : array_like
        Packed codes, shape ``(n, bits // 8)``; a single 1-D code is taken as one row.
    name : str
        Argument name, for the message.

    Returns
    -------
    ndarray, shape (n, bits // 8), dtype uint8, C-contiguous

    Raises
    ------
    TypeError
        Not a uint8 array (codes are never cast: a view and a value cast mean different things).
    ValueError
        Not 1-D or 2-D, or zero bytes wide.
    """
    array = np.asarray(value)
    if array.dtype != np.uint8:
        raise TypeError(f"{name} must be packed uint8 codes, got dtype {array.dtype}")
    if array.ndim == 1:
        array = array[np.newaxis, :]
    if array.ndim != 2 or array.shape[1] == 0:
        raise ValueError(f"{name} must have shape (n, bits // 8), got {array.shape}")
    return np.ascontiguousarray(array)


def indices(values: Any, upper: int, what: str) -> np.ndarray:
    """Check that an array holds integers in ``[0, upper)``: indices the compiled loops trust.

    Parameters
    ----------
    values : ndarray of int
        The indices.
    upper : int
        One past the largest index allowed.
    what : str
        Their name in the message.

    Returns
    -------
    ndarray
        ``values``, unchanged.

    Raises
    ------
    TypeError
        Not a NumPy array of integers.
    ValueError
        An index outside ``[0, upper)``.
    """
    if not isinstance(values, np.ndarray) or values.dtype.kind not in "iu":
        kind = getattr(values, "dtype", type(values).__name__)
        raise TypeError(f"{what} must be a numpy array of integers, got {kind}")
    if values.size and not (values.min() >= 0 and values.max() < upper):
        raise ValueError(f"{what} must lie in [0, {upper}), got {values.min()} to {values.max()}")
    return values


def device_batch(xp: ModuleType, batch: FeatureBatch) -> tuple[Any, Any, Any | None]:
    """Validate a FeatureBatch whose arrays live on the device (of module ``xp``).

    Parameters
    ----------
    xp : module
        The arrays' module.
    batch : FeatureBatch
        The batch.

    Returns
    -------
    states, offsets, weights
        C-contiguous arrays of the batch.

    Raises
    ------
    TypeError
        An array of another module or dtype.
    ValueError
        Wrong shapes, offsets that do not start at 0, decrease or end past ``nnz``, or NaN or
        infinite weights.
    """
    arrays = {"states": batch.states, "offsets": batch.offsets, "weights": batch.weights}
    expected = {"states": "uint32", "offsets": "int64", "weights": "float64"}
    for name, array in arrays.items():
        if array is None and name == "weights":
            continue
        if not isinstance(array, xp.ndarray) or array.dtype != np.dtype(expected[name]):
            kind = getattr(array, "dtype", type(array).__name__)
            raise TypeError(f"{name} must be a {xp.__name__} {expected[name]} array, got {kind}")
        if array.ndim != 1:
            raise ValueError(f"{name} must be one-dimensional, got shape {array.shape}")
    return _batch_structure(xp, batch)


def host_batch(batch: FeatureBatch) -> None:
    """Validate the structure of a FeatureBatch on the host, as `device_batch` does there.

    The compiled loops index its arrays by its offsets unchecked: offsets past the states would
    read (and write) outside them.

    Parameters
    ----------
    batch : FeatureBatch
        The batch; its states and weights are converted where they are used.

    Raises
    ------
    TypeError
        An array that is not a NumPy array, or offsets that are not integers.
    ValueError
        As `device_batch`.
    """
    for name in ("states", "offsets", "weights"):
        array = getattr(batch, name)
        if array is None and name == "weights":
            continue
        if not isinstance(array, np.ndarray):
            raise TypeError(f"{name} must be a numpy array, got {type(array).__name__}")
        if array.ndim != 1:
            raise ValueError(f"{name} must be one-dimensional, got shape {array.shape}")
    if batch.offsets.dtype.kind not in "iu":
        raise TypeError(f"offsets must be integers, got {batch.offsets.dtype}")
    _batch_structure(np, batch)


def _batch_structure(xp: ModuleType, batch: FeatureBatch) -> tuple[Any, Any, Any | None]:
    """Check a batch's offsets and weights against its states; return its arrays, contiguous."""
    states, offsets = xp.ascontiguousarray(batch.states), xp.ascontiguousarray(batch.offsets)
    nnz = states.size
    if offsets.size < 1 or int(offsets[0]) != 0 or int(offsets[-1]) != nnz:
        raise ValueError(
            f"offsets must run from 0 to nnz = {nnz}, got "
            + (f"{int(offsets[0])} to {int(offsets[-1])}" if offsets.size else "none")
        )
    if bool((offsets[1:] < offsets[:-1]).any()):
        raise ValueError("offsets must be non-decreasing")
    weights = batch.weights
    if weights is not None:
        weights = xp.ascontiguousarray(weights)
        if weights.shape != (nnz,):
            raise ValueError(f"weights must have shape ({nnz},), got {weights.shape}")
        if not bool(xp.isfinite(weights).all()):
            raise ValueError("weights must be finite (no NaN or infinity)")
    return states, offsets, weights

"""The GPU parity probe: a process uses its GPU only once the GPU has matched the CPU there.

The first GPU use of a kernel family in a process (``fingerprint``, ``join``, ``knn``,
``verify``; ``probe_cases`` lists the inputs) first runs that family on a small fixed input and
compares the results with the CPU path, bit for bit. A difference, or any error on the GPU side
(a CUDA or NVRTC error, an illegal memory access, a missing library), fails the probe for the
whole process:

- `trusted`, behind ``device="auto"``, warns once (`GpuProbeWarning`, naming what failed) and
  answers False from then on, so the CPU computes the rest of the process, exactly;
- `require`, behind ``device="gpu"``, raises `GpuProbeError` with the same words, every time.

A family that passed is not probed again in the process. Setting the environment variable
``GPUSIMHASH_SKIP_GPU_PROBE=1`` skips the probe (the GPU is trusted unchecked).

Examples
--------
>>> trusted(("fingerprint",)) in (True, False)  # False without a GPU, probing nothing
True
"""

from __future__ import annotations

import logging
import os
import threading
import time
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gpusimhash import _backend
from gpusimhash._gpu.probe_cases import CASES, SEED, Device

__all__ = [
    "FAMILIES",
    "SKIP_VARIABLE",
    "GpuProbeError",
    "GpuProbeWarning",
    "Outcome",
    "gpu_device",
    "require",
    "run",
    "trusted",
]

FAMILIES = tuple(CASES)
SKIP_VARIABLE = "GPUSIMHASH_SKIP_GPU_PROBE"
_LOGGER = logging.getLogger(__name__)


class GpuProbeWarning(RuntimeWarning):
    """The GPU failed the parity probe: ``device="auto"`` uses the CPU instead."""


class GpuProbeError(RuntimeError):
    """The GPU failed the parity probe, and ``device="gpu"`` was asked for."""


@dataclass(frozen=True)
class Outcome:
    """What one probe run found.

    Attributes
    ----------
    failure : str or None
        What failed (family, case and the difference or the error), None when all matched.
    seconds : dict of str to float
        Wall seconds of each family probed (CPU answers, GPU calls and compiles included).
    """

    failure: str | None
    seconds: dict[str, float]


def gpu_device() -> Device:
    """Return the process's GPU: CuPy, the compiled kernels and the fingerprint pipeline."""
    cupy = _backend.require_gpu()
    from gpusimhash import _gpu
    from gpusimhash._gpu import kernels

    def fingerprint(kind: str, batch: Any, featurizer: Any, bits: int, seed: int) -> Any:
        return _gpu.fingerprint_batches([(kind, 0, batch)], featurizer, bits=bits, seed=seed)

    return Device(cupy, kernels.Launcher(), fingerprint)


def run(families: Iterable[str], device: Device) -> Outcome:
    """Probe ``families`` on ``device``; stop at the first difference or error.

    Parameters
    ----------
    families : iterable of str
        Names from `FAMILIES`.
    device : Device
        The GPU side (`gpu_device`).

    Returns
    -------
    Outcome

    Raises
    ------
    KeyError
        An unknown family.
    """
    seconds: dict[str, float] = {}
    for family in families:
        start = time.perf_counter()
        failure = _run_family(family, device)
        seconds[family] = time.perf_counter() - start
        if failure is not None:
            return Outcome(f"{family}, {failure}", seconds)
    return Outcome(None, seconds)


def _run_family(family: str, device: Device) -> str | None:
    """Describe the first case of ``family`` that differs or raises on the GPU (else None)."""
    cases = CASES[family](device, np.random.default_rng(SEED))
    for case in cases:  # the CPU answers are computed here, outside the GPU's try
        try:
            got = case.run()
        except Exception as error:  # noqa: BLE001 - any GPU-side error fails the probe
            return f"{case.label}: {type(error).__name__}: {error}"
        problem = case.compare(got, case.expected)
        if problem is not None:
            return f"{case.label}: {problem}"
    return None


@dataclass
class _State:
    """The process's probe results: families that passed, the failure, whether it was shown."""

    passed: set[str] = field(default_factory=set)
    failure: str | None = None
    warned: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)

    def failure_for(self, uses: Iterable[str]) -> str | None:
        """Probe the families of ``uses`` not yet passed; the failure message, or None."""
        if os.environ.get(SKIP_VARIABLE, "0") not in ("", "0"):
            return None
        with self.lock:
            pending = [family for family in uses if family not in self.passed]
            if self.failure is not None or not pending:
                return self.failure
            try:
                device = gpu_device()
            except Exception as error:  # noqa: BLE001 - the device could not even be set up
                outcome = Outcome(f"setting up the device: {type(error).__name__}: {error}", {})
            else:  # an error on the CPU side (the answers) is no GPU fault: it propagates
                outcome = run(pending, device)
            if outcome.failure is None:
                self.passed.update(pending)
                _LOGGER.debug("GPU parity probe passed: %s", outcome.seconds)
            else:
                self.failure = f"the GPU failed the CPU parity probe: {outcome.failure}"
            return self.failure


_STATE = _State()


def trusted(uses: Iterable[str]) -> bool:
    """Whether ``device="auto"`` may use the GPU for the families ``uses`` (probed on first use).

    Parameters
    ----------
    uses : iterable of str
        Names from `FAMILIES`.

    Returns
    -------
    bool
        False without a usable GPU, or once the probe failed in this process (with one
        `GpuProbeWarning`, the first time).
    """
    if not _backend.gpu_available():
        return False
    failure = _STATE.failure_for(uses)
    if failure is None:
        return True
    with _STATE.lock:
        first, _STATE.warned = not _STATE.warned, True
    if first:
        message = f"{failure}; the CPU computes instead for the rest of this process"
        warnings.warn(message, GpuProbeWarning, stacklevel=3)
    return False


def require(uses: Iterable[str]) -> None:
    """Check that ``device="gpu"`` may use the GPU for the families ``uses``.

    Parameters
    ----------
    uses : iterable of str
        Names from `FAMILIES`.

    Raises
    ------
    RuntimeError
        No usable GPU (with an install hint).
    GpuProbeError
        The GPU failed the probe in this process (a RuntimeError naming what failed).
    """
    _backend.require_gpu()
    failure = _STATE.failure_for(uses)
    if failure is not None:
        raise GpuProbeError(f"{failure}; device='gpu' refuses it (device='auto' uses the CPU)")

"""CPU fingerprinting: the engine every other engine is tested against.

Feature states get their seed suffix in one vectorized pass; then each document's entries draw
their xorshift32 sign words and add their fixed-point weights to int64 slots in a compiled loop
(``_loops.accumulate_codes``), documents in parallel. Integer arithmetic makes the result exact
and independent of order and threading.
"""

from __future__ import annotations

import numpy as np

from gpusimhash._cpu._loops import accumulate_codes, accumulate_unit_codes
from gpusimhash.features import FeatureBatch
from gpusimhash.fixedpoint import quantize
from gpusimhash.hashing import seed_states


def fingerprint_batch(batch: FeatureBatch, *, bits: int, seed: int) -> np.ndarray:
    """Fingerprint a batch of documents on the CPU.

    Parameters
    ----------
    batch : FeatureBatch
        Validated documents.
    bits : int
        Fingerprint length, a multiple of 8.
    seed : int
        Global seed in ``[0, 2**32)``.

    Returns
    -------
    codes : ndarray, shape (batch.n_docs, bits // 8), dtype uint8
        Packed fingerprints, bit ``i`` in byte ``i // 8`` at position ``i % 8``.
    """
    hashes = seed_states(batch.states, seed)
    if batch.weights is None:  # unit weights: bit-sliced counters, the same bits
        offsets = np.ascontiguousarray(batch.offsets)
        return accumulate_unit_codes(hashes, offsets, bits)
    weights = quantize(batch.entry_weights(), batch.offsets)
    offsets = np.ascontiguousarray(batch.offsets)
    return accumulate_codes(hashes, offsets, weights, bits)

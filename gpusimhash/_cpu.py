"""NumPy fingerprinting: the oracle every other engine is tested against.

Each distinct feature state in the batch is hashed once (vocabulary level); the weighted signs are
then summed for all documents at once as one sparse integer matrix product,
``slots = Q @ S``, where ``Q`` holds the fixed-point weights (documents x distinct features) and
``S`` the +1/-1 sign of every feature on every bit. Integer arithmetic makes the result exact.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from gpusimhash.features import FeatureBatch
from gpusimhash.fixedpoint import quantize
from gpusimhash.hashing import seed_states, unpack_words, xorshift32_words

# Sign columns per sparse product (a multiple of 32): bounds the dense int64 sign block at
# 512 bytes per distinct feature.
BITS_PER_PASS = 64


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
    codes = np.zeros((batch.n_docs, bits // 8), dtype=np.uint8)
    if batch.nnz == 0:
        return codes
    distinct, column = np.unique(batch.states, return_inverse=True)
    words = xorshift32_words(seed_states(distinct, seed), -(-bits // 32))
    weights = quantize(batch.entry_weights(), batch.offsets)
    matrix = sp.csr_matrix(
        (weights, column.astype(np.int64), batch.offsets), shape=(batch.n_docs, distinct.size)
    )
    for first in range(0, bits, BITS_PER_PASS):
        last = min(bits, first + BITS_PER_PASS)
        block = unpack_words(words[:, first // 32 : -(-last // 32)])[:, : last - first]
        signs = block.astype(np.int64) * 2 - 1
        slots = matrix @ signs
        codes[:, first // 8 : last // 8] = np.packbits(slots > 0, axis=1, bitorder="little")
    return codes

"""Fingerprint Dask collections partition by partition.

Fingerprints depend only on a document, the bits and the seed, never on batching, so every
partition of a Dask collection is fingerprinted where it lives and the codes come back as one
Dask array: 8 bytes per document at 64 bits, small enough to gather for ``near_duplicates``
even for a billion documents. Install with ``pip install 'gpusimhash[dask]'``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpusimhash import _validate
from gpusimhash.fingerprinting import fingerprint
from gpusimhash.text import TextFeaturizer


def _partition_codes(
    partition: Any, bits: int, seed: int, featurizer: TextFeaturizer | None, device: str
) -> np.ndarray:
    """Fingerprint one partition (a list, or a pandas Series of texts)."""
    documents = partition.tolist() if hasattr(partition, "tolist") else list(partition)
    return fingerprint(documents, bits=bits, seed=seed, featurizer=featurizer, device=device)


def fingerprint_collection(
    collection: Any,
    *,
    bits: int = 64,
    seed: int = 0,
    featurizer: TextFeaturizer | None = None,
    device: str = "auto",
) -> Any:
    """Fingerprint every document of a Dask bag or Series, partition by partition.

    Parameters
    ----------
    collection : dask.bag.Bag or dask.dataframe.Series
        Documents of any kind ``fingerprint`` accepts (texts, mappings, pair lists), in order.
    bits, seed, featurizer, device
        As for ``fingerprint``; ``device`` is resolved on each worker, so GPU workers use
        their GPU and the others their CPUs, with identical codes.

    Returns
    -------
    dask.array.Array, shape (n_docs, bits // 8), dtype uint8
        One chunk per partition, in the collection's order; ``.compute()`` gathers the codes.

    Raises
    ------
    TypeError
        A collection without partitions (``to_delayed``).
    ValueError
        Bad ``bits``, ``seed`` or ``device``.

    Examples
    --------
    >>> import dask.bag as db
    >>> texts = ["a cat", "A cat!", "a dog"]
    >>> codes = fingerprint_collection(db.from_sequence(texts, npartitions=2), bits=64)
    >>> bool((codes.compute() == fingerprint(texts, bits=64)).all())
    True
    """
    import dask
    import dask.array as da

    bits, seed = _validate.bits(bits), _validate.seed(seed)
    _validate.device(device)
    if not hasattr(collection, "to_delayed"):
        raise TypeError(
            f"expected a Dask bag or Series, got {type(collection).__name__}; "
            "use fingerprint() for in-memory documents"
        )
    compute = dask.delayed(_partition_codes, pure=True)  # type: ignore[attr-defined]
    chunks = [
        da.from_delayed(  # type: ignore[no-untyped-call]
            compute(partition, bits, seed, featurizer, device),
            shape=(np.nan, bits // 8),
            dtype=np.uint8,
        )
        for partition in collection.to_delayed()
    ]
    if not chunks:
        return da.zeros((0, bits // 8), dtype=np.uint8)
    return da.concatenate(chunks, axis=0, allow_unknown_chunksizes=True)  # type: ignore[no-untyped-call]

"""The public ``fingerprint``: validate, featurize, dispatch to the CPU or GPU engine, return."""

from __future__ import annotations

import itertools
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gpusimhash import _backend, _missing, _validate
from gpusimhash._batching import chunks
from gpusimhash._cpu._fingerprint import fingerprint_batch as cpu_fingerprint_batch
from gpusimhash.features import FeatureBatch
from gpusimhash.text import TextFeaturizer
from gpusimhash.utf8 import Utf8Texts, is_arrow_text
from gpusimhash.vectors import sparse_batches, vectors_batch

DEFAULT_BATCH_SIZE = 131_072


def _is_sparse(vectors: Any) -> bool:
    """Tell whether ``vectors`` is a SciPy sparse matrix, without importing SciPy.

    Unless SciPy's sparse module is imported already, nothing can be one of its matrices.
    """
    sparse = sys.modules.get("scipy.sparse")
    return sparse is not None and bool(sparse.issparse(vectors))


def resolve_device(device: str, uses: Sequence[str] = ("fingerprint",)) -> str:
    """Turn ``"auto"`` into ``"gpu"`` or ``"cpu"``; check that an asked-for GPU exists.

    A GPU is used only once it has passed the parity probe (`gpusimhash._gpu.probe`) for the
    kernel families the caller is about to run, on their first use in the process.

    Parameters
    ----------
    device : {"auto", "cpu", "gpu"}
        What the caller asked for.
    uses : sequence of str
        Kernel families the caller runs on the GPU: ``"fingerprint"``, ``"join"``, ``"knn"``,
        ``"verify"``.

    Returns
    -------
    str
        ``"cpu"`` or ``"gpu"``: ``"cpu"`` for ``"auto"`` when no GPU is usable or the GPU
        failed the probe (one warning says what failed).

    Raises
    ------
    ValueError
        An unknown device name.
    RuntimeError
        ``"gpu"`` without CuPy or a CUDA device, or with a GPU that failed the probe.

    Examples
    --------
    >>> resolve_device("cpu")
    'cpu'
    """
    device = _validate.device(device)
    if device == "cpu" or (device == "auto" and not _backend.gpu_available()):
        return "cpu"
    from gpusimhash._gpu import probe

    if device == "gpu":
        probe.require(uses)
        return "gpu"
    return "gpu" if probe.trusted(uses) else "cpu"


@dataclass(frozen=True)
class FingerprintSettings:
    """What makes two fingerprints comparable: length, seed and featurizer.

    The triple a `SimHashIndex` saves, a dedup run reports and every engine needs; codes made
    under different settings must never be compared.

    Parameters
    ----------
    bits : int
        Fingerprint length: a multiple of 8 in ``[8, 4096]``.
    seed : int
        Global hash seed in ``[0, 2**32)``.
    featurizer : TextFeaturizer
        How text becomes weighted features (default: lower-cased words weighted by count).

    Raises
    ------
    TypeError, ValueError
        A bad ``bits``, ``seed`` or featurizer.

    Examples
    --------
    >>> settings = FingerprintSettings(bits=64)
    >>> settings.fingerprint(["the cat sat", "The cat sat!"]).shape
    (2, 8)
    """

    bits: int = 64
    seed: int = 0
    featurizer: TextFeaturizer = field(default_factory=TextFeaturizer)

    def __post_init__(self) -> None:
        """Validate the settings."""
        object.__setattr__(self, "bits", _validate.bits(self.bits))
        object.__setattr__(self, "seed", _validate.seed(self.seed))
        if not isinstance(self.featurizer, TextFeaturizer):
            raise TypeError(
                f"featurizer must be a TextFeaturizer, got {type(self.featurizer).__name__}"
            )

    def fingerprint(self, vectors: Any, *, device: str = "auto", **options: Any) -> np.ndarray:
        """Fingerprint documents under these settings (see `fingerprint` for ``options``).

        Parameters
        ----------
        vectors : sequence or iterable of documents, or scipy sparse matrix
            As for `fingerprint`.
        device : {"auto", "cpu", "gpu"}
            Where to compute.
        **options
            ``vocabulary``, ``batch_size`` and ``on_missing`` of `fingerprint`.

        Returns
        -------
        ndarray, shape (n_docs, bits // 8), dtype uint8
        """
        return fingerprint(
            vectors,
            bits=self.bits,
            seed=self.seed,
            device=device,
            featurizer=self.featurizer,
            **options,
        )


def _input_kind(first: Any) -> str:
    """Classify the input by its first document."""
    if isinstance(first, str):
        return "text"
    if isinstance(first, Mapping):
        return "mapping"
    if isinstance(first, Sequence) and not isinstance(first, bytes):
        return "pairs"
    raise TypeError(
        "document 0: expected text (str), a mapping {feature: weight} or a list of "
        f"(feature, weight) pairs, got {type(first).__name__}"
    )


def _featurizer(featurizer: Any) -> TextFeaturizer:
    """Return the featurizer argument, or the default one for None."""
    if featurizer is None:
        return TextFeaturizer()
    if not isinstance(featurizer, TextFeaturizer):
        raise TypeError(f"featurizer must be a TextFeaturizer, got {type(featurizer).__name__}")
    return featurizer


def _batches(
    vectors: Any,
    vocabulary: Sequence[str] | None,
    featurizer: TextFeaturizer,
    batch_size: int,
) -> Iterator[tuple[str, int, Any]]:
    """Yield ``(kind, first_index, batch)``: str lists, Utf8Texts or FeatureBatches."""
    if is_arrow_text(vectors):
        vectors = Utf8Texts.from_arrow(vectors)
    if isinstance(vectors, Utf8Texts):
        if vocabulary is not None:
            raise ValueError("vocabulary= is only for a scipy sparse matrix input")
        for first in range(0, len(vectors), batch_size):
            yield "utf8", first, vectors[first : first + batch_size]
        return
    if _is_sparse(vectors):
        if vocabulary is None:
            raise ValueError("a sparse matrix needs vocabulary= (the feature of each column)")
        for first, batch in sparse_batches(vectors, vocabulary, batch_size):
            yield "vectors", first, batch
        return
    if vocabulary is not None:
        raise ValueError("vocabulary= is only for a scipy sparse matrix input")
    zero_dimensional = isinstance(vectors, np.ndarray) and vectors.ndim == 0
    if (
        isinstance(vectors, (str, bytes, Mapping))
        or not isinstance(vectors, Iterable)
        or (zero_dimensional)
    ):
        raise TypeError(
            "vectors must be a sequence or iterable of documents, a scipy sparse matrix with "
            f"vocabulary=, got {type(vectors).__name__}"
        )
    documents: Iterable[Any]
    if isinstance(vectors, Sequence):
        if not len(vectors):
            return
        kind, documents = _input_kind(vectors[0]), vectors
    else:
        iterator = iter(vectors)
        head = list(itertools.islice(iterator, 1))
        if not head:
            return
        kind, documents = _input_kind(head[0]), itertools.chain(head, iterator)
    first = 0
    for chunk in chunks(documents, batch_size):
        if kind == "text":
            yield "text", first, chunk
        else:
            yield "vectors", first, vectors_batch(chunk, kind, first)
        first += len(chunk)


def fingerprint(
    vectors: Any,
    *,
    bits: int = 64,
    seed: int = 0,
    device: str = "auto",
    vocabulary: Sequence[str] | None = None,
    featurizer: TextFeaturizer | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    on_missing: str = "error",
) -> np.ndarray:
    """Compute SimHash fingerprints of weighted feature vectors, bit for bit the seed's reference.

    Parameters
    ----------
    vectors : sequence or iterable of documents, scipy sparse matrix, or UTF-8 texts
        Every document of one kind: a mapping ``{feature: weight}``; a list of
        ``(feature, weight)`` pairs; a raw text string (featurized by ``featurizer``); or the
        rows of a sparse matrix whose columns ``vocabulary`` names. Any iterable is consumed
        once, in batches of ``batch_size`` documents, so memory stays bounded. Texts may also
        come as UTF-8 bytes, with no Python string per document: a `gpusimhash.utf8.Utf8Texts`
        or a pyarrow ``string``/``large_string`` array or chunked array (its buffers are read
        in place). A pandas ``Series`` is an iterable of its values.
    bits : int
        Fingerprint length: a multiple of 8 in ``[8, 4096]``.
    seed : int
        Global hash seed in ``[0, 2**32)``.
    device : {"auto", "cpu", "gpu"}
        Where to compute; ``"auto"`` uses a GPU when CuPy and a CUDA device are present and
        the GPU passed the parity probe (`resolve_device`). Both give identical codes.
    vocabulary : sequence of str, optional
        Feature names of the sparse matrix's columns.
    featurizer : TextFeaturizer, optional
        How text becomes features (default: lower-cased word tokens weighted by count).
    batch_size : int
        Documents per batch.
    on_missing : {"error", "featureless"}
        A missing text in a pyarrow array or a pandas Series (null, None, NaN, NA): a
        ValueError naming the first one, or an empty text (a featureless document, whose code
        is the code of ``""``).

    Returns
    -------
    codes : ndarray, shape (n_docs, bits // 8), dtype uint8
        Bit ``i`` of a fingerprint is bit ``i % 8`` (least significant first) of byte ``i // 8``:
        FAISS's binary layout.

    Raises
    ------
    TypeError
        A document, feature or weight of the wrong kind (the message names the document), or
        a ``featurizer`` that is not a TextFeaturizer.
    ValueError
        A bad ``bits``, ``seed``, ``device`` or ``batch_size``; NaN or infinite weights; a
        malformed pair; a sparse matrix without a matching vocabulary; bytes that are not
        valid UTF-8; a missing text with ``on_missing="error"``; an unknown ``on_missing``.
    RuntimeError
        ``device="gpu"`` where no GPU is usable or the GPU failed the parity probe.

    Examples
    --------
    >>> fingerprint([{"apple": 3, "pie": 1}], bits=16, seed=12345).shape
    (1, 2)
    >>> codes = fingerprint(["the cat sat", "The cat sat!", "a dog ran"], bits=64)
    >>> bool((codes[0] == codes[1]).all())
    True
    >>> import pandas as pd
    >>> codes = fingerprint(pd.Series(["a dog ran", None]), bits=64, on_missing="featureless")
    >>> bool((codes[1] == fingerprint([""], bits=64)[0]).all())
    True
    """
    bits = _validate.bits(bits)
    seed = _validate.seed(seed)
    batch_size = _validate.positive_integer(batch_size, "batch_size")
    vectors = _missing.resolve(vectors, on_missing)
    engine = resolve_device(device)
    featurizer = _featurizer(featurizer)
    batches = _batches(vectors, vocabulary, featurizer, batch_size)
    if engine == "gpu":  # every batch through one pipeline, one copy back at the end
        from gpusimhash import _gpu

        codes = _gpu.fingerprint_batches(batches, featurizer, bits=bits, seed=seed)
        return _backend.to_host(codes)
    results = [
        _fingerprint_one(kind, first, batch, featurizer, bits, seed)
        for kind, first, batch in batches
    ]
    if not results:
        return np.zeros((0, bits // 8), dtype=np.uint8)
    return np.concatenate(results) if len(results) > 1 else results[0]


def _fingerprint_one(
    kind: str, first: int, batch: Any, featurizer: TextFeaturizer, bits: int, seed: int
) -> np.ndarray:
    """Fingerprint one batch on the CPU."""
    if kind in ("text", "utf8"):
        batch = featurizer.transform(batch, first_index=first)
    return cpu_fingerprint_batch(batch, bits=bits, seed=seed)


def fingerprint_device(
    documents: FeatureBatch | Sequence[str] | Utf8Texts | Any,
    *,
    bits: int = 64,
    seed: int = 0,
    featurizer: TextFeaturizer | None = None,
    on_missing: str = "error",
) -> Any:
    """Compute fingerprints on the GPU and keep them there, for GPU callers.

    Parameters
    ----------
    documents : FeatureBatch, sequence of str, Utf8Texts or pyarrow string array
        A batch whose arrays are CuPy (fingerprinted where they are) or NumPy (copied to the
        device), or raw texts, sent as UTF-8 and featurized on the device.
    bits : int
        Fingerprint length: a multiple of 8 in ``[8, 4096]``.
    seed : int
        Global hash seed in ``[0, 2**32)``.
    featurizer : TextFeaturizer, optional
        For texts (default: lower-cased word tokens weighted by count).
    on_missing : {"error", "featureless"}
        A missing text in a pyarrow array or a pandas Series, as for `fingerprint`.

    Returns
    -------
    codes : cupy.ndarray, shape (n_docs, bits // 8), dtype uint8
        The codes ``gpusimhash.fingerprinting`` returns, left on the device.

    Raises
    ------
    RuntimeError
        No usable GPU, or a GPU that failed the parity probe (`resolve_device`).
    TypeError
        Arrays of the wrong dtype, or a document that is not a str.
    ValueError
        Bad ``bits`` or ``seed``, malformed offsets, NaN or infinite weights, bytes that are
        not valid UTF-8, a missing text with ``on_missing="error"``.

    Examples
    --------
    >>> from gpusimhash import _backend
    >>> if _backend.gpu_available():
    ...     codes = fingerprint_device(["the cat sat", "a dog ran"], bits=64)
    ...     assert codes.shape == (2, 8)
    """
    bits = _validate.bits(bits)
    seed = _validate.seed(seed)
    documents = _missing.resolve(documents, on_missing)
    cupy = _backend.require_gpu()
    from gpusimhash import _gpu
    from gpusimhash._gpu import probe

    probe.require(("fingerprint",))

    if is_arrow_text(documents):
        documents = Utf8Texts.from_arrow(documents)
    if not isinstance(documents, FeatureBatch):
        featurizer = _featurizer(featurizer)
        texts = documents if isinstance(documents, Utf8Texts) else list(documents)
        return _gpu.fingerprint_text(texts, featurizer, bits=bits, seed=seed)
    if not isinstance(documents.states, cupy.ndarray):
        _validate.host_batch(documents)
        return _gpu.fingerprint_batch(documents, bits=bits, seed=seed)
    states, offsets, weights = _validate.device_batch(cupy, documents)
    engine = _gpu.device_engine()
    plan = engine.plan_tasks(offsets, capacity=int(states.size))  # sized on the host
    return engine.accumulate(states, offsets, weights, plan, bits=bits, seed=seed)


def featurize(
    documents: Any,
    featurizer: TextFeaturizer | None = None,
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
) -> FeatureBatch:
    """Turn documents into one FeatureBatch, as `gpusimhash.fingerprint` sees them.

    Parameters
    ----------
    documents : sequence or iterable of documents
        Texts, mappings ``{feature: weight}`` or lists of ``(feature, weight)`` pairs.
    featurizer : TextFeaturizer, optional
        For text (default: lower-cased words weighted by count).
    batch_size : int
        Documents featurized at a time.

    Returns
    -------
    FeatureBatch

    Raises
    ------
    TypeError, ValueError
        As `gpusimhash.fingerprint`, naming the document.

    Examples
    --------
    >>> featurize(["a b a", ""]).offsets.tolist()
    [0, 3, 3]
    """
    featurizer = TextFeaturizer() if featurizer is None else featurizer
    parts = [
        featurizer.transform(batch, first_index=first) if kind == "text" else batch
        for kind, first, batch in _batches(documents, None, featurizer, batch_size)
    ]
    if not parts:
        return FeatureBatch(np.zeros(0, np.uint32), np.zeros(1, np.int64), None)
    return FeatureBatch.concatenate(parts)


def fingerprint_batch(batch: FeatureBatch, engine: str, *, bits: int, seed: int) -> np.ndarray:
    """Fingerprint a host FeatureBatch on a resolved engine (``"cpu"`` or ``"gpu"``).

    Parameters
    ----------
    batch : FeatureBatch
        Validated documents.
    engine : {"cpu", "gpu"}
        As `gpusimhash.fingerprinting.resolve_device` returns.
    bits, seed : int
        Validated fingerprint length and seed.

    Returns
    -------
    codes : ndarray, shape (batch.n_docs, bits // 8), dtype uint8
        On the host.
    """
    if engine == "gpu":
        from gpusimhash import _gpu

        return _backend.to_host(_gpu.fingerprint_batch(batch, bits=bits, seed=seed))
    return cpu_fingerprint_batch(batch, bits=bits, seed=seed)

"""Memory of featurizing a batch: a document too long for the memory is named, with its file.

Featurizing a text takes memory in proportion to its tokens: at most `BYTES_PER_TEXT_BYTE`
bytes per byte of text (the densest text, one-letter words, measured at 17). A batch whose
longest document alone needs more than the memory available is refused before featurizing it
(`check_longest`), and memory that runs out while a batch is featurized is reported with the
batch's file and its longest document (`out_of_memory`), not as a problem of the join's pairs.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gpusimhash._memory import MemoryRefusal, check_memory
from gpusimhash.io.lines import LineBatch
from gpusimhash.io.readers import DocumentBatch as Batch

__all__ = ["BYTES_PER_TEXT_BYTE", "check_longest", "out_of_memory"]

# peak bytes of featurizing (tokens, their hashes, the features and the codes) per byte of text
BYTES_PER_TEXT_BYTE = 24


def check_longest(batch: Batch | LineBatch, where: Callable[[int], str]) -> None:
    """Refuse a batch whose longest document alone would not fit in the memory available.

    Parameters
    ----------
    batch : DocumentBatch or LineBatch
        The documents about to be featurized.
    where : callable
        ``where(row)`` names a row for messages (its file and document number).

    Raises
    ------
    MemoryRefusal
        The longest document's estimated need is over the memory available; the message names
        the document, its size and what to do.
    """
    if not len(batch):
        return
    k, size, unit = _longest(batch)
    try:
        check_memory(
            size * BYTES_PER_TEXT_BYTE,
            f"{where(int(batch.rows[k]))}: a text of {size:,} {unit} needs, to featurize,",
        )
    except MemoryRefusal as refusal:
        raise MemoryRefusal(f"{refusal}: split that document or leave it out") from None


def out_of_memory(batch: Batch | LineBatch, where: Callable[[int], str]) -> MemoryRefusal:
    """Return the error for memory that ran out while featurizing a batch.

    Parameters
    ----------
    batch : DocumentBatch or LineBatch
        The documents being featurized.
    where : callable
        ``where(row)`` names a row for messages.

    Returns
    -------
    MemoryRefusal
        Its message names the batch's longest document (file and number), its size and the
        batch's.

    Examples
    --------
    >>> from gpusimhash.utf8 import Utf8Texts
    >>> batch = LineBatch(np.arange(2), Utf8Texts.from_lines(b"a b" + bytes([10]) + b"c"))
    >>> where = lambda row: f"in.txt, document {row + 1}"
    >>> print(out_of_memory(batch, where))  # doctest: +ELLIPSIS
    out of memory featurizing in.txt, document 1: 3 bytes of text, the longest of a batch of 2 ...
    """
    k, size, unit = _longest(batch)
    return MemoryRefusal(
        f"out of memory featurizing {where(int(batch.rows[k]))}: {size:,} {unit} of text, the "
        f"longest of a batch of {len(batch):,} documents from document {int(batch.rows[0]) + 1:,} "
        f"of the input (featurizing takes up to {BYTES_PER_TEXT_BYTE} bytes per byte of text); a "
        "smaller --batch-size holds fewer documents at once, a document too long for the memory "
        "must be split or left out"
    )


def _longest(batch: Batch | LineBatch) -> tuple[int, int, str]:
    """Return the longest document's place in the batch, its length and the length's unit."""
    if isinstance(batch, LineBatch):
        sizes, unit = np.diff(batch.texts.offsets), "bytes"
    else:  # code points: as many bytes for ASCII, the densest text
        sizes, unit = np.fromiter(map(len, batch.texts), np.int64, len(batch)), "characters"
    k = int(np.argmax(sizes))
    return k, int(sizes[k]), unit

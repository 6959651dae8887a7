from typing import Any

import numpy as np

def rank_entries(offsets: np.ndarray, entry_rank: np.ndarray) -> np.ndarray: ...
def entry_shares(
    offsets: np.ndarray,
    ordered: np.ndarray,
    weights: np.ndarray,
    exponents: np.ndarray,
    squared_norms: np.ndarray,
    measure: int,
) -> tuple[np.ndarray, np.ndarray]: ...
def tail_starts(
    offsets: np.ndarray, share: np.ndarray, before: np.ndarray, measure: int, value: float
) -> np.ndarray: ...
def size_keys(
    offsets: np.ndarray,
    weights: np.ndarray,
    exponents: np.ndarray,
    squared_norms: np.ndarray,
    measure: int,
    value: float,
) -> tuple[np.ndarray, np.ndarray]: ...
def fill_postings(
    offsets: np.ndarray,
    ordered: np.ndarray,
    starts: np.ndarray,
    entry_rank: np.ndarray,
    share: np.ndarray,
    before: np.ndarray,
    n_ranks: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]: ...
def first_postings(
    offsets: np.ndarray,
    starts: np.ndarray,
    entry_rank: np.ndarray,
    ordered: np.ndarray,
    posting_offsets: np.ndarray,
    posting_docs: np.ndarray,
    first_partner: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]: ...
def passing_pairs(
    resume: np.ndarray, window: int, stop: int, room: int, *arguments: Any
) -> None: ...  # then the index's arrays, the documents', the threshold and the outputs

import numpy as np

NOT_VERIFIED: int
COSINE: int
JACCARD: int

def fill_adjacency(
    pairs: np.ndarray, adjacency_offsets: np.ndarray, cursor: np.ndarray, adjacency: np.ndarray
) -> None: ...
def lazy_star(
    order: np.ndarray,
    kept: np.ndarray,
    similarity: np.ndarray,
    live: np.ndarray,
    unit_code: np.ndarray,
    code_offsets: np.ndarray,
    code_units: np.ndarray,
    adjacency_offsets: np.ndarray,
    adjacency: np.ndarray,
    local: np.ndarray,
    states: np.ndarray,
    offsets: np.ndarray,
    weights: np.ndarray,
    exponents: np.ndarray,
    squared_norms: np.ndarray,
    measure: int,
    value: float,
    batch: int,
    batch_candidates: int,
) -> int: ...
def lazy_components(
    parent: np.ndarray,
    code_start: int,
    code_stop: int,
    unit_code: np.ndarray,
    code_offsets: np.ndarray,
    code_units: np.ndarray,
    adjacency_offsets: np.ndarray,
    adjacency: np.ndarray,
    local: np.ndarray,
    states: np.ndarray,
    offsets: np.ndarray,
    weights: np.ndarray,
    exponents: np.ndarray,
    squared_norms: np.ndarray,
    measure: int,
    value: float,
) -> int: ...
def flatten_forest(parent: np.ndarray) -> np.ndarray: ...
def first_seen_numbers(labels: np.ndarray, table: np.ndarray) -> np.ndarray: ...

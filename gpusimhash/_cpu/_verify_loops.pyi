import numpy as np

def merge_documents(
    states: np.ndarray, offsets: np.ndarray, weights: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]: ...
def pair_similarities(
    states: np.ndarray,
    offsets: np.ndarray,
    weights: np.ndarray,
    exponents: np.ndarray,
    squared_norms: np.ndarray,
    left: np.ndarray,
    right: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]: ...
def star_assign(
    order: np.ndarray, neighbour_offsets: np.ndarray, neighbours: np.ndarray, similarity: np.ndarray
) -> tuple[np.ndarray, np.ndarray]: ...
def feature_hashes(states: np.ndarray, offsets: np.ndarray, weights: np.ndarray) -> np.ndarray: ...
def same_features(
    states: np.ndarray,
    offsets: np.ndarray,
    weights: np.ndarray,
    left: np.ndarray,
    right: np.ndarray,
) -> np.ndarray: ...

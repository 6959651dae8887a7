import numpy as np

PART_BYTES: int

def utf8_tokens(
    data: np.ndarray, offsets: np.ndarray, word: np.ndarray, lower: np.ndarray, lowercase: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]: ...
def utf8_token_parts(
    data: np.ndarray, offsets: np.ndarray, word: np.ndarray, lower: np.ndarray, lowercase: bool
) -> list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, int, int]]: ...

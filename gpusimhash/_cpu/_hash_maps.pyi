import numpy as np

FAULTS: dict[int, str | None]

def map_fault(
    table: np.ndarray, b: int, id_bits: int, n_keys: int, codes: np.ndarray, first_bit: int
) -> tuple[int, int]: ...

"""Python's ``min`` and ``max`` of two floats, for the compiled loops.

``min(a, b)`` is ``a`` unless ``b < a``, and ``max(a, b)`` is ``a`` unless ``b > a``: with a NaN
or signed zeros, C's ``fmin``/``fmax`` and the ternary of the other order answer otherwise. The
loops keep Python's answers, so that their bits never depend on which form is compiled.
"""


cdef inline double py_min(double a, double b) noexcept nogil:
    """``min(a, b)`` as Python computes it."""
    return b if b < a else a


cdef inline double py_max(double a, double b) noexcept nogil:
    """``max(a, b)`` as Python computes it."""
    return b if b > a else a

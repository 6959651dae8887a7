import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from gpusimhash.fixedpoint import SUM_BITS, document_exponents, quantize

documents = st.lists(
    st.lists(st.floats(-1e300, 1e300, allow_nan=False, allow_subnormal=True), max_size=40),
    min_size=1,
    max_size=6,
)


def csr(docs):
    weights = np.array([w for doc in docs for w in doc], dtype=np.float64)
    offsets = np.cumsum([0] + [len(doc) for doc in docs]).astype(np.int64)
    return weights, offsets


@given(documents)
def test_any_sum_of_a_documents_weights_fits_in_int64(docs):
    weights, offsets = csr(docs)
    q = quantize(weights, offsets)
    for d in range(len(docs)):
        row = [abs(int(v)) for v in q[offsets[d] : offsets[d + 1]]]
        assert sum(row) <= 2**SUM_BITS


@given(st.lists(st.lists(st.integers(-(2**40), 2**40), max_size=30), min_size=1, max_size=5))
def test_integer_weights_are_scaled_exactly(docs):
    weights, offsets = csr(docs)
    q = quantize(weights, offsets)
    exponents = document_exponents(weights, offsets)
    for d, doc in enumerate(docs):
        scale = 2 ** int(exponents[d]) if exponents[d] >= 0 else None
        row = q[offsets[d] : offsets[d + 1]].tolist()
        if any(doc):
            assert scale is not None
            assert row == [w * scale for w in doc]
        else:
            assert row == [0] * len(doc)


@given(documents, st.integers(-200, 200))
def test_power_of_two_scaling_gives_the_same_integers(docs, shift):
    weights, offsets = csr(docs)
    with np.errstate(over="ignore", under="ignore"):
        scaled = np.ldexp(weights, shift)
    if not np.isfinite(scaled).all() or np.any((weights != 0) & (scaled == 0)):
        return  # the scaled weights left float64's range: nothing to compare
    if np.any((np.abs(scaled) < np.finfo(np.float64).tiny) & (scaled != 0)):
        return  # subnormals lose precision when scaled
    np.testing.assert_array_equal(quantize(scaled, offsets), quantize(weights, offsets))


def test_largest_weight_fills_the_budget_of_its_document():
    weights = np.array([1.0, -3.0, 2.0, 0.5, 0.0])
    offsets = np.array([0, 3, 4, 5])
    q = quantize(weights, offsets)
    # doc 0: n=3, L=2, M=3=0.75*2**2 -> e=62-2-2=58; doc 1: n=1, M=0.5 -> e=62; doc 2: all zero
    assert q.tolist() == [2**58, -3 * 2**58, 2 * 2**58, 2**61, 0]

// Hash and fixed-point helpers shared by every kernel; mirrors gpusimhash/hashing.py and
// gpusimhash/fixedpoint.py line for line (DESIGN.md is the contract).
//
// This file is not #included: gpusimhash/_gpu/kernels.py prefixes it (with a #line marker) to each
// kernel file before compiling, and tests/gpu/cuda_emu compiles the same text with g++.

// ---- hashing.py ---------------------------------------------------------------------------

// FNV_OFFSET_BASIS, FNV_PRIME
#define GSH_FNV_OFFSET_BASIS 0x811C9DC5u
#define GSH_FNV_PRIME 0x01000193u

// fnv1a_step: (state ^ unit) * 0x01000193 mod 2**32
static __device__ __forceinline__ unsigned int fnv1a_step(unsigned int state, unsigned int unit) {
    return (state ^ unit) * GSH_FNV_PRIME;
}

// utf16_units / to_utf16: a code point is one UTF-16 unit, or a surrogate pair when astral
// (a lone surrogate code point stays one unit, as with Python's "surrogatepass").
static __device__ __forceinline__ unsigned int fnv1a_code_point(unsigned int state,
                                                                unsigned int code_point) {
    if (code_point <= 0xFFFFu) {
        return fnv1a_step(state, code_point);
    }
    const unsigned int offset = code_point - 0x10000u;
    state = fnv1a_step(state, 0xD800u + (offset >> 10));
    return fnv1a_step(state, 0xDC00u + (offset & 0x3FFu));
}

// seed_states: the UTF-16 units of ":" + str(seed), computed once per thread.
struct SeedSuffix {
    unsigned int units[11];  // ':' and at most 10 decimal digits (seed < 2**32)
    int length;
};

static __device__ __forceinline__ SeedSuffix seed_suffix(unsigned int seed) {
    SeedSuffix suffix;
    suffix.units[0] = ':';
    unsigned int power = 1;
    while (seed / power >= 10u) {
        power *= 10u;
    }
    int length = 1;
    for (; power != 0u; power /= 10u) {
        suffix.units[length++] = '0' + (seed / power) % 10u;
    }
    suffix.length = length;
    return suffix;
}

// seed_states: append the suffix to a feature state, giving fnv1a(feature + ":" + seed).
static __device__ __forceinline__ unsigned int seed_state(unsigned int state,
                                                          const SeedSuffix& suffix) {
    for (int k = 0; k < suffix.length; ++k) {
        state = fnv1a_step(state, suffix.units[k]);
    }
    return state;
}

// xorshift32_words: a zero seed becomes 1; word j is the (j + 1)-th output.
static __device__ __forceinline__ unsigned int xorshift32_start(unsigned int hash) {
    return hash == 0u ? 1u : hash;
}

static __device__ __forceinline__ unsigned int xorshift32_next(unsigned int state) {
    state ^= state << 13;
    state ^= state >> 17;
    state ^= state << 5;
    return state;
}

// ---- fixedpoint.py ------------------------------------------------------------------------

// SUM_BITS
#define GSH_SUM_BITS 62

// document_exponents: 62 - ceil(log2 n) - x, where max_abs = m * 2**x; 0 when max_abs == 0.
// ceil(log2 n) == bit_length(n - 1) for n >= 1.
static __device__ __forceinline__ int document_exponent(double max_abs, long long n) {
    if (!(max_abs > 0.0)) {
        return 0;
    }
    int exponent;
    frexp(max_abs, &exponent);
    const int log_count = 64 - __clzll(n - 1);
    return GSH_SUM_BITS - log_count - exponent;
}

// quantize: rint(ldexp(w, e)) as int64, round half to even (both steps are exact or
// correctly rounded, so every engine gets the same integer).
static __device__ __forceinline__ long long quantize(double weight, int exponent) {
    return __double2ll_rn(ldexp(weight, exponent));
}

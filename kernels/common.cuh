// Hash and fixed-point helpers shared by every kernel; mirrors gpusimhash/hashing.py and
// gpusimhash/fixedpoint.py line for line (DESIGN.md is the contract). Then the code helpers of
// the join and kNN kernels: Hamming distances on packed uint64 words, warp-aggregated output
// and dynamic shared memory.
//
// This file is not #included: gpusimhash/_gpu/kernels.py prefixes it (with a #line marker) to each
// kernel file before compiling, and tests/gpu/cuda_emu compiles the same text with g++.

// Threads per block of every launch (THREADS_PER_BLOCK in gpusimhash/_gpu/kernels.py): every
// kernel declares it in __launch_bounds__, so the compiler budgets registers for it (a larger
// block would fail to launch), with a minimum of resident blocks per SM where that lowers the
// register count a notch without spilling (tests/gpu/test_kernels_compile.py checks: no spills).
#define GSH_BLOCK 256

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

// seed_states: the suffix ":" + str(seed) as two kernel parameters (engine.seed_suffix computes
// them on the host): the decimal digits of the seed, 4 bits each with the last digit in the
// lowest bits, and their count. Held in registers: no array, so no local memory.
struct SeedSuffix {
    unsigned long long digits;
    int length;
};

// seed_states: append the suffix to a feature state, giving fnv1a(feature + ":" + seed).
static __device__ __forceinline__ unsigned int seed_state(unsigned int state,
                                                          const SeedSuffix suffix) {
    state = fnv1a_step(state, ':');
    for (int k = suffix.length - 1; k >= 0; --k) {
        state = fnv1a_step(state, '0' + (unsigned int)((suffix.digits >> (4 * k)) & 15u));
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

// ---- packed codes (join.cu, knn.cu) ----------------------------------------------------------

// Codes are rows of uint64 words: bit i of a code is bit i % 64 of word i / 64 (the bytes of
// gpusimhash.codes.code_words, read little-endian). Kernels are templated on the words per code,
// Words > 0 (unrolled), or 0 for any width (the runtime n_words).
template <int Words>
static __device__ __forceinline__ int code_words(int n_words) {
    return Words > 0 ? Words : n_words;
}

// Hamming distance of two codes.
template <int Words>
static __device__ __forceinline__ int code_distance(const unsigned long long* a,
                                                    const unsigned long long* b, int n_words) {
    int distance = 0;
#pragma unroll
    for (int w = 0; w < code_words<Words>(n_words); ++w) {
        distance += __popcll(a[w] ^ b[w]);
    }
    return distance;
}

// Hamming distance of two codes on bits [lo, hi) alone.
static __device__ __forceinline__ int range_distance(const unsigned long long* a,
                                                     const unsigned long long* b, int lo, int hi) {
    int distance = 0;
    for (int w = lo / 64; w * 64 < hi; ++w) {
        const int first = lo > w * 64 ? lo - w * 64 : 0;
        const int last = hi < w * 64 + 64 ? hi - w * 64 : 64;
        const unsigned long long high = last == 64 ? ~0ull : (1ull << last) - 1ull;
        distance += __popcll((a[w] ^ b[w]) & high & ~((1ull << first) - 1ull));
    }
    return distance;
}

#define GSH_FULL_MASK 0xffffffffu

// Append `value` to out where `keep`, one atomicAdd per warp: the warp's kept values take
// consecutive slots from *counter, in lane order. Slots at or past `capacity` are counted but not
// written, so the caller learns the exact size needed. Every lane of the warp must call it.
static __device__ __forceinline__ void warp_append(bool keep, long long value, long long* out,
                                                   unsigned long long* counter,
                                                   unsigned long long capacity) {
    const unsigned int ballot = __ballot_sync(GSH_FULL_MASK, keep);
    if (ballot == 0u) {
        return;  // the same answer in every lane
    }
    const unsigned int lane = threadIdx.x & 31u;
    unsigned long long base = 0;
    if (lane == 0u) {
        base = atomicAdd(counter, (unsigned long long)__popc(ballot));
    }
    base = __shfl_sync(GSH_FULL_MASK, base, 0);
    const unsigned long long slot = base + (unsigned long long)__popc(ballot & ((1u << lane) - 1u));
    if (keep && slot < capacity) {
        out[slot] = value;
    }
}

// The launch's dynamic shared memory (the emulator provides its own).
#ifndef GSH_EMULATED
static __device__ __forceinline__ unsigned char* gsh_dynamic_shared() {
    extern __shared__ __align__(16) unsigned char gsh_shared_bytes[];
    return gsh_shared_bytes;
}
#endif

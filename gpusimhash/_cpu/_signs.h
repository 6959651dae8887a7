/* Weighted signs of a document's features added to its slots (`_loops.accumulate_codes`).
 *
 * Each feature's xorshift32 sign words are drawn from its hash as kernels/simhash.cu draws them,
 * and its int64 weight is added to slot i where bit i is set and subtracted where it is not.
 * Integer arithmetic: the sums are exact, in any order. The loop vectorizes only with per-lane
 * shifts (AVX2), which a portable x86-64 build lacks: where the compiler and the C library
 * support it, the function is built twice and the AVX2 form is chosen at load time on the
 * machines that have it (`target_clones`); both give the same sums.
 */
#ifndef GPUSIMHASH_SIGNS_H
#define GPUSIMHASH_SIGNS_H

#include <stdint.h>

#if defined(__GNUC__) && defined(__x86_64__) && defined(__linux__) && !defined(__clang__)
#define GPUSIMHASH_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define GPUSIMHASH_CLONES
#endif

GPUSIMHASH_CLONES
static void gpusimhash_add_signs(
    int64_t *restrict slots, const uint32_t *hashes, const int64_t *weights, int64_t n, int bits)
{
    const uint64_t mask32 = 0xFFFFFFFFu;
    for (int64_t entry = 0; entry < n; entry++) {
    uint64_t state = hashes[entry] == 0 ? 1 : hashes[entry];
    const int64_t weight = weights[entry];
    for (int base = 0; base < bits; base += 32) {
        state ^= (state << 13) & mask32;
        state ^= state >> 17;
        state ^= (state << 5) & mask32;
        const uint32_t signs = (uint32_t)state;
        int64_t *restrict word = slots + base;
        if (bits - base >= 32) {  /* a fixed trip count, on 32-bit lanes: vectorized */
            for (int bit = 0; bit < 32; bit++) {
                /* m = 0 where the bit is set, -1 where it is not: (w ^ m) - m is w or -w */
                int64_t m = -(int64_t)(((signs >> bit) & 1) ^ 1);
                word[bit] += (weight ^ m) - m;
            }
        } else {
            for (int bit = 0; bit < bits - base; bit++) {
                int64_t m = -(int64_t)(((signs >> bit) & 1) ^ 1);
                word[bit] += (weight ^ m) - m;
            }
        }
    }
    }
}

#endif

// C entry points around the emulated kernels, one per kernel instantiation, for ctypes.
// Each takes the launch shape (grid, block), then, for the kernels using dynamic shared memory
// (join.cu, knn.cu), its size in bytes, followed by the kernel's own arguments.
#include "cuda_emu.h"

#include "common.cuh"
#include "simhash.cu"
#include "text.cu"
#include "join.cu"
#include "knn.cu"
#include "verify.cu"

#define EMU_LAUNCH(grid, block, call) cuda_emu::launch(grid, block, [&] { call; })
#define EMU_LAUNCH_SHARED(grid, block, shared, call) \
    cuda_emu::launch(grid, block, [&] { call; }, shared)

extern "C" {

void emu_simhash_max_abs(unsigned grid, unsigned block, const double* weights,
                         const long long* offsets, const long long* task_docs,
                         const long long* task_starts, const long long* partial_rows,
                         long long n_tasks, long long task_size,
                         unsigned long long* max_abs_bits) {
    EMU_LAUNCH(grid, block,
               simhash_max_abs(weights, offsets, task_docs, task_starts, partial_rows, n_tasks,
                               task_size, max_abs_bits));
}

void emu_simhash_accumulate_weighted(unsigned grid, unsigned block, const unsigned int* states,
                                     const double* weights, const long long* offsets,
                                     const long long* task_docs, const long long* task_starts,
                                     const unsigned long long* max_abs_bits,
                                     const long long* partial_rows, long long* partials,
                                     unsigned char* codes, long long n_tasks,
                                     long long task_size, int bits,
                                     unsigned long long suffix_digits, int suffix_length) {
    EMU_LAUNCH(grid, block,
               simhash_accumulate_weighted(states, weights, offsets, task_docs, task_starts,
                                           max_abs_bits, partial_rows, partials, codes, n_tasks,
                                           task_size, bits, suffix_digits, suffix_length));
}

#define EMU_ACCUMULATE_UNIT(PLANES, GROUP)                                                      \
    void emu_simhash_accumulate_unit_##PLANES##_##GROUP(                                        \
        unsigned grid, unsigned block, const unsigned int* states, const long long* offsets,    \
        const long long* task_docs, const long long* task_starts, const long long* class_ends,  \
        int size_class, const long long* partial_rows, long long* partials, unsigned char* codes, \
        long long task_size, int bits, unsigned long long suffix_digits, int suffix_length) {   \
        EMU_LAUNCH(grid, block,                                                                 \
                   (simhash_accumulate_unit<PLANES, GROUP>(                                     \
                       states, offsets, task_docs, task_starts, class_ends, size_class,         \
                       partial_rows, partials, codes, task_size, bits, suffix_digits,           \
                       suffix_length)));                                                        \
    }
EMU_ACCUMULATE_UNIT(4, 8)
EMU_ACCUMULATE_UNIT(8, 8)
EMU_ACCUMULATE_UNIT(11, 4)

void emu_simhash_pack_partials(unsigned grid, unsigned block, const long long* partials,
                               const long long* split_docs, long long n_split, int bits,
                               unsigned char* codes) {
    EMU_LAUNCH(grid, block, simhash_pack_partials(partials, split_docs, n_split, bits, codes));
}

void emu_text_classify(unsigned grid, unsigned block, const unsigned int* code_points,
                       long long n, const unsigned char* word_table,
                       const unsigned int* lower_table, int lowercase, unsigned int* normalized,
                       unsigned char* flags) {
    EMU_LAUNCH(grid, block,
               text_classify(code_points, n, word_table, lower_table, lowercase, normalized,
                             flags));
}

void emu_text_decode_utf8(unsigned grid, unsigned block, const unsigned char* data, long long n,
                          const long long* offsets, long long n_docs, const long long* rank,
                          int surrogates, unsigned int* code_points,
                          unsigned long long* first_error) {
    EMU_LAUNCH(grid, block,
               text_decode_utf8(data, n, offsets, n_docs, rank, surrogates, code_points,
                                first_error));
}

void emu_text_word_states(unsigned grid, unsigned block, const unsigned int* normalized,
                          const unsigned char* flags, long long n, const long long* rank,
                          const long long* doc_starts, long long n_docs,
                          const long long* doc_tokens, const long long* gram_offsets, int ngram,
                          unsigned int* states) {
    EMU_LAUNCH(grid, block,
               text_word_states(normalized, flags, n, rank, doc_starts, n_docs, doc_tokens,
                                gram_offsets, ngram, states));
}

void emu_text_char_states(unsigned grid, unsigned block, const unsigned int* normalized,
                          const unsigned char* flags, long long n, const long long* rank,
                          const long long* doc_starts, long long n_docs,
                          const long long* doc_kept, const long long* gram_offsets, int ngram,
                          unsigned int* states) {
    EMU_LAUNCH(grid, block,
               text_char_states(normalized, flags, n, rank, doc_starts, n_docs, doc_kept,
                                gram_offsets, ngram, states));
}

#define EMU_JOIN(WORDS)                                                                         \
    void emu_join_bucket_pairs_##WORDS(                                                         \
        unsigned grid, unsigned block, unsigned long long shared,                               \
        const unsigned long long* words, const long long* ids, const long long* starts,         \
        const unsigned int* keys, long long n_keys, const unsigned int* masks, int n_masks,     \
        long long n_buckets, const int* bounds, int block_index, int block_radius, int radius,  \
        int n_words, long long n_ids, long long big_pairs, long long* pairs,                    \
        unsigned long long* counters, long long pair_capacity, long long* big,                  \
        long long big_capacity) {                                                               \
        EMU_LAUNCH_SHARED(grid, block, shared,                                                  \
                          join_bucket_pairs<WORDS>(words, ids, starts, keys, n_keys, masks,     \
                                                   n_masks, n_buckets, bounds, block_index,     \
                                                   block_radius, radius, n_words, n_ids,        \
                                                   big_pairs, pairs, counters, pair_capacity,   \
                                                   big, big_capacity));                         \
    }                                                                                           \
    void emu_join_tiles_##WORDS(unsigned grid, unsigned block, unsigned long long shared,       \
                                const unsigned long long* words, const long long* ids,          \
                                const long long* rects, const long long* tile_starts,           \
                                long long n_rects, int tile_cols, const int* bounds,            \
                                int block_index, int block_radius, int radius, int n_words,     \
                                long long n_ids, long long* pairs, unsigned long long* counters, \
                                long long pair_capacity) {                                      \
        EMU_LAUNCH_SHARED(grid, block, shared,                                                  \
                          join_tiles<WORDS>(words, ids, rects, tile_starts, n_rects, tile_cols, \
                                            bounds, block_index, block_radius, radius, n_words, \
                                            n_ids, pairs, counters, pair_capacity));            \
    }                                                                                           \
    void emu_knn_topk_##WORDS(unsigned grid, unsigned block, unsigned long long shared,         \
                              const unsigned long long* stored, long long n_stored,             \
                              const unsigned long long* queries, long long n_queries,           \
                              int n_words, int bits, int k, int query_tile, int chunk,          \
                              int* distances, long long* positions) {                           \
        EMU_LAUNCH_SHARED(grid, block, shared,                                                  \
                          knn_topk<WORDS>(stored, n_stored, queries, n_queries, n_words, bits,  \
                                          k, query_tile, chunk, distances, positions));         \
    }
EMU_JOIN(0)
EMU_JOIN(1)
EMU_JOIN(2)
EMU_JOIN(4)
EMU_JOIN(8)

#define EMU_VERIFY(NAME, STATE)                                                                 \
    void emu_verify_pairs_##NAME(unsigned grid, unsigned block, const STATE* states,           \
                                 const long long* offsets, const double* weights,              \
                                 const long long* exponents, const double* squared_norms,      \
                                 const long long* left, const long long* right,                \
                                 long long n_pairs, double* cosine, double* jaccard,           \
                                 double* weighted) {                                           \
        EMU_LAUNCH(grid, block,                                                                 \
                   verify_pairs<STATE>(states, offsets, weights, exponents, squared_norms,      \
                                       left, right, n_pairs, cosine, jaccard, weighted));       \
    }
EMU_VERIFY(uint32, unsigned int)
EMU_VERIFY(uint64, unsigned long long)
}

// C entry points around the emulated kernels, one per kernel instantiation, for ctypes.
// Each takes the launch shape (grid, block) followed by the kernel's own arguments.
#include "cuda_emu.h"

#include "common.cuh"
#include "simhash.cu"
#include "text.cu"

#define EMU_LAUNCH(grid, block, call) cuda_emu::launch(grid, block, [&] { call; })

extern "C" {

void emu_simhash_max_abs(unsigned grid, unsigned block, const double* weights,
                         const long long* offsets, const long long* task_docs,
                         const long long* task_starts, long long n_tasks, long long task_size,
                         unsigned long long* max_abs_bits) {
    EMU_LAUNCH(grid, block,
               simhash_max_abs(weights, offsets, task_docs, task_starts, n_tasks, task_size,
                               max_abs_bits));
}

#define EMU_ACCUMULATE(NAME, WEIGHTED)                                                          \
    void NAME(unsigned grid, unsigned block, const unsigned int* states, const double* weights, \
              const long long* offsets, const long long* task_docs,                             \
              const long long* task_starts, const unsigned long long* max_abs_bits,             \
              const long long* partial_rows, long long* partials, unsigned char* codes,         \
              long long n_tasks, long long task_size, int bits, unsigned int seed) {            \
        EMU_LAUNCH(grid, block,                                                                 \
                   simhash_accumulate<WEIGHTED>(states, weights, offsets, task_docs,            \
                                                task_starts, max_abs_bits, partial_rows,        \
                                                partials, codes, n_tasks, task_size, bits,      \
                                                seed));                                         \
    }
EMU_ACCUMULATE(emu_simhash_accumulate_true, true)
EMU_ACCUMULATE(emu_simhash_accumulate_false, false)

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

void emu_text_span_states(unsigned grid, unsigned block, const unsigned int* text,
                          const long long* starts, const long long* stops, long long n_spans,
                          unsigned int* states) {
    EMU_LAUNCH(grid, block, text_span_states(text, starts, stops, n_spans, states));
}
}

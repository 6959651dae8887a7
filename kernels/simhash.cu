// Weighted-sign accumulation of feature states into packed SimHash fingerprints.
//
// Work is split into tasks: a task is a run of at most `task_size` consecutive entries of one
// document (a document longer than that has several tasks; an empty one has none, and its code
// stays the zeros the caller allocated). Thread mapping: one thread per (task, 32-bit sign word),
// the word index fastest, so the threads of a document sit next to each other in a block and
// read the same entries; a block therefore holds a group of short documents, or part of a long
// one. Grid-stride loops make every kernel correct for any grid.
//
// Each thread applies the seed suffix to its entries' states, draws their xorshift32 words up to
// its own, and sums +q / -q for its 32 slots in registers; with unit weights it counts the set
// bits of its 32 slots in bit-sliced counters instead (3 logic operations per counter plane
// and entry, rather than 32 int64 additions), which is exact as well. A document with one task packs its
// sign bits straight into the FAISS layout (bit i in byte i / 8 at position i % 8); a longer
// document adds its partial slot sums to an int64 row of `partials` with integer atomics, and
// simhash_pack_partials packs those rows afterwards.
//
// Determinism: weights become int64 fixed point with the document's exponent (fixedpoint.py),
// or the unit 1 when unweighted; slot sums are exact integer sums (no float atomics), so the
// bits depend neither on the order of entries nor on the launch configuration.
//
// Arguments (all arrays C-contiguous):
//   states        uint32  (nnz,)        feature states (FNV-1a before the ":" + seed suffix)
//   weights       float64 (nnz,)        finite weights (ignored by simhash_accumulate<false>)
//   offsets       int64   (n_docs + 1,) CSR row starts
//   task_docs     int64   (n_tasks,)    the document of each task
//   task_starts   int64   (n_tasks,)    the first entry of each task
//   max_abs_bits  uint64  (n_docs,)     bit pattern of each document's largest |weight|
//   partial_rows  int64   (n_docs,)     row of `partials` for a split document, else -1
//   partials      int64   (n_split, bits) zero-initialized slot sums of split documents
//   codes         uint8   (n_docs, bits / 8) output, zero-initialized

// Largest |weight| of each document. Non-negative doubles order like their bit patterns, so
// an integer atomicMax gives the exact maximum whatever the order. max_abs_bits starts at 0.
__global__ void simhash_max_abs(const double* weights, const long long* offsets,
                                const long long* task_docs, const long long* task_starts,
                                long long n_tasks, long long task_size,
                                unsigned long long* max_abs_bits) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long task = (long long)blockIdx.x * blockDim.x + threadIdx.x; task < n_tasks;
         task += stride) {
        const long long doc = task_docs[task];
        const long long start = task_starts[task];
        const long long doc_end = offsets[doc + 1];
        const long long end = doc_end - start < task_size ? doc_end : start + task_size;
        unsigned long long largest = 0;
        for (long long entry = start; entry < end; ++entry) {
            const unsigned long long bits =
                (unsigned long long)__double_as_longlong(fabs(weights[entry]));
            largest = bits > largest ? bits : largest;
        }
        atomicMax(max_abs_bits + doc, largest);
    }
}

// Bit-sliced counter planes for unit weights: counts up to 2**GSH_COUNT_PLANES - 1, so a task
// holds at most that many entries (the host checks task_size).
#define GSH_COUNT_PLANES 11

// Sign word `word` of an entry: the seed suffix applied to its state, then xorshift32 drawn
// word + 1 times.
static __device__ __forceinline__ unsigned int sign_word(unsigned int state,
                                                         const SeedSuffix& suffix, int word) {
    unsigned int x = xorshift32_start(seed_state(state, suffix));
    for (int j = 0; j <= word; ++j) {
        x = xorshift32_next(x);
    }
    return x;
}

// Write the bytes of one 32-bit sign word of a code: bits 32 * word .. of the fingerprint.
static __device__ __forceinline__ void store_word(unsigned char* code, int word, int bits,
                                                  unsigned int value) {
    const int first_byte = word * 4;
    const int last_byte = first_byte + 4 < bits / 8 ? first_byte + 4 : bits / 8;
    for (int byte = first_byte; byte < last_byte; ++byte) {
        code[byte] = (unsigned char)(value >> (8 * (byte - first_byte)));
    }
}

template <bool Weighted>
__global__ void simhash_accumulate(const unsigned int* states, const double* weights,
                                   const long long* offsets, const long long* task_docs,
                                   const long long* task_starts,
                                   const unsigned long long* max_abs_bits,
                                   const long long* partial_rows, long long* partials,
                                   unsigned char* codes, long long n_tasks, long long task_size,
                                   int bits, unsigned int seed) {
    const int words = (bits + 31) / 32;
    const SeedSuffix suffix = seed_suffix(seed);
    const long long n_items = n_tasks * words;
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long item = (long long)blockIdx.x * blockDim.x + threadIdx.x; item < n_items;
         item += stride) {
        const long long task = item / words;
        const int word = (int)(item - task * words);
        const long long doc = task_docs[task];
        const long long start = task_starts[task];
        const long long doc_end = offsets[doc + 1];
        const long long end = doc_end - start < task_size ? doc_end : start + task_size;
        int exponent = 0;
        if (Weighted) {
            exponent = document_exponent(__longlong_as_double((long long)max_abs_bits[doc]),
                                         doc_end - offsets[doc]);
        }
        long long sums[32];
        if (Weighted) {
#pragma unroll
            for (int bit = 0; bit < 32; ++bit) {
                sums[bit] = 0;
            }
            for (long long entry = start; entry < end; ++entry) {
                const long long q = quantize(weights[entry], exponent);
                const unsigned int x = sign_word(states[entry], suffix, word);
#pragma unroll
                for (int bit = 0; bit < 32; ++bit) {
                    sums[bit] += ((x >> bit) & 1u) ? q : -q;
                }
            }
        } else {
            // Unit weights: count the set sign bits of all 32 slots at once in bit-sliced
            // counters (plane k holds bit k of every slot's count), then sum = 2 * ones - n.
            unsigned int planes[GSH_COUNT_PLANES];
#pragma unroll
            for (int k = 0; k < GSH_COUNT_PLANES; ++k) {
                planes[k] = 0u;
            }
            for (long long entry = start; entry < end; ++entry) {
                unsigned int carry = sign_word(states[entry], suffix, word);
#pragma unroll
                for (int k = 0; k < GSH_COUNT_PLANES; ++k) {
                    const unsigned int next = planes[k] & carry;
                    planes[k] ^= carry;
                    carry = next;
                }
            }
            const long long n = end - start;
#pragma unroll
            for (int bit = 0; bit < 32; ++bit) {
                long long ones = 0;
#pragma unroll
                for (int k = 0; k < GSH_COUNT_PLANES; ++k) {
                    ones |= (long long)((planes[k] >> bit) & 1u) << k;
                }
                sums[bit] = 2 * ones - n;
            }
        }
        const long long row = partial_rows[doc];
        if (row < 0) {
            unsigned int packed = 0;
#pragma unroll
            for (int bit = 0; bit < 32; ++bit) {
                packed |= (sums[bit] > 0 ? 1u : 0u) << bit;
            }
            store_word(codes + doc * (bits / 8), word, bits, packed);
        } else {
            long long* slots = partials + row * bits + word * 32;
            const int valid = bits - word * 32 < 32 ? bits - word * 32 : 32;
#pragma unroll
            for (int bit = 0; bit < 32; ++bit) {
                if (bit < valid) {
                    atomicAdd((unsigned long long*)(slots + bit), (unsigned long long)sums[bit]);
                }
            }
        }
    }
}

// Pack the summed slots of split documents: one thread per (split document, sign word).
//   partials    int64 (n_split, bits)  complete slot sums
//   split_docs  int64 (n_split,)       the document of each row
__global__ void simhash_pack_partials(const long long* partials, const long long* split_docs,
                                      long long n_split, int bits, unsigned char* codes) {
    const int words = (bits + 31) / 32;
    const long long n_items = n_split * words;
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long item = (long long)blockIdx.x * blockDim.x + threadIdx.x; item < n_items;
         item += stride) {
        const long long row = item / words;
        const int word = (int)(item - row * words);
        const long long* slots = partials + row * bits + word * 32;
        const int valid = bits - word * 32 < 32 ? bits - word * 32 : 32;
        unsigned int packed = 0;
        for (int bit = 0; bit < valid; ++bit) {
            packed |= (slots[bit] > 0 ? 1u : 0u) << bit;
        }
        store_word(codes + split_docs[row] * (bits / 8), word, bits, packed);
    }
}

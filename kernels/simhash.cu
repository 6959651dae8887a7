// Weighted-sign accumulation of feature states into packed SimHash fingerprints.
//
// Work is split into tasks: a task is a run of at most `task_size` consecutive entries of one
// document (a document longer than that has several tasks; an empty one has none, and its code
// stays the zeros the caller allocated). Grid-stride loops make every kernel correct for any grid.
// Task lists planned on the device from size bounds are padded: a task (or split row) whose
// document is -1 is skipped.
//
// Unit weights (simhash_accumulate_unit<Planes, GroupWords>): one thread per (task, group of up
// to GroupWords 32-bit sign words), so up to 32 * GroupWords bits (256 with 8) take one thread
// per task: the seed suffix and the xorshift32 chain run once per entry. The set sign bits of
// each slot are counted in bit-sliced counters (plane k holds bit k of every slot's count; one
// increment is a ripple of AND/XOR through the planes). The host orders the tasks by size class
// (task_docs[class_ends[c - 1] : class_ends[c]] are the tasks of class c, those whose entries fit
// the planes of the c-th instantiation and not the one before), and launches each class's
// instantiation over its own tasks: every task is counted with the fewest planes that hold it,
// and no host round trip is needed to choose them. Slot i is set exactly when its count
// exceeds half the task's n entries, i.e. count >= n / 2 + 1; the planes are compared with that
// threshold from the most significant plane down, for 32 slots at once (about 3 operations per
// plane, instead of unpacking 32 counters).
//
// Weights (simhash_accumulate_weighted): one thread per (task, sign word) sums +q / -q for its
// 32 slots in int64 registers, q the weight in the document's fixed point (fixedpoint.py). The
// fixed point needs the document's largest |weight|: a document of one task finds it with a
// first pass over its (at most task_size, cache-resident) entries; simhash_max_abs gathers it
// beforehand for split documents only.
//
// A document with one task packs its sign bits straight into the FAISS layout (bit i in byte
// i / 8 at position i % 8); a longer document adds its partial slot sums to an int64 row of
// `partials` with integer atomics, and simhash_pack_partials packs those rows afterwards.
//
// Determinism: slot sums and counts are exact integers (no float atomics), so the bits depend
// neither on the order of entries nor on the launch configuration.
//
// Arguments (all arrays C-contiguous):
//   states        uint32  (nnz,)        feature states (FNV-1a before the ":" + seed suffix)
//   weights       float64 (nnz,)        finite weights (simhash_accumulate_weighted only)
//   offsets       int64   (n_docs + 1,) CSR row starts
//   task_docs     int64   (n_tasks,)    the document of each task (-1: padding)
//   task_starts   int64   (n_tasks,)    the first entry of each task
//   class_ends    int64   (classes,)    one past the last task of each size class (unit weights)
//   size_class    int32                 the class an instantiation runs (unit weights)
//   max_abs_bits  uint64  (n_docs,)     bit pattern of a split document's largest |weight|
//   partial_rows  int64   (n_docs,)     row of `partials` for a split document, else -1
//   partials      int64   (n_split, bits) zero-initialized slot sums of split documents
//   codes         uint8   (n_docs, bits / 8) output, zero-initialized
//   suffix_digits uint64, suffix_length int32: the seed suffix (SeedSuffix in common.cuh)

// The end of a task's entries.
static __device__ __forceinline__ long long task_end(long long start, long long doc_end,
                                                     long long task_size) {
    return doc_end - start < task_size ? doc_end : start + task_size;
}

// Largest |weight| of each split document (the others find theirs in the accumulation).
// Non-negative doubles order like their bit patterns, so an integer atomicMax gives the exact
// maximum whatever the order. max_abs_bits starts at 0.

// Bit pattern of the largest |weight| of entries [start, end).
static __device__ __forceinline__ unsigned long long largest_abs_bits(const double* weights,
                                                                      long long start,
                                                                      long long end) {
    unsigned long long largest = 0;
    for (long long entry = start; entry < end; ++entry) {
        const unsigned long long bits =
            (unsigned long long)__double_as_longlong(fabs(weights[entry]));
        largest = bits > largest ? bits : largest;
    }
    return largest;
}

__global__ void __launch_bounds__(GSH_BLOCK, 8)
    simhash_max_abs(const double* weights, const long long* offsets, const long long* task_docs,
                    const long long* task_starts, const long long* partial_rows,
                    long long n_tasks, long long task_size, unsigned long long* max_abs_bits) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long task = (long long)blockIdx.x * blockDim.x + threadIdx.x; task < n_tasks;
         task += stride) {
        const long long doc = task_docs[task];
        if (doc < 0 || partial_rows[doc] < 0) {
            continue;
        }
        const long long start = task_starts[task];
        const long long end = task_end(start, offsets[doc + 1], task_size);
        atomicMax(max_abs_bits + doc, largest_abs_bits(weights, start, end));
    }
}

// The most counter planes a unit-weight kernel has: task_size stays below 2**GSH_COUNT_PLANES.
#define GSH_COUNT_PLANES 11

// Write one 32-bit sign word of a code: bits 32 * word .. of the fingerprint. A whole word is
// one aligned 32-bit store when bits is a multiple of 32 (rows of bits / 8 bytes, 4-aligned).
static __device__ __forceinline__ void store_word(unsigned char* code, int word, int bits,
                                                  unsigned int value) {
    if (bits % 32 == 0) {
        reinterpret_cast<unsigned int*>(code)[word] = value;
        return;
    }
    const int first_byte = word * 4;
    const int last_byte = first_byte + 4 < bits / 8 ? first_byte + 4 : bits / 8;
    for (int byte = first_byte; byte < last_byte; ++byte) {
        code[byte] = (unsigned char)(value >> (8 * (byte - first_byte)));
    }
}

// Resident blocks per SM for each plane count: 4 fits the 4-plane kernel in 64 registers; the
// others keep the count their registers allow anyway (a looser bound lets ptxas take more).
#define GSH_UNIT_MIN_BLOCKS(planes) ((planes) <= 4 ? 4 : (planes) <= 8 ? 2 : 3)

template <int Planes, int GroupWords>
__global__ void __launch_bounds__(GSH_BLOCK, GSH_UNIT_MIN_BLOCKS(Planes))
    simhash_accumulate_unit(const unsigned int* states, const long long* offsets,
                            const long long* task_docs, const long long* task_starts,
                            const long long* class_ends, int size_class,
                            const long long* partial_rows, long long* partials,
                            unsigned char* codes, long long task_size, int bits,
                            unsigned long long suffix_digits, int suffix_length) {
    const SeedSuffix suffix{suffix_digits, suffix_length};
    const int words = (bits + 31) / 32;
    const int groups = (words + GroupWords - 1) / GroupWords;
    const long long first_task = size_class > 0 ? class_ends[size_class - 1] : 0;
    const long long n_items = (class_ends[size_class] - first_task) * groups;
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long item = (long long)blockIdx.x * blockDim.x + threadIdx.x; item < n_items;
         item += stride) {
        const long long task = first_task + item / groups;
        const int first_word = (int)(item % groups) * GroupWords;
        const int group_words =
            words - first_word < GroupWords ? words - first_word : GroupWords;
        const long long doc = task_docs[task];  // never padding: it lies past every class
        const long long start = task_starts[task];
        const long long end = task_end(start, offsets[doc + 1], task_size);
        unsigned int planes[GroupWords][Planes];
#pragma unroll
        for (int w = 0; w < GroupWords; ++w) {
#pragma unroll
            for (int k = 0; k < Planes; ++k) {
                planes[w][k] = 0u;
            }
        }
        for (long long entry = start; entry < end; ++entry) {
            unsigned int x = xorshift32_start(seed_state(states[entry], suffix));
            for (int j = 0; j < first_word; ++j) {  // groups past the first (bits > 32 * GroupWords)
                x = xorshift32_next(x);
            }
#pragma unroll
            for (int w = 0; w < GroupWords; ++w) {
                if (w < group_words) {
                    x = xorshift32_next(x);
                    unsigned int carry = x;
#pragma unroll
                    for (int k = 0; k < Planes; ++k) {
                        const unsigned int next = planes[w][k] & carry;
                        planes[w][k] ^= carry;
                        carry = next;
                    }
                }
            }
        }
        const long long n = end - start;
        const long long row = partial_rows[doc];
        if (row < 0) {
            // count >= n / 2 + 1, decided plane by plane from the most significant one
            const unsigned int threshold = (unsigned int)(n / 2 + 1);
            unsigned char* code = codes + doc * (bits / 8);
#pragma unroll
            for (int w = 0; w < GroupWords; ++w) {
                if (w < group_words) {
                    unsigned int greater = 0u, equal = ~0u;
#pragma unroll
                    for (int k = Planes - 1; k >= 0; --k) {
                        const unsigned int plane = planes[w][k];
                        if ((threshold >> k) & 1u) {
                            equal &= plane;
                        } else {
                            greater |= equal & plane;
                            equal &= ~plane;
                        }
                    }
                    store_word(code, first_word + w, bits, greater | equal);
                }
            }
        } else {
            // a split document: this task's slot sums 2 * count - n go to its partials row
#pragma unroll
            for (int w = 0; w < GroupWords; ++w) {
                if (w < group_words) {
                    const int word = first_word + w;
                    long long* slots = partials + row * bits + word * 32;
                    const int valid = bits - word * 32 < 32 ? bits - word * 32 : 32;
#pragma unroll 1
                    for (int bit = 0; bit < valid; ++bit) {
                        long long ones = 0;
#pragma unroll
                        for (int k = 0; k < Planes; ++k) {
                            ones |= (long long)((planes[w][k] >> bit) & 1u) << k;
                        }
                        atomicAdd((unsigned long long*)(slots + bit),
                                  (unsigned long long)(2 * ones - n));
                    }
                }
            }
        }
    }
}

__global__ void __launch_bounds__(GSH_BLOCK, 2) simhash_accumulate_weighted(
    const unsigned int* states, const double* weights, const long long* offsets,
    const long long* task_docs, const long long* task_starts,
    const unsigned long long* max_abs_bits, const long long* partial_rows, long long* partials,
    unsigned char* codes, long long n_tasks, long long task_size, int bits,
    unsigned long long suffix_digits, int suffix_length) {
    const SeedSuffix suffix{suffix_digits, suffix_length};
    const int words = (bits + 31) / 32;
    const long long n_items = n_tasks * words;
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long item = (long long)blockIdx.x * blockDim.x + threadIdx.x; item < n_items;
         item += stride) {
        const long long task = item / words;
        const int word = (int)(item - task * words);
        const long long doc = task_docs[task];
        if (doc < 0) {
            continue;
        }
        const long long start = task_starts[task];
        const long long doc_end = offsets[doc + 1];
        const long long end = task_end(start, doc_end, task_size);
        const long long row = partial_rows[doc];
        const unsigned long long largest =
            row < 0 ? largest_abs_bits(weights, start, end) : max_abs_bits[doc];
        const int exponent =
            document_exponent(__longlong_as_double((long long)largest), doc_end - offsets[doc]);
        long long sums[32];
#pragma unroll
        for (int bit = 0; bit < 32; ++bit) {
            sums[bit] = 0;
        }
        for (long long entry = start; entry < end; ++entry) {
            const long long q = quantize(weights[entry], exponent);
            unsigned int x = xorshift32_start(seed_state(states[entry], suffix));
            for (int j = 0; j <= word; ++j) {
                x = xorshift32_next(x);
            }
#pragma unroll
            for (int bit = 0; bit < 32; ++bit) {
                sums[bit] += ((x >> bit) & 1u) ? q : -q;
            }
        }
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
//   split_docs  int64 (n_split,)       the document of each row (-1: padding)
__global__ void __launch_bounds__(GSH_BLOCK, 8)
    simhash_pack_partials(const long long* partials, const long long* split_docs,
                          long long n_split, int bits, unsigned char* codes) {
    const int words = (bits + 31) / 32;
    const long long n_items = n_split * words;
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long item = (long long)blockIdx.x * blockDim.x + threadIdx.x; item < n_items;
         item += stride) {
        const long long row = item / words;
        const int word = (int)(item - row * words);
        const long long doc = split_docs[row];
        if (doc < 0) {
            continue;
        }
        const long long* slots = partials + row * bits + word * 32;
        const int valid = bits - word * 32 < 32 ? bits - word * 32 : 32;
        unsigned int packed = 0;
        for (int bit = 0; bit < valid; ++bit) {
            packed |= (slots[bit] > 0 ? 1u : 0u) << bit;
        }
        store_word(codes + doc * (bits / 8), word, bits, packed);
    }
}

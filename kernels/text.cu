// Text on the device: classification, lower-casing and feature hashing of raw code points.
//
// The host joins a batch of documents with "\n" (never a word character) and ends it with one
// more "\n", as UTF-32. text_classify looks every code point up in the shipped Unicode tables
// (gpusimhash/unicode_tables.py, uploaded once) and marks what the normalized text keeps: word
// code points (lower-cased) and the first non-word code point after each token, which becomes
// the single space after it. Compacting the kept positions (done by the caller) gives every
// document's normalized text, tokens joined by single spaces, with one trailing space. Word
// n-grams and character n-grams are then spans of that text, and text_span_states hashes each
// span with FNV-1a over its UTF-16 units: the states gpusimhash.text computes on the CPU.
//
// Thread mapping: one thread per code point (text_classify) or per span (text_span_states),
// grid-stride loops, so any grid is correct. Everything is integer arithmetic.

#define GSH_SPACE 0x20u
#define GSH_MAX_CODE_POINT 0x110000u
#define GSH_FLAG_WORD 1u
#define GSH_FLAG_KEEP 2u
#define GSH_FLAG_TOKEN_START 4u

static __device__ __forceinline__ bool is_word(const unsigned char* word_table,
                                               unsigned int code_point) {
    return code_point < GSH_MAX_CODE_POINT && word_table[code_point] != 0;
}

// code_points  uint32 (n,)        the joined batch
// word_table   uint8  (0x110000,) 1 for word code points
// lower_table  uint32 (0x110000,) simple lower-case mapping
// lowercase    int32               map word code points through lower_table when non-zero
// normalized   uint32 (n,)        out: lower-cased code point, or a space for non-word ones
// flags        uint8  (n,)        out: GSH_FLAG_WORD | GSH_FLAG_KEEP | GSH_FLAG_TOKEN_START
__global__ void text_classify(const unsigned int* code_points, long long n,
                              const unsigned char* word_table, const unsigned int* lower_table,
                              int lowercase, unsigned int* normalized, unsigned char* flags) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const unsigned int code_point = code_points[i];
        const bool word = is_word(word_table, code_point);
        const bool after_word = i > 0 && is_word(word_table, code_points[i - 1]);
        unsigned int flag = 0;
        if (word) {
            flag |= GSH_FLAG_WORD | GSH_FLAG_KEEP;
            if (!after_word) {
                flag |= GSH_FLAG_TOKEN_START;
            }
        } else if (after_word) {
            flag |= GSH_FLAG_KEEP;
        }
        flags[i] = (unsigned char)flag;
        normalized[i] = !word ? GSH_SPACE : (lowercase ? lower_table[code_point] : code_point);
    }
}

// text      uint32 (m,)        normalized code points
// starts    int64  (n_spans,)  first code point of each span
// stops     int64  (n_spans,)  one past its last code point
// states    uint32 (n_spans,)  out: FNV-1a state over the span's UTF-16 units
__global__ void text_span_states(const unsigned int* text, const long long* starts,
                                 const long long* stops, long long n_spans,
                                 unsigned int* states) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long span = (long long)blockIdx.x * blockDim.x + threadIdx.x; span < n_spans;
         span += stride) {
        unsigned int state = GSH_FNV_OFFSET_BASIS;
        const long long stop = stops[span];
        for (long long i = starts[span]; i < stop; ++i) {
            state = fnv1a_code_point(state, text[i]);
        }
        states[span] = state;
    }
}

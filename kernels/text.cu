// Text on the device: classification, lower-casing and feature hashing of raw code points.
//
// The documents of a batch lie back to back as code points, each followed by one "\n" (never a
// word character). text_classify looks every code point up in the shipped Unicode tables
// (gpusimhash/unicode_tables.py, uploaded once) and marks what the normalized text keeps: word
// code points (lower-cased) and the first non-word code point after each token, which becomes
// the single space after it. The kept code points of a document, in order, are its normalized
// text (tokens joined by single spaces) plus one trailing space. text_word_states and
// text_char_states hash word n-grams and character n-grams of that text straight from
// text_classify's output, with no compaction: a thread at the first code point of an n-gram
// walks forward over the n-gram, and writes its FNV-1a state over UTF-16 units (the states
// gpusimhash.text computes on the CPU) at the slot that its rank in the document gives, so the
// output is in document then position order, as on the CPU, with no atomics.
//
// Thread mapping: one thread per code point (or byte), grid-stride loops, so any grid is correct.
// Everything is integer arithmetic.

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
__global__ void __launch_bounds__(GSH_BLOCK, 8)
    text_classify(const unsigned int* code_points, long long n, const unsigned char* word_table,
                  const unsigned int* lower_table, int lowercase, unsigned int* normalized,
                  unsigned char* flags) {
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

// ---- UTF-8 input ----------------------------------------------------------------------------
//
// text_decode_utf8 turns a batch of UTF-8 documents (bytes plus byte offsets) into the layout
// text_classify reads: each document's code points followed by one "\n". Thread mapping: one
// thread per byte, grid-stride. A lead byte writes its code point at rank - 1 + doc, where rank
// (an inclusive prefix sum of lead bytes, computed by the caller) counts the code points up to
// it and doc (a binary search of the offsets) counts the separators before it; the caller fills
// the output with "\n" first, so the separators need no writes. Validation is Python's strict
// "utf-8" codec (no overlong forms, nothing above U+10FFFF, no surrogates unless `surrogates`, as
// with "surrogatepass"); a sequence never crosses a document boundary. The smallest offending
// byte position goes to *first_error by an integer atomicMin (the caller starts it at ~0).

// The last document starting at or before position i (doc_starts ascending, doc_starts[0] <= i).
static __device__ __forceinline__ long long document_at(const long long* doc_starts,
                                                        long long n_docs, long long i) {
    long long low = 0, high = n_docs - 1;
    while (low < high) {
        const long long middle = low + (high - low + 1) / 2;
        if (doc_starts[middle] <= i) {
            low = middle;
        } else {
            high = middle - 1;
        }
    }
    return low;
}

// Bytes of the sequence a lead byte starts (1-4), or 0 for a continuation or invalid byte.
static __device__ __forceinline__ int utf8_length(unsigned int lead) {
    if (lead < 0x80u) return 1;
    if (lead < 0xC2u) return 0;  // a continuation byte, or an overlong 2-byte lead
    if (lead < 0xE0u) return 2;
    if (lead < 0xF0u) return 3;
    if (lead < 0xF5u) return 4;
    return 0;
}

// data         uint8  (n,)            the documents' bytes
// offsets      int64  (n_docs + 1,)   byte offsets, from 0 to n
// rank         int64  (n,)            inclusive prefix sum of (data[i] & 0xC0) != 0x80
// surrogates   int32                  accept encoded surrogates (U+D800..U+DFFF) when non-zero
// code_points  uint32 (>= rank[n - 1] + n_docs,)  out, pre-filled with "\n"
// first_error  uint64 (1,)            out: smallest invalid byte position, left alone if none
__global__ void __launch_bounds__(GSH_BLOCK, 8)
    text_decode_utf8(const unsigned char* data, long long n, const long long* offsets,
                     long long n_docs, const long long* rank, int surrogates,
                     unsigned int* code_points, unsigned long long* first_error) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        // the document holding byte i: the first doc whose end is past i
        long long low = 0, high = n_docs - 1;
        while (low < high) {
            const long long middle = low + (high - low) / 2;
            if (offsets[middle + 1] > i) {
                high = middle;
            } else {
                low = middle + 1;
            }
        }
        const long long doc = low;
        const long long begin = offsets[doc];
        const long long end = offsets[doc + 1];
        const unsigned int byte = data[i];
        bool valid = true;
        if ((byte & 0xC0u) == 0x80u) {
            // a continuation byte must belong to a lead byte at most 3 bytes back
            long long back = 1;
            while (back <= 3 && i - back >= begin && (data[i - back] & 0xC0u) == 0x80u) {
                ++back;
            }
            valid = back <= 3 && i - back >= begin && utf8_length(data[i - back]) > back;
        } else {
            const int length = utf8_length(byte);
            unsigned int code_point = byte;
            if (length == 0 || i + length > end) {
                valid = false;
            } else if (length > 1) {
                code_point = byte & (0xFFu >> (length + 1));
                for (int k = 1; k < length; ++k) {
                    const unsigned int next = data[i + k];
                    valid = valid && (next & 0xC0u) == 0x80u;
                    code_point = (code_point << 6) | (next & 0x3Fu);
                }
                const unsigned int smallest = length == 2 ? 0x80u : length == 3 ? 0x800u : 0x10000u;
                valid = valid && code_point >= smallest && code_point <= 0x10FFFFu;
                valid = valid && (surrogates || code_point < 0xD800u || code_point > 0xDFFFu);
            }
            if (valid) {
                code_points[rank[i] - 1 + doc] = code_point;
            }
        }
        if (!valid) {
            atomicMin(first_error, (unsigned long long)i);
        }
    }
}

// ---- word n-grams without compaction ---------------------------------------------------------
//
// text_word_states hashes every word n-gram straight from text_classify's output, with no
// compaction of the kept code points: one thread per code point, and a token start whose
// n-gram exists walks forward through the n tokens (word code points hashed, each run of
// non-word code points between them hashed as one space), as gpusimhash.text joins them. A
// document of k tokens has k - n + 1 n-grams, or one of all its tokens when 0 < k < n. The
// caller gives each token's rank (an inclusive prefix sum of token starts), each document's
// first token and first n-gram slot, so every n-gram knows where it goes: no atomics, and the
// output is in document then position order, as on the CPU.
//
// normalized   uint32 (n,)          text_classify's lower-cased code points
// flags        uint8  (n,)          text_classify's flags
// rank         int64  (n,)          inclusive prefix sum of the GSH_FLAG_TOKEN_START flags
// doc_starts   int64  (n_docs,)     where each document starts (ascending)
// doc_tokens   int64  (n_docs + 1,) tokens before each document's start; last: all tokens
// gram_offsets int64  (n_docs + 1,) each document's first n-gram slot; last: all n-grams
// states       uint32 (>= gram_offsets[n_docs],) out
__global__ void __launch_bounds__(GSH_BLOCK, 8)
    text_word_states(const unsigned int* normalized, const unsigned char* flags, long long n,
                     const long long* rank, const long long* doc_starts, long long n_docs,
                     const long long* doc_tokens, const long long* gram_offsets, int ngram,
                     unsigned int* states) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        if ((flags[i] & GSH_FLAG_TOKEN_START) == 0u) {
            continue;
        }
        const long long doc = document_at(doc_starts, n_docs, i);
        const long long token = rank[i] - 1 - doc_tokens[doc];  // rank inside the document
        const long long count = doc_tokens[doc + 1] - doc_tokens[doc];
        const bool whole = count < ngram;  // one n-gram of every token
        if (whole ? token != 0 : token + ngram > count) {
            continue;
        }
        const long long need = whole ? count : ngram;
        unsigned int state = GSH_FNV_OFFSET_BASIS;
        long long j = i;
        for (long long taken = 0; taken < need; ++taken) {
            if (taken > 0) {
                state = fnv1a_step(state, GSH_SPACE);
                while ((flags[j] & GSH_FLAG_TOKEN_START) == 0u) {
                    ++j;
                }
            }
            while (j < n && (flags[j] & GSH_FLAG_WORD) != 0u) {
                state = fnv1a_code_point(state, normalized[j]);
                ++j;
            }
        }
        states[gram_offsets[doc] + token] = state;
    }
}

// ---- character n-grams without compaction ----------------------------------------------------
//
// text_char_states hashes every character n-gram of the normalized text straight from
// text_classify's output. A document of k kept code points has a normalized text of
// L = k - 1 code points (its trailing space dropped), hence L - n + 1 n-grams, or one of the whole
// text when 0 < L < n. One thread per code point: a kept one whose n-gram exists walks forward
// through the next n kept code points (skipping the rest) and hashes them. The caller gives each
// kept code point's rank (an inclusive prefix sum of the GSH_FLAG_KEEP flags), each document's
// first kept rank and first n-gram slot.
//
// normalized   uint32 (n,)          text_classify's lower-cased code points
// flags        uint8  (n,)          text_classify's flags
// rank         int64  (n,)          inclusive prefix sum of the GSH_FLAG_KEEP flags
// doc_starts   int64  (n_docs,)     where each document starts (ascending)
// doc_kept     int64  (n_docs + 1,) kept code points before each document's start; last: all
// gram_offsets int64  (n_docs + 1,) each document's first n-gram slot; last: all n-grams
// states       uint32 (>= gram_offsets[n_docs],) out
__global__ void __launch_bounds__(GSH_BLOCK, 8)
    text_char_states(const unsigned int* normalized, const unsigned char* flags, long long n,
                     const long long* rank, const long long* doc_starts, long long n_docs,
                     const long long* doc_kept, const long long* gram_offsets, int ngram,
                     unsigned int* states) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        if ((flags[i] & GSH_FLAG_KEEP) == 0u) {
            continue;
        }
        const long long doc = document_at(doc_starts, n_docs, i);
        const long long position = rank[i] - 1 - doc_kept[doc];  // in the normalized text
        const long long length = doc_kept[doc + 1] - doc_kept[doc] - 1;
        const bool whole = length < ngram;  // one n-gram of the whole text
        if (whole ? position != 0 : position + ngram > length) {
            continue;
        }
        const long long need = whole ? length : ngram;
        unsigned int state = GSH_FNV_OFFSET_BASIS;
        long long j = i;
        for (long long taken = 0; taken < need; ++taken, ++j) {
            while ((flags[j] & GSH_FLAG_KEEP) == 0u) {
                ++j;
            }
            state = fnv1a_code_point(state, normalized[j]);
        }
        states[gram_offsets[doc] + position] = state;
    }
}

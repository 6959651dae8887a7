// Exact Hamming radius join of distinct codes: every pair within `radius`, each found once.
//
// The host (gpusimhash/_gpu/join.py) collapses identical codes first, then cuts the bits into m
// blocks, block j covering bits [bounds[j], bounds[j + 1]). Generalized pigeonhole: two codes
// within `radius` bits differ in at most block_radius = floor(radius / m) bits of some block. For
// each block the host sorts the distinct codes by their block key (a radix sort), so the codes of
// one key, a bucket, sit next to each other in `words` and bucket-versus-bucket work reads two
// dense runs of rows. Block j compares the bucket pairs (u, v = u ^ mask), popcount(mask) <=
// block_radius, and keeps a pair only if no earlier block already had its keys within
// block_radius: every pair is emitted from the first block that qualifies, exactly once.
//
// join_bucket_pairs<Words>: one warp per (non-empty bucket u, neighbour mask) item, warps striding
//   over the items. A bucket pair is taken once (u <= v); its |u| * |v| compares (|u|^2 keeping
//   a < b when u == v) are spread over the lanes, 32 at a time. A bucket pair of more than
//   big_pairs compares is not compared here: it is appended to `big` (as u * n_buckets + v) for
//   join_tiles, the oversized-bucket fallback, which spreads it over many blocks (the host keeps
//   big_pairs below 2**31).
// join_tiles<Words>: rectangles of rows [a_lo, a_hi) x columns [b_lo, b_hi) of `words`, cut into
//   tiles of blockDim.x rows by tile_cols columns; one block per tile, blocks striding over the
//   tiles. A tile's columns are staged in dynamic shared memory (tile_cols * words uint64) and
//   every thread compares its row with each of them. A rectangle whose rows and columns are the
//   same range keeps pairs a < b only. One rectangle over all the codes, at block 0 of 1, is the
//   brute-force join for small inputs.
//
// Compares are XOR + popcount over the words of both codes. Found pairs leave through
// warp_append (common.cuh): keys min(id) * n_ids + max(id) of the rows' distinct-code ids, one
// atomicAdd per warp on counters[0], written while below pair_capacity and always counted, so the
// host reruns at the exact size after an overflow; join_bucket_pairs counts big bucket pairs in
// counters[1] likewise. Both kernels need blockDim.x a multiple of 32 (warp intrinsics with the
// full mask) and are correct for any grid.
//
// Determinism: the set of keys written is fixed by the inputs; their order depends on scheduling,
// and the host sorts them.
//
// Arguments (arrays C-contiguous):
//   words         uint64 (n, n_words)     distinct codes in bucket order (zero-padded words)
//   ids           int64  (n,)             distinct-code id of each row
//   starts        int64  (n_buckets + 1,) first row of each bucket (join_bucket_pairs)
//   keys          uint32 (n_keys,)        the non-empty buckets
//   masks         uint32 (n_masks,)       every block-key mask of popcount <= block_radius
//   rects         int64  (n_rects, 4)     a_lo, a_hi, b_lo, b_hi (join_tiles)
//   tile_starts   int64  (n_rects + 1,)   first tile of each rectangle; the last is the total
//   bounds        int32  (m + 1,)         bit bounds of the blocks
//   block, block_radius, radius, n_words  int32
//   n_buckets, n_ids, big_pairs           int64
//   pairs         int64  (pair_capacity,) out: pair keys
//   counters      uint64 (2,)             pairs found, big bucket pairs found (zeroed by the host)
//   big           int64  (big_capacity,)  out: big bucket pairs

// True when codes a and b are within block_radius on one of the blocks before `block`, so the
// pair belongs to an earlier block.
static __device__ __forceinline__ bool join_found_earlier(const unsigned long long* a,
                                                          const unsigned long long* b,
                                                          const int* bounds, int block,
                                                          int block_radius) {
    for (int j = 0; j < block; ++j) {
        if (range_distance(a, b, bounds[j], bounds[j + 1]) <= block_radius) {
            return true;
        }
    }
    return false;
}

static __device__ __forceinline__ long long join_pair_key(long long id_a, long long id_b,
                                                          long long n_ids) {
    return id_a < id_b ? id_a * n_ids + id_b : id_b * n_ids + id_a;
}

template <int Words>
__global__ void join_bucket_pairs(const unsigned long long* words, const long long* ids,
                                  const long long* starts, const unsigned int* keys,
                                  long long n_keys, const unsigned int* masks, int n_masks,
                                  long long n_buckets, const int* bounds, int block,
                                  int block_radius, int radius, int n_words, long long n_ids,
                                  long long big_pairs, long long* pairs,
                                  unsigned long long* counters, long long pair_capacity,
                                  long long* big, long long big_capacity) {
    const int nw = code_words<Words>(n_words);
    const unsigned int lane = threadIdx.x & 31u;
    const long long n_warps = (long long)gridDim.x * (blockDim.x / 32);
    const long long n_items = n_keys * n_masks;
    for (long long item = (long long)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
         item < n_items; item += n_warps) {
        // everything up to the compare loop is the same in every lane of the warp
        const long long key_index = item / n_masks;
        const unsigned int u = keys[key_index];
        const unsigned int v = u ^ masks[item - key_index * n_masks];
        if (v < u || (long long)v >= n_buckets) {
            continue;
        }
        const long long u_first = starts[u];
        const long long u_size = starts[u + 1] - u_first;
        const long long v_first = starts[v];
        const long long v_size = starts[v + 1] - v_first;
        const long long total = u_size * v_size;
        if (v_size == 0 || (u == v && u_size < 2)) {
            continue;
        }
        if (total > big_pairs) {
            if (lane == 0u) {
                const unsigned long long slot = atomicAdd(counters + 1, 1ull);
                if (slot < (unsigned long long)big_capacity) {
                    big[slot] = (long long)u * n_buckets + v;
                }
            }
            continue;
        }
        // total <= big_pairs < 2**31 here: 32-bit division, far cheaper than 64-bit
        const unsigned int columns = (unsigned int)v_size;
        for (long long first = 0; first < total; first += 32) {
            const unsigned int t = (unsigned int)first + lane;
            bool keep = false;
            long long key = 0;
            if (t < total) {
                const long long a = u_first + t / columns;
                const long long b = v_first + t % columns;
                if (u != v || a < b) {
                    const unsigned long long* code_a = words + a * nw;
                    const unsigned long long* code_b = words + b * nw;
                    keep = code_distance<Words>(code_a, code_b, n_words) <= radius &&
                           !join_found_earlier(code_a, code_b, bounds, block, block_radius);
                    key = keep ? join_pair_key(ids[a], ids[b], n_ids) : 0;
                }
            }
            warp_append(keep, key, pairs, counters, (unsigned long long)pair_capacity);
        }
    }
}

template <int Words>
__global__ void join_tiles(const unsigned long long* words, const long long* ids,
                           const long long* rects, const long long* tile_starts, long long n_rects,
                           int tile_cols, const int* bounds, int block, int block_radius,
                           int radius, int n_words, long long n_ids, long long* pairs,
                           unsigned long long* counters, long long pair_capacity) {
    const int nw = code_words<Words>(n_words);
    unsigned long long* staged = reinterpret_cast<unsigned long long*>(gsh_dynamic_shared());
    const long long n_tiles = tile_starts[n_rects];
    for (long long tile = blockIdx.x; tile < n_tiles; tile += gridDim.x) {
        // the rectangle of this tile: the last one starting at or before it
        long long low = 0;
        long long high = n_rects;
        while (high - low > 1) {
            const long long middle = (low + high) / 2;
            if (tile_starts[middle] <= tile) {
                low = middle;
            } else {
                high = middle;
            }
        }
        const long long* rect = rects + 4 * low;
        const long long a_lo = rect[0], a_hi = rect[1], b_lo = rect[2], b_hi = rect[3];
        const long long col_tiles = (b_hi - b_lo + tile_cols - 1) / tile_cols;
        const long long local = tile - tile_starts[low];
        const long long first_row = a_lo + (local / col_tiles) * blockDim.x;
        const long long first_col = b_lo + (local % col_tiles) * tile_cols;
        const int n_cols = b_hi - first_col < tile_cols ? (int)(b_hi - first_col) : tile_cols;
        const bool diagonal = a_lo == b_lo && a_hi == b_hi;
        if (diagonal && first_col + n_cols <= first_row + 1) {
            continue;  // below the diagonal: no pair a < b here (the same in the whole block)
        }
        __syncthreads();  // the previous tile's columns are no longer read
        for (int i = threadIdx.x; i < n_cols * nw; i += blockDim.x) {
            staged[i] = words[first_col * nw + i];
        }
        __syncthreads();
        const long long row = first_row + threadIdx.x;
        const bool has_row = row < a_hi;
        // the row's code: in registers when the width is fixed (the rare earlier-block check
        // reads it from memory, where any word can be indexed)
        const unsigned long long* row_words = words + (has_row ? row : a_lo) * nw;
        unsigned long long row_code[Words > 0 ? Words : 1];
#pragma unroll
        for (int w = 0; w < (Words > 0 ? Words : 1); ++w) {
            row_code[w] = Words > 0 ? row_words[w] : 0ull;
        }
        const long long id_a = has_row ? ids[row] : 0;
        for (int c = 0; c < n_cols; ++c) {
            const long long col = first_col + c;
            bool keep = false;
            long long key = 0;
            if (has_row && (!diagonal || row < col)) {
                const unsigned long long* code_b = staged + c * nw;
                const int distance = Words > 0 ? code_distance<Words>(row_code, code_b, n_words)
                                               : code_distance<Words>(row_words, code_b, n_words);
                keep = distance <= radius &&
                       !join_found_earlier(row_words, code_b, bounds, block, block_radius);
                key = keep ? join_pair_key(id_a, ids[col], n_ids) : 0;
            }
            warp_append(keep, key, pairs, counters, (unsigned long long)pair_capacity);
        }
    }
}

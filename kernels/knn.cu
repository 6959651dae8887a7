// Exact k nearest neighbours by Hamming distance, brute force, ties broken by position: the
// results of FAISS IndexBinaryFlat.search.
//
// Thread mapping: one block per tile of query_tile queries, blocks striding over the tiles. The
// stored codes stream through dynamic shared memory in chunks of `chunk` codes, twice:
//   1. every thread takes (code, query) pairs of the chunk and adds one to the query's
//      histogram of distances (shared int32 atomics, bits + 1 bins per query); from the
//      histogram, one thread per query finds the threshold T, the smallest distance with at
//      least k codes at or below it, the count `less` below it and the ties `need` = k - less;
//   2. each warp owns queries (warp w takes queries w, w + warps, ...) and scans the chunk in
//      position order, 32 codes at a time: a ballot ranks the lanes' codes below T and at T
//      among themselves, and running counts in the warp's registers give each its slot. Codes
//      below T fill slots 0 .. less - 1 in position order; codes at T fill slots less .. k - 1
//      until `need` are taken, so the ties kept are those of the smallest positions.
// The host then sorts each row by (distance, position). Needs blockDim.x a multiple of 32.
//
// Shared memory (bytes, set by the host): 8 * n_words * (query_tile + chunk)
//   + 4 * query_tile * (bits + 1 + 4).
//
// Determinism: the result is a function of the inputs (no order-dependent choice anywhere).
//
// Arguments (arrays C-contiguous):
//   stored      uint64 (n_stored, n_words)  the searched codes, in position order
//   queries     uint64 (n_queries, n_words)
//   n_words, bits, k, query_tile, chunk     int32; 1 <= k <= n_stored
//   distances   int32 (n_queries, k)        out, per row unsorted until the host sorts
//   positions   int64 (n_queries, k)        out

template <int Words>
__global__ void knn_topk(const unsigned long long* stored, long long n_stored,
                         const unsigned long long* queries, long long n_queries, int n_words,
                         int bits, int k, int query_tile, int chunk, int* distances,
                         long long* positions) {
    const int nw = code_words<Words>(n_words);
    unsigned long long* query_codes = reinterpret_cast<unsigned long long*>(gsh_dynamic_shared());
    unsigned long long* chunk_codes = query_codes + query_tile * nw;
    int* histograms = reinterpret_cast<int*>(chunk_codes + chunk * nw);
    int* thresholds = histograms + query_tile * (bits + 1);
    int* below = thresholds + query_tile;  // codes below the threshold (their count)
    int* written_below = below + query_tile;
    int* written_ties = written_below + query_tile;
    const unsigned int lane = threadIdx.x & 31u;
    const int warp = threadIdx.x / 32;
    const int n_warps = blockDim.x / 32;
    const unsigned int lanes_before = (1u << lane) - 1u;
    const long long n_tiles = (n_queries + query_tile - 1) / query_tile;
    for (long long tile = blockIdx.x; tile < n_tiles; tile += gridDim.x) {
        const long long first_query = tile * query_tile;
        const int n_tile = n_queries - first_query < query_tile ? (int)(n_queries - first_query)
                                                                : query_tile;
        __syncthreads();  // the previous tile is done with the shared memory
        for (int i = threadIdx.x; i < n_tile * nw; i += blockDim.x) {
            query_codes[i] = queries[first_query * nw + i];
        }
        for (int i = threadIdx.x; i < n_tile * (bits + 1); i += blockDim.x) {
            histograms[i] = 0;
        }
        // pass 1: histograms of distances
        for (long long first = 0; first < n_stored; first += chunk) {
            const int n_chunk = n_stored - first < chunk ? (int)(n_stored - first) : chunk;
            __syncthreads();
            for (int i = threadIdx.x; i < n_chunk * nw; i += blockDim.x) {
                chunk_codes[i] = stored[first * nw + i];
            }
            __syncthreads();
            // neighbouring lanes take different queries of one code: their histogram bins are
            // far apart, so the shared atomics rarely collide
            for (int item = threadIdx.x; item < n_tile * n_chunk; item += blockDim.x) {
                const int c = item / n_tile;
                const int q = item - c * n_tile;
                const int d = code_distance<Words>(query_codes + q * nw, chunk_codes + c * nw,
                                                   n_words);
                atomicAdd(histograms + q * (bits + 1) + d, 1);
            }
        }
        __syncthreads();
        for (int q = threadIdx.x; q < n_tile; q += blockDim.x) {
            const int* histogram = histograms + q * (bits + 1);
            int count = 0;
            int d = 0;
            while (count + histogram[d] < k) {  // ends at d <= bits: k <= n_stored
                count += histogram[d];
                ++d;
            }
            thresholds[q] = d;
            below[q] = count;
            written_below[q] = 0;
            written_ties[q] = 0;
        }
        // pass 2: the codes below the threshold, and the first ties, in position order
        for (long long first = 0; first < n_stored; first += chunk) {
            const int n_chunk = n_stored - first < chunk ? (int)(n_stored - first) : chunk;
            __syncthreads();
            for (int i = threadIdx.x; i < n_chunk * nw; i += blockDim.x) {
                chunk_codes[i] = stored[first * nw + i];
            }
            __syncthreads();
            for (int q = warp; q < n_tile; q += n_warps) {
                const int threshold = thresholds[q];
                const int n_below = below[q];
                const int need = k - n_below;
                int done_below = written_below[q];
                int done_ties = written_ties[q];
                if (done_below == n_below && done_ties >= need) {
                    continue;  // this query has all its results (the same in every lane)
                }
                int* out_distances = distances + (first_query + q) * k;
                long long* out_positions = positions + (first_query + q) * k;
                for (int base = 0; base < n_chunk; base += 32) {
                    const int c = base + (int)lane;
                    const int d = c < n_chunk ? code_distance<Words>(query_codes + q * nw,
                                                                     chunk_codes + c * nw, n_words)
                                              : bits + 1;
                    const unsigned int is_below = __ballot_sync(GSH_FULL_MASK, d < threshold);
                    const unsigned int is_tie = __ballot_sync(GSH_FULL_MASK, d == threshold);
                    int slot = -1;
                    if (d < threshold) {
                        slot = done_below + __popc(is_below & lanes_before);
                    } else if (d == threshold) {
                        const int rank = done_ties + __popc(is_tie & lanes_before);
                        slot = rank < need ? n_below + rank : -1;
                    }
                    if (slot >= 0) {
                        out_distances[slot] = d;
                        out_positions[slot] = first + c;
                    }
                    done_below += __popc(is_below);
                    done_ties += __popc(is_tie);
                }
                __syncwarp();
                if (lane == 0u) {
                    written_below[q] = done_below;
                    written_ties[q] = done_ties;
                }
            }
        }
    }
}

// Exact similarities of candidate pairs from the documents' sorted features.
//
// Each document is a run of distinct feature states in ascending order with their summed
// weights (gpusimhash.search.verify.DocumentFeatures), its exponent e (max |w| = m * 2**e,
// 0.5 <= m < 1) and its squared norm in units of 2**e. For a pair (a, b) one merge walk over the
// two sorted runs gives the dot product of the scaled weights, the shared feature count and the
// sums of the element-wise minimum and maximum over the union of features: the weighted cosine,
// the Jaccard similarity of the feature sets and the weighted Jaccard similarity.
//
// This is gpusimhash/_cpu/_verify_loops.py's pair_similarities statement for statement: the same
// walk, the same sums in the same order, the same divisions, so the float64 results are equal,
// not close (IEEE add, multiply, divide and sqrt are correctly rounded on the device, ldexp is
// exact or correctly rounded, --fmad=false forbids contracting dot += x * y into an FMA).
//
// Thread mapping: one thread per pair (the walk is sequential: splitting it would change the
// order of the sums), grid-stride, so any grid is correct. Pairs with a featureless document
// get NaN for all three, a document paired with itself its self-similarity.
//
// Arguments (all arrays C-contiguous):
//   states         State   (nnz,)         distinct states of each document, ascending
//   offsets        int64   (n_docs + 1,)  row starts
//   weights        float64 (nnz,)         summed weight of each state
//   exponents      int64   (n_docs,)      e of each document
//   squared_norms  float64 (n_docs,)      sum (w * 2**-e)**2 of each document
//   left, right    int64   (n_pairs,)     the documents of each pair, in [0, n_docs)
//   cosine, jaccard, weighted  float64 (n_pairs,)  out

#define GSH_QUIET_NAN 0x7FF8000000000000LL  // NumPy's np.nan

template <typename State>
__global__ void __launch_bounds__(GSH_BLOCK)
    verify_pairs(const State* states, const long long* offsets, const double* weights,
                 const long long* exponents, const double* squared_norms, const long long* left,
                 const long long* right, long long n_pairs, double* cosine, double* jaccard,
                 double* weighted) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long p = (long long)blockIdx.x * blockDim.x + threadIdx.x; p < n_pairs;
         p += stride) {
        const long long a = left[p];
        const long long b = right[p];
        long long i = offsets[a];
        const long long i_end = offsets[a + 1];
        long long j = offsets[b];
        const long long j_end = offsets[b + 1];
        const long long size_a = i_end - i;
        const long long size_b = j_end - j;
        if (size_a == 0 || size_b == 0) {
            const double nan = __longlong_as_double(GSH_QUIET_NAN);
            cosine[p] = nan;
            jaccard[p] = nan;
            weighted[p] = nan;
            continue;
        }
        const int shift_a = (int)-exponents[a];
        const int shift_b = (int)-exponents[b];
        double dot = 0.0;
        long long shared = 0;
        double low = 0.0;
        double high = 0.0;
        while (i < i_end || j < j_end) {
            if (j == j_end || (i < i_end && states[i] < states[j])) {
                const double w = weights[i];
                low += w < 0.0 ? w : 0.0;
                high += w > 0.0 ? w : 0.0;
                ++i;
            } else if (i == i_end || states[j] < states[i]) {
                const double w = weights[j];
                low += w < 0.0 ? w : 0.0;
                high += w > 0.0 ? w : 0.0;
                ++j;
            } else {
                const double wa = weights[i];
                const double wb = weights[j];
                const double product = ldexp(wa, shift_a) * ldexp(wb, shift_b);
                dot += product;
                low += wa < wb ? wa : wb;
                high += wa > wb ? wa : wb;
                ++shared;
                ++i;
                ++j;
            }
        }
        const double value = dot / sqrt(squared_norms[a] * squared_norms[b]);
        cosine[p] = value > 1.0 ? 1.0 : (value < -1.0 ? -1.0 : value);
        jaccard[p] = (double)shared / (double)(size_a + size_b - shared);
        weighted[p] = high != 0.0 ? low / high : __longlong_as_double(GSH_QUIET_NAN);
    }
}

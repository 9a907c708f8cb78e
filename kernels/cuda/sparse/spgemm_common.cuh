// Shared pieces of the SpGEMM ladder (C = A·B, all matrices CSR with int32
// indices and float values):
//   blockExclusiveScan  a block-wide prefix sum (warp shuffles + one shared array)
//   RowSource           the products of row i of A with the rows of B it selects
//   ListSource          products already expanded into a list per row (ESC)
//   row_products        how many products each row of C receives (an upper bound on its entries)
//   assign_bins         sorts rows into bins by a per-row bound (the nsparse idea)
//   gather_rows         copies rows from upper-bound slices into the exact C
//   scan_blocks/scan_add  an exclusive prefix sum over int32
#pragma once

#define WARP 32
#define EMPTY_KEY (-1)
#define MAX_KEY 0x7fffffff

// blockExclusiveScan returns the sum of v over the threads before this one,
// and stores the block's total in *total. Every thread of the block must call
// it (it synchronizes); blockDim.x must be a multiple of 32.
__device__ __forceinline__ int blockExclusiveScan(int v, int* total) {
    __shared__ int warpSums[32];
    int lane = threadIdx.x & (WARP - 1), warp = threadIdx.x / WARP, warps = blockDim.x / WARP;
    int x = v;
#pragma unroll
    for (int o = 1; o < WARP; o <<= 1) {
        int y = __shfl_up_sync(0xffffffffu, x, o);
        if (lane >= o) x += y;
    }
    if (lane == WARP - 1) warpSums[warp] = x;
    __syncthreads();
    if (warp == 0) {
        int s = lane < warps ? warpSums[lane] : 0;
#pragma unroll
        for (int o = 1; o < WARP; o <<= 1) {
            int y = __shfl_up_sync(0xffffffffu, s, o);
            if (lane >= o) s += y;
        }
        warpSums[lane] = s;
    }
    __syncthreads();
    int before = (warp > 0 ? warpSums[warp - 1] : 0) + x - v;
    *total = warpSums[warps - 1];
    __syncthreads();  // warpSums is reused by the next call
    return before;
}

// RowSource yields the products of row `row` of A with B: groups of G lanes
// take A's entries in turn (a_ik), and the lanes of a group walk row k of B,
// so reads of B are coalesced. G = 32 (a warp per entry) suits long rows of
// B; short ones leave lanes idle, so small-row kernels use G = 8 or 16.
// f(column, value) is called once per product.
template <int G>
struct RowSource {
    const int *aPtr, *aCol;
    const float* aVal;
    const int *bPtr, *bCol;
    const float* bVal;

    template <class F>
    __device__ __forceinline__ void forEach(int row, F f) const {
        int lane = threadIdx.x % G, group = threadIdx.x / G, groups = blockDim.x / G;
        for (int p = aPtr[row] + group; p < aPtr[row + 1]; p += groups) {
            int k = aCol[p];
            float a = aVal ? aVal[p] : 0.f;
            for (int q = bPtr[k] + lane; q < bPtr[k + 1]; q += G) f(bCol[q], bVal ? a * bVal[q] : 0.f);
        }
    }

    // forEachIn is forEach restricted to columns [w0, w1), for the windowed
    // kernels, whose cost is latency: each window visits every entry of A's
    // row. A row of B of at most 32 entries is a single read: the lanes take
    // one entry each and keep those inside the window. A longer row is
    // searched for where it enters the window, 32 probes at a time: each
    // round reads 32 evenly spaced columns, and a ballot of "below w0" (a
    // prefix, since B's rows are sorted) narrows the range 32-fold, so
    // 100 000 entries take 4 dependent reads instead of a binary search's 17.
    // (Loading 32 entries of A per warp up front, tried too, was 1.7x slower
    // on R-MAT: its rows of A are short, and it left warps idle.)
    // Needs G == WARP.
    template <class F>
    __device__ __forceinline__ void forEachIn(int row, int w0, int w1, F f) const {
        static_assert(G == WARP, "forEachIn works a warp at a time");
        const unsigned all = 0xffffffffu;
        int lane = threadIdx.x % WARP, warp = threadIdx.x / WARP, warps = blockDim.x / WARP;
        for (int p = aPtr[row] + warp; p < aPtr[row + 1]; p += warps) {
            int k = aCol[p], lo = bPtr[k], hi = bPtr[k + 1], stop = hi;  // the entry point is in [lo, hi]
            float a = aVal ? aVal[p] : 0.f;
            if (hi - lo <= WARP) {
                int q = lo + lane;
                if (q < hi) {
                    int c = bCol[q];
                    if (c >= w0 && c < w1) f(c, bVal ? a * bVal[q] : 0.f);
                }
                continue;
            }
            while (hi - lo > WARP) {
                int step = (hi - lo + WARP - 1) / WARP, probe = lo + lane * step;
                int n = __popc(__ballot_sync(all, probe < hi && bCol[probe] < w0));
                int next = n == 0 ? lo : lo + (n - 1) * step + 1;
                hi = min(hi, lo + n * step);
                lo = next;
            }
            lo += __popc(__ballot_sync(all, lo + lane < hi && bCol[lo + lane] < w0));
            for (int q = lo + lane; q < stop; q += WARP) {
                int c = bCol[q];
                if (c >= w1) break;  // the rest of this lane's columns are larger still
                f(c, bVal ? a * bVal[q] : 0.f);
            }
        }
    }
};

// lowerBound is the first q in [lo, hi) with col[q] >= key (hi if none): a
// binary search of one sorted row of B.
__device__ __forceinline__ int lowerBound(const int* col, int lo, int hi, int key) {
    while (lo < hi) {
        int mid = (lo + hi) >> 1;
        if (col[mid] < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

// blockMinMax combines every thread's [lo, hi] into the block's, returned to
// all threads. Every thread must call it.
__device__ __forceinline__ void blockMinMax(int* lo, int* hi) {
    __shared__ int sLo, sHi;
    if (threadIdx.x == 0) sLo = MAX_KEY, sHi = -1;
    __syncthreads();
    int l = *lo, h = *hi;
#pragma unroll
    for (int o = WARP / 2; o > 0; o /= 2) {
        l = min(l, __shfl_xor_sync(0xffffffffu, l, o));
        h = max(h, __shfl_xor_sync(0xffffffffu, h, o));
    }
    if ((threadIdx.x & (WARP - 1)) == 0 && h >= 0) {
        atomicMin(&sLo, l);
        atomicMax(&sHi, h);
    }
    __syncthreads();
    *lo = sLo, *hi = sHi;
    __syncthreads();  // sLo/sHi are reset by the next call
}

// ListSource yields products that an expansion step already wrote into the
// slice [ptr[row], ptr[row+1]) of (col, val); the threads of the block share it.
struct ListSource {
    const int* ptr;
    const int* col;
    const float* val;

    template <class F>
    __device__ __forceinline__ void forEach(int row, F f) const {
        for (int q = ptr[row] + threadIdx.x; q < ptr[row + 1]; q += blockDim.x) f(col[q], val ? val[q] : 0.f);
    }
};

// row_products: prod[i] = sum over the entries a_ik of row i of |row k of B|,
// the number of multiplications row i of C needs. Thread per row.
extern "C" __global__ void row_products(int rows, const int* __restrict__ aPtr, const int* __restrict__ aCol,
                                        const int* __restrict__ bPtr, int* __restrict__ prod) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= rows) return;
    int s = 0;
    for (int p = aPtr[i]; p < aPtr[i + 1]; p++) s += bPtr[aCol[p] + 1] - bPtr[aCol[p]];
    prod[i] = s;
}

// Parameters and construction of the two product sources, for the macros.
#define ROW_SOURCE_PARAMS                                                                                     \
    const int *aPtr, const int *aCol, const float *aVal, const int *bPtr, const int *bCol, const float *bVal
#define ROW_SOURCE_INIT ROW_SOURCE_INIT_G(WARP)
#define ROW_SOURCE_INIT_G(G) RowSource<G> src{aPtr, aCol, aVal, bPtr, bCol, bVal}
#define LIST_SOURCE_PARAMS const int *listPtr, const int *listCol, const float *listVal
#define LIST_SOURCE_INIT ListSource src{listPtr, listCol, listVal}

#define MAX_BINS 16

// assign_bins puts row i into the first bin b with bound[i] <= limit[b]
// (limits ascending, the last one INT_MAX) and appends it to that bin's list
// binRows[b*rows ...]; binCount[b] counts the rows. Rows with bound 0 have no
// products and go nowhere. A block first counts in shared memory, so each
// bin's global counter sees one atomic per block, not one per row.
extern "C" __global__ void assign_bins(int rows, const int* __restrict__ bound, const int* __restrict__ limit, int bins,
                                       int* __restrict__ binCount, int* __restrict__ binRows) {
    __shared__ int local[MAX_BINS], base[MAX_BINS];
    if (threadIdx.x < MAX_BINS) local[threadIdx.x] = 0;
    __syncthreads();
    int i = blockIdx.x * blockDim.x + threadIdx.x, b = -1, slot = 0;
    if (i < rows && bound[i] > 0) {
        b = 0;
        while (bound[i] > limit[b]) b++;
        slot = atomicAdd(&local[b], 1);
    }
    __syncthreads();
    if (threadIdx.x < bins && local[threadIdx.x] > 0) base[threadIdx.x] = atomicAdd(&binCount[threadIdx.x], local[threadIdx.x]);
    __syncthreads();
    if (b >= 0) binRows[b * rows + base[b] + slot] = i;
}

// clear_rows sets v[list[i]] = 0 for the n rows of a list.
extern "C" __global__ void clear_rows(const int* __restrict__ list, int n, int* __restrict__ v) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) v[list[i]] = 0;
}

// gather_rows copies row i (count[i] entries) from its slice at from[i] to
// its place cPtr[i] in C. A warp per row.
extern "C" __global__ void gather_rows(int rows, const int* __restrict__ from, const int* __restrict__ cPtr,
                                       const int* __restrict__ sliceCol, const float* __restrict__ sliceVal,
                                       int* __restrict__ cCol, float* __restrict__ cVal) {
    int row = (blockIdx.x * blockDim.x + threadIdx.x) / WARP, lane = threadIdx.x & (WARP - 1);
    if (row >= rows) return;
    int src = from[row], dst = cPtr[row], n = cPtr[row + 1] - dst;
    for (int t = lane; t < n; t += WARP) {
        cCol[dst + t] = sliceCol[src + t];
        cVal[dst + t] = sliceVal[src + t];
    }
}

// Exclusive prefix sum of int32 values: the glue of every two-pass step
// (row counts -> row pointers, product counts -> offsets). scan_blocks scans
// tiles of 4096 values (1024 threads x 4 each) and writes each tile's total to
// sums; the host scans sums the same way (recursively) and scan_add adds the
// tile offsets back. out has n+1 entries: out[n] is the grand total, as in a
// CSR row-pointer array.
#define SCAN_ITEMS 4
#define SCAN_TILE (1024 * SCAN_ITEMS)

extern "C" __global__ void __launch_bounds__(1024) scan_blocks(const int* __restrict__ in, int* __restrict__ out,
                                                              int* __restrict__ sums, int n) {
    int first = blockIdx.x * SCAN_TILE + threadIdx.x * SCAN_ITEMS;
    int v[SCAN_ITEMS], mine = 0;
#pragma unroll
    for (int k = 0; k < SCAN_ITEMS; k++) {
        v[k] = first + k < n ? in[first + k] : 0;
        mine += v[k];
    }
    int total;
    int before = blockExclusiveScan(mine, &total);
#pragma unroll
    for (int k = 0; k < SCAN_ITEMS; k++) {
        if (first + k < n) out[first + k] = before;
        before += v[k];
    }
    if (threadIdx.x == 0) {
        sums[blockIdx.x] = total;
        if (blockIdx.x == gridDim.x - 1) out[n] = total;
    }
}

extern "C" __global__ void scan_add(int* __restrict__ out, const int* __restrict__ tileOffsets, int n, int tiles) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i > n) return;
    int tile = min(i / SCAN_TILE, tiles - 1);
    out[i] += tileOffsets[tile];
}

// SpGEMM step 05 — outer product: expand, sort, compress (ESC).
//
// Idea: the seed's other formulation. C = sum over k of (column k of A) x
// (row k of B): block k multiplies every a_ik of A's column k with every b_kj
// of B's row k. No thread ever searches: expansion is pure streaming, and all
// threads of a block do the same amount of work. The products of row i
// arrive from many blocks, so they must be brought together: expansion
// appends them to row i's slice of an upper-bound list (an atomic cursor per
// row: a counting sort by row), and the finish kernels compress each slice in
// place (step 04's binned hash tables, dense for long rows), which sorts by
// column. gather_rows then packs the slices into C.
// Needs: A by columns, so the first kernels transpose A (CSR -> CSC) with a
// histogram, a scan and a scatter.
// Traffic: every product goes to global memory and back (8 bytes written,
// 8 read), where row-wise steps keep them on chip.
// Cost: memory for all products, and on power-law matrices one long column
// of A times one long row of B lands in a single block: equal work per
// thread, very unequal work per block.
#include "sparse/spgemm_dense.cuh"
#include "sparse/spgemm_hash.cuh"

// column_counts: colCount[j] = number of entries of A in column j.
extern "C" __global__ void column_counts(int nnz, const int* __restrict__ aCol, int* __restrict__ colCount) {
    int p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p < nnz) atomicAdd(&colCount[aCol[p]], 1);
}

// scatter_columns moves A's entries into CSC order: a warp per row of A, each
// entry claims the next slot of its column (order within a column is free).
extern "C" __global__ void scatter_columns(int rows, const int* __restrict__ aPtr, const int* __restrict__ aCol,
                                           const float* __restrict__ aVal, int* __restrict__ cursor,
                                           int* __restrict__ cscRow, float* __restrict__ cscVal) {
    int row = (blockIdx.x * blockDim.x + threadIdx.x) / WARP, lane = threadIdx.x & (WARP - 1);
    if (row >= rows) return;
    for (int p = aPtr[row] + lane; p < aPtr[row + 1]; p += WARP) {
        int slot = atomicAdd(&cursor[aCol[p]], 1);
        cscRow[slot] = row;
        cscVal[slot] = aVal[p];
    }
}

// expand_outer: block k, warps over column k of A, lanes over row k of B.
// Lane 0 reserves |row k of B| slots in row i's slice with one atomic.
extern "C" __global__ void expand_outer(const int* __restrict__ cscPtr, const int* __restrict__ cscRow,
                                        const float* __restrict__ cscVal, const int* __restrict__ bPtr,
                                        const int* __restrict__ bCol, const float* __restrict__ bVal,
                                        int* __restrict__ cursor, int* __restrict__ listCol,
                                        float* __restrict__ listVal) {
    int k = blockIdx.x, lane = threadIdx.x & (WARP - 1), warp = threadIdx.x / WARP, warps = blockDim.x / WARP;
    int b0 = bPtr[k], len = bPtr[k + 1] - b0;
    if (len == 0) return;
    for (int p = cscPtr[k] + warp; p < cscPtr[k + 1]; p += warps) {
        int i = cscRow[p];
        float a = cscVal[p];
        int base = 0;
        if (lane == 0) base = atomicAdd(&cursor[i], len);
        base = __shfl_sync(0xffffffffu, base, 0);
        for (int q = lane; q < len; q += WARP) {
            listCol[base + q] = bCol[b0 + q];
            listVal[base + q] = a * bVal[b0 + q];
        }
    }
}

// The finish kernels read each row's list and write it back compressed and
// sorted, in place, with its length in count.
HASH_NUMERIC_KERNEL(64, 32, LIST_SOURCE_PARAMS, LIST_SOURCE_INIT)
HASH_NUMERIC_KERNEL(128, 32, LIST_SOURCE_PARAMS, LIST_SOURCE_INIT)
HASH_NUMERIC_KERNEL(256, 64, LIST_SOURCE_PARAMS, LIST_SOURCE_INIT)
HASH_NUMERIC_KERNEL(512, 128, LIST_SOURCE_PARAMS, LIST_SOURCE_INIT)
HASH_NUMERIC_KERNEL(1024, 256, LIST_SOURCE_PARAMS, LIST_SOURCE_INIT)
HASH_NUMERIC_KERNEL(2048, 256, LIST_SOURCE_PARAMS, LIST_SOURCE_INIT)
HASH_NUMERIC_KERNEL(4096, 256, LIST_SOURCE_PARAMS, LIST_SOURCE_INIT)
DENSE_NUMERIC_KERNEL(LIST_SOURCE_PARAMS, LIST_SOURCE_INIT)

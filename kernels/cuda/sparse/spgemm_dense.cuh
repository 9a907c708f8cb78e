// The dense accumulator: one row of C at a time in a row-sized workspace in
// global memory, a float per column plus a bitmap of touched columns.
//
// Adding a product is one atomicAdd and one atomicOr, with no searching. The
// row then comes out sorted for free: a block-wide prefix sum over the
// bitmap's popcounts gives every touched column its position. The price is
// workspace proportional to the number of columns for every block in flight,
// and a scan over the touched column range [lo, hi] for every row, short or
// long. Symbolic and numeric versions share the accumulation.
#pragma once
#include "sparse/spgemm_common.cuh"

// touchRow adds every product of the row into (bitmap, dense) and returns the
// range of columns touched, [lo, hi], hi < lo when the row is empty.
template <class Source>
__device__ __forceinline__ void touchRow(const Source& src, int row, unsigned* bitmap, float* dense, int* lo, int* hi) {
    *lo = MAX_KEY, *hi = -1;
    src.forEach(row, [&](int c, float v) {
        if (dense) atomicAdd(&dense[c], v);
        atomicOr(&bitmap[c / 32], 1u << (c % 32));
        *lo = min(*lo, c);
        *hi = max(*hi, c);
    });
    blockMinMax(lo, hi);
}

// denseSymbolicRow counts the distinct columns of the row into nnz[row] and
// leaves the bitmap clear for the next row.
template <class Source>
__device__ void denseSymbolicRow(const Source& src, int row, unsigned* bitmap, int* nnz) {
    int lo, hi;
    touchRow(src, row, bitmap, (float*)nullptr, &lo, &hi);
    int count = 0;
    if (hi >= 0)
        for (int w = lo / 32 + threadIdx.x; w <= hi / 32; w += blockDim.x) {
            count += __popc(bitmap[w]);
            bitmap[w] = 0;
        }
    int total;
    blockExclusiveScan(count, &total);
    if (threadIdx.x == 0) nnz[row] = total;
}

// denseNumericRow accumulates the row and writes it, sorted by column, to
// outCol/outVal from outPtr[row] on; count (if not null) gets its length.
// Workspace is left zero for the next row.
template <class Source>
__device__ void denseNumericRow(const Source& src, int row, unsigned* bitmap, float* dense, const int* outPtr,
                                int* outCol, float* outVal, int* count) {
    int lo, hi;
    touchRow(src, row, bitmap, dense, &lo, &hi);
    int pos0 = outPtr[row], written = 0;
    if (hi >= 0)
        for (int chunk = lo / 32; chunk <= hi / 32; chunk += blockDim.x) {  // same trip count in every thread
            int w = chunk + threadIdx.x;
            unsigned bits = w <= hi / 32 ? bitmap[w] : 0u;
            int total;
            int pos = pos0 + written + blockExclusiveScan(__popc(bits), &total);
            if (w <= hi / 32) bitmap[w] = 0;
            while (bits) {
                int c = w * 32 + __ffs(bits) - 1;
                bits &= bits - 1;
                outCol[pos] = c;
                outVal[pos] = dense[c];
                dense[c] = 0.f;
                pos++;
            }
            written += total;
        }
    if (count && threadIdx.x == 0) count[row] = written;
    __syncthreads();  // the workspace is clean before the next row's atomics
}

// The kernels run a fixed grid of blocks, each owning workspace slot
// blockIdx.x and taking rows rowList[r] for r = blockIdx.x, +gridDim.x, ...
// (rowList null: row r). words = 32-bit words per bitmap, cols = floats per
// dense row.
#define DENSE_SYMBOLIC_KERNEL(SRC_PARAMS, SRC_INIT)                                                                  \
    extern "C" __global__ void __launch_bounds__(1024)                                                                \
        dense_symbolic(const int* rowList, int nRows, SRC_PARAMS, unsigned* bitmaps, int words, int* nnz) {         \
        SRC_INIT;                                                                                                     \
        for (int r = blockIdx.x; r < nRows; r += gridDim.x)                                                          \
            denseSymbolicRow(src, rowList ? rowList[r] : r, bitmaps + (size_t)blockIdx.x * words, nnz);               \
    }
#define DENSE_NUMERIC_KERNEL(SRC_PARAMS, SRC_INIT)                                                                   \
    extern "C" __global__ void __launch_bounds__(1024)                                                                \
        dense_numeric(const int* rowList, int nRows, SRC_PARAMS, unsigned* bitmaps, int words, float* denses,        \
                      int cols, const int* outPtr, int* outCol, float* outVal, int* count) {                         \
        SRC_INIT;                                                                                                     \
        for (int r = blockIdx.x; r < nRows; r += gridDim.x)                                                          \
            denseNumericRow(src, rowList ? rowList[r] : r, bitmaps + (size_t)blockIdx.x * words,                      \
                            denses + (size_t)blockIdx.x * cols, outPtr, outCol, outVal, count);                       \
    }

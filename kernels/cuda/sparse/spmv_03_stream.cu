// SpMV step 03 — CSR-stream: blocks of rows with about the same number of
// entries (CSR-Adaptive, Greathouse and Daga 2014).
//
// Idea: steps 01 and 02 are latency-bound, not bandwidth-bound: a thread or
// a warp has one or two entries in flight at a time, waiting on rowPtr, then
// colIdx and val, then x. Here the host cuts the rows into blocks of at
// most CAP = 2048 entries and 512 rows (whole rows; a longer row gets a
// block to itself). A block of THREADS = 128 streams its entries with fully
// coalesced loads, CAP / THREADS = 16 independent ones per thread,
// multiplies them by x into shared memory, and only then does each thread
// add up its rows from shared memory. Every block moves about the same
// amount of data, whatever the row lengths.
// Traffic: the bytes of the bound, now with enough of them in flight.
// Cost: the row-block array (one int per block of rows, computed once per
// matrix on the host, like cuSPARSE's SpMV analysis); rows summed serially
// from shared memory; a long row is reduced by one block. Each thread loads
// its first row's bounds before the products, so that the sums do not start
// with a wait on memory after the barrier.
// Measured on an H200 (share of the bound, banded / Poisson / R-MAT):
// - loads in flight per thread decide it: CAP 1024 on 256 threads (4 each)
//   0.81 / 0.83 / 0.26, CAP 2048 on 256 (8 each) 0.93 / 0.91 / 0.24, CAP
//   2048 on 128 (16 each) 1.00 / 0.92 / 0.21;
// - the row limit is for R-MAT, whose blocks of 2048 entries otherwise span
//   thousands of empty rows, each thread walking them one bound load after
//   another: 512 rows brings it back to 0.26 (256 rows: 0.27, but Poisson,
//   five entries a row, then fills only 1280 of 2048 places: 0.90).
// Tried and reverted: summing each row with a group of threads (as many as
// the block's threads allow, up to a warp) and shuffles instead of one
// thread: slower (banded 0.194 -> 0.224 ms with CAP 1024). The serial sums
// are not what the blocks wait on.
#ifndef CAP
#define CAP 2048
#endif
#ifndef THREADS
#define THREADS 128
#endif

extern "C" __global__ void __launch_bounds__(THREADS)
    spmv_stream(const int* __restrict__ rowBlocks, const int* __restrict__ rowPtr, const int* __restrict__ colIdx,
                const float* __restrict__ val, const float* __restrict__ x, float* __restrict__ y) {
    __shared__ float prod[CAP];
    __shared__ float warpSum[THREADS / 32];
    int r0 = rowBlocks[blockIdx.x], r1 = rowBlocks[blockIdx.x + 1];
    int p0 = rowPtr[r0], p1 = rowPtr[r1];
    if (p1 - p0 > CAP) {  // one long row: the whole block reduces it
        float sum = 0.f;
#pragma unroll 4
        for (int p = p0 + threadIdx.x; p < p1; p += THREADS) sum += val[p] * x[colIdx[p]];
#pragma unroll
        for (int o = 16; o > 0; o /= 2) sum += __shfl_down_sync(0xffffffffu, sum, o);
        if (threadIdx.x % 32 == 0) warpSum[threadIdx.x / 32] = sum;
        __syncthreads();
        if (threadIdx.x == 0) {
            float s = 0.f;
            for (int w = 0; w < THREADS / 32; w++) s += warpSum[w];
            y[r0] = s;
        }
        return;
    }
    // The bounds of the first row this thread sums, loaded before the products
    // so that their latency hides behind them instead of following the barrier.
    int r = r0 + threadIdx.x, rb = 0, re = 0;
    if (r < r1) rb = rowPtr[r], re = rowPtr[r + 1];
#pragma unroll
    for (int k = 0; k < CAP / THREADS; k++) {
        int i = threadIdx.x + k * THREADS;
        if (p0 + i < p1) prod[i] = val[p0 + i] * x[colIdx[p0 + i]];
    }
    __syncthreads();
    for (; r < r1; r += THREADS) {
        if (r != r0 + threadIdx.x) rb = rowPtr[r], re = rowPtr[r + 1];  // a block of more rows than threads
        float sum = 0.f;
        for (int p = rb; p < re; p++) sum += prod[p - p0];
        y[r] = sum;
    }
}

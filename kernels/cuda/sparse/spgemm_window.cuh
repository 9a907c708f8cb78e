// Long rows on chip, and spread over many blocks: the dense accumulator of
// spgemm_dense.cuh in shared memory, one window of WINDOW columns per block.
//
// A row with thousands of entries overflows any hash table that fits in
// shared memory, but a dense array of WINDOW floats plus its bitmap fits
// easily. Block (x, y) takes window y (columns [y·WINDOW, (y+1)·WINDOW)) of
// row x of the bin: for each entry a_ik a warp finds where row k of B enters
// the window (B's rows are sorted; RowSource.forEachIn) and adds that
// stretch with shared-memory atomics; the block then writes the window's
// entries in column order. Every product is still touched once.
// Why split a row over blocks: on a power-law matrix one row can have
// millions of products; in a single block it would run long after the rest
// of the GPU has gone idle (the load imbalance of the seed's post). Here a
// row is as many blocks as it has windows.
// The symbolic pass counts each window's entries into winCount (and their
// sum into the row's nnz); the numeric pass starts window y of a row after
// the entries of windows 0..y-1. Both passes use the same row list, so a
// row's windows have the same index in both.
// Cost: a search per entry of A's row per window, and windows that a row
// does not reach still look.
#pragma once
#include "sparse/spgemm_common.cuh"

#ifndef WINDOW
#define WINDOW 8192  // columns per block: 32 KiB of floats + 1 KiB of bitmap; one bitmap word per thread
#endif

#ifdef WINDOW_BALANCED
// balancedWalk calls f(c, a_ik·b_kc) once for every product of row `row` of
// A whose column c lies in [w0, w1), spreading the products evenly over the
// block's warps (step 06). It takes A's entries blockDim.x at a time: each
// thread finds where its row of B enters and leaves the window (two binary
// searches), a block scan turns the stretch lengths into offsets in one
// flat list of the batch's products, and warp w takes the w-th equal share
// of that list, each lane finding its entry in the offsets in shared memory
// by galloping on from the entry of its previous product. Every thread of
// the block must call it.
template <class Source, class F>
__device__ void balancedWalk(const Source& src, int row, int w0, int w1, F f) {
    __shared__ int first[WINDOW / 32], at[WINDOW / 32];  // per entry: its first product, its start in B
    __shared__ float coef[WINDOW / 32];                    // per entry: a_ik
    const int lane = threadIdx.x % WARP, warp = threadIdx.x / WARP, warps = blockDim.x / WARP;
    const int p0 = src.aPtr[row], p1 = src.aPtr[row + 1];
    for (int base = p0; base < p1; base += blockDim.x) {  // the same trip count in every thread
        int p = base + threadIdx.x, lo = 0, n = 0;
        float a = 0.f;
        if (p < p1) {
            int k = src.aCol[p], end = src.bPtr[k + 1];
            a = src.aVal ? src.aVal[p] : 0.f;
            lo = lowerBound(src.bCol, src.bPtr[k], end, w0);
            n = lowerBound(src.bCol, lo, end, w1) - lo;
        }
        int total, entries = min((int)blockDim.x, p1 - base);
        int off = blockExclusiveScan(n, &total);
        first[threadIdx.x] = off, at[threadIdx.x] = lo, coef[threadIdx.x] = a;
        __syncthreads();
        int share = ((total + warps - 1) / warps + WARP - 1) / WARP * WARP;  // whole rounds of 32
        int e0 = 0;  // the last entry whose first product is at most j: it only grows with j
        for (int j = warp * share + lane; j < min(total, (warp + 1) * share); j += WARP) {
            // Gallop from the previous entry (steps 1, 2, 4, ... while they stay at or
            // before j), then halve the last step: one shared load when j is still in
            // the same entry, a few when it moved on, instead of log2(entries)
            // dependent loads for every product.
            int step = 1;
            while (e0 + step < entries && first[e0 + step] <= j) e0 += step, step <<= 1;
            for (int e1 = min(e0 + step, entries); e1 - e0 > 1;) {
                int mid = (e0 + e1) >> 1;
                if (first[mid] <= j)
                    e0 = mid;
                else
                    e1 = mid;
            }
            int q = at[e0] + j - first[e0];
            f(src.bCol[q], src.bVal ? coef[e0] * src.bVal[q] : 0.f);
        }
        __syncthreads();  // the next batch reuses first, at and coef
    }
}
#endif

// windowWalk visits the products of a row that fall in [w0, w1) for the
// numeric pass: a warp per entry of A (forEachIn), or spread evenly over the
// warps (balancedWalk, when the step defines WINDOW_BALANCED). The symbolic
// pass always uses forEachIn: its work per product is one atomicOr, so its
// time is the searches, and balanced it was slower (9.5 against 7.1 ms on
// R-MAT scale 18, an H100).
template <class Source, class F>
__device__ __forceinline__ void windowWalk(const Source& src, int row, int w0, int w1, F f) {
#ifdef WINDOW_BALANCED
    balancedWalk(src, row, w0, w1, f);
#else
    src.forEachIn(row, w0, w1, f);
#endif
}

#ifndef SYMBOLIC_SPAN
#define SYMBOLIC_SPAN 1  // numeric windows counted by one symbolic block
#endif

// windowSymbolic counts the entries of SYMBOLIC_SPAN consecutive windows of
// a row in one block (a bitmap word per thread and window), so that each
// entry of A's row is searched once per span, not once per window; the
// numeric pass still works window by window. windows is the row's number of
// numeric windows.
template <class Source>
__device__ void windowSymbolic(const Source& src, const int* rowList, unsigned* bits, int windows, int* winCount, int* nnz) {
    const int words = WINDOW / 32;  // bitmap words per window: one per thread
    int row = rowList[blockIdx.x], y0 = blockIdx.y * SYMBOLIC_SPAN, w0 = y0 * WINDOW;
    for (int s = 0; s < SYMBOLIC_SPAN; s++) bits[s * words + threadIdx.x] = 0;
    __syncthreads();
    src.forEachIn(row, w0, w0 + SYMBOLIC_SPAN * WINDOW, [&](int c, float) { atomicOr(&bits[(c - w0) / 32], 1u << ((c - w0) % 32)); });
    __syncthreads();
    int total = 0;
    for (int s = 0; s < SYMBOLIC_SPAN; s++) {
        int count;
        blockExclusiveScan(__popc(bits[s * words + threadIdx.x]), &count);
        if (threadIdx.x == 0 && y0 + s < windows) winCount[blockIdx.x * windows + y0 + s] = count;
        total += count;
    }
    if (threadIdx.x == 0 && total) atomicAdd(&nnz[row], total);
}

template <class Source>
__device__ void windowNumeric(const Source& src, const int* rowList, float* acc, unsigned* bits, const int* winCount,
                              const int* outPtr, int* outCol, float* outVal) {
    __shared__ int base;
    const int* mine = winCount + blockIdx.x * gridDim.y;
    if (mine[blockIdx.y] == 0) return;  // the same for every thread of the block
    int row = rowList[blockIdx.x], w0 = blockIdx.y * WINDOW;
    // The window's entries go after those of windows 0..y-1 of the row. Warp 0
    // loads their counts now and adds them up only after the products, so
    // that the loads' latency hides behind the work instead of holding the
    // whole block at the next barrier.
    int before = 0, rowStart = 0;
    if (threadIdx.x < WARP) {
        before = threadIdx.x < blockIdx.y ? mine[threadIdx.x] : 0;
        for (int w = threadIdx.x + WARP; w < blockIdx.y; w += WARP) before += mine[w];  // past 32 windows
        rowStart = outPtr[row];
    }
    float4* acc4 = reinterpret_cast<float4*>(acc);
    for (int s = threadIdx.x; s < WINDOW / 4; s += blockDim.x) acc4[s] = make_float4(0.f, 0.f, 0.f, 0.f);
    bits[threadIdx.x] = 0;
    __syncthreads();
    windowWalk(src, row, w0, w0 + WINDOW, [&](int c, float v) {
        atomicAdd(&acc[c - w0], v);
        atomicOr(&bits[(c - w0) / 32], 1u << ((c - w0) % 32));
    });
    if (threadIdx.x < WARP) {
#pragma unroll
        for (int o = WARP / 2; o > 0; o /= 2) before += __shfl_xor_sync(0xffffffffu, before, o);
        if (threadIdx.x == 0) base = rowStart + before;
    }
    __syncthreads();
    unsigned b = bits[threadIdx.x];
    int total;
    int pos = base + blockExclusiveScan(__popc(b), &total);
    while (b) {
        int c = threadIdx.x * 32 + __ffs(b) - 1;
        b &= b - 1;
        outCol[pos] = w0 + c;
        outVal[pos] = acc[c];
        pos++;
    }
}

// Grid (rows of the bin, windows), WINDOW/32 threads; dynamic shared memory
// WINDOW·4 + WINDOW/8 bytes (numeric). The symbolic grid has one block per
// SYMBOLIC_SPAN windows, with SYMBOLIC_SPAN·WINDOW/8 bytes.
#define WINDOW_SYMBOLIC_KERNEL(SRC_PARAMS, SRC_INIT)                                                                \
    extern "C" __global__ void __launch_bounds__(WINDOW / 32)                                                        \
        window_symbolic(const int* rowList, SRC_PARAMS, int windows, int* winCount, int* nnz) {                    \
        extern __shared__ unsigned windowBits[];                                                                     \
        SRC_INIT;                                                                                                    \
        windowSymbolic(src, rowList, windowBits, windows, winCount, nnz);                                            \
    }
#define WINDOW_NUMERIC_KERNEL(SRC_PARAMS, SRC_INIT)                                                                 \
    extern "C" __global__ void __launch_bounds__(WINDOW / 32) window_numeric(                                        \
        const int* rowList, SRC_PARAMS, const int* winCount, const int* outPtr, int* outCol, float* outVal) {      \
        extern __shared__ float windowAcc[];                                                                         \
        SRC_INIT;                                                                                                    \
        windowNumeric(src, rowList, windowAcc, (unsigned*)(windowAcc + WINDOW), winCount, outPtr, outCol, outVal);  \
    }

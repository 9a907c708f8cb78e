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

template <class Source>
__device__ void windowSymbolic(const Source& src, const int* rowList, unsigned* bits, int* winCount, int* nnz) {
    int row = rowList[blockIdx.x], w0 = blockIdx.y * WINDOW;
    bits[threadIdx.x] = 0;
    __syncthreads();
    src.forEachIn(row, w0, w0 + WINDOW, [&](int c, float) { atomicOr(&bits[(c - w0) / 32], 1u << ((c - w0) % 32)); });
    __syncthreads();
    int total;
    blockExclusiveScan(__popc(bits[threadIdx.x]), &total);
    if (threadIdx.x == 0) {
        winCount[blockIdx.x * gridDim.y + blockIdx.y] = total;
        if (total) atomicAdd(&nnz[row], total);
    }
}

template <class Source>
__device__ void windowNumeric(const Source& src, const int* rowList, float* acc, unsigned* bits, const int* winCount,
                              const int* outPtr, int* outCol, float* outVal) {
    __shared__ int base;
    const int* mine = winCount + blockIdx.x * gridDim.y;
    if (mine[blockIdx.y] == 0) return;  // the same for every thread of the block
    int row = rowList[blockIdx.x], w0 = blockIdx.y * WINDOW;
    if (threadIdx.x == 0) {
        int b = outPtr[row];
        for (int w = 0; w < blockIdx.y; w++) b += mine[w];
        base = b;
    }
    for (int s = threadIdx.x; s < WINDOW; s += blockDim.x) acc[s] = 0.f;
    bits[threadIdx.x] = 0;
    __syncthreads();
    src.forEachIn(row, w0, w0 + WINDOW, [&](int c, float v) {
        atomicAdd(&acc[c - w0], v);
        atomicOr(&bits[(c - w0) / 32], 1u << ((c - w0) % 32));
    });
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

// Grid (rows of the bin, windows), WINDOW/32 = 256 threads; dynamic shared
// memory WINDOW/8 bytes (symbolic) or WINDOW·4 + WINDOW/8 (numeric).
#define WINDOW_SYMBOLIC_KERNEL(SRC_PARAMS, SRC_INIT)                                                                \
    extern "C" __global__ void __launch_bounds__(WINDOW / 32)                                                        \
        window_symbolic(const int* rowList, SRC_PARAMS, int* winCount, int* nnz) {                                 \
        extern __shared__ unsigned windowBits[];                                                                     \
        SRC_INIT;                                                                                                    \
        windowSymbolic(src, rowList, windowBits, winCount, nnz);                                                     \
    }
#define WINDOW_NUMERIC_KERNEL(SRC_PARAMS, SRC_INIT)                                                                 \
    extern "C" __global__ void __launch_bounds__(WINDOW / 32) window_numeric(                                        \
        const int* rowList, SRC_PARAMS, const int* winCount, const int* outPtr, int* outCol, float* outVal) {      \
        extern __shared__ float windowAcc[];                                                                         \
        SRC_INIT;                                                                                                    \
        windowNumeric(src, rowList, windowAcc, (unsigned*)(windowAcc + WINDOW), winCount, outPtr, outCol, outVal);  \
    }

// The tile pipeline of steps 08 and 10: tiles of X (BM points) and of the
// centers (KTILE centers), BK dimensions at a time, copied global -> shared
// with cp.async STAGES tiles ahead of the arithmetic.
//
// Tiles stay row-major (x[point][dim], c[center][dim]). They need no
// transposition on the way, so cp.async copies them without passing through
// registers (gemm step 08 could do this only for B). A row stride of BK+4
// floats (12, 20 or 36) puts 8 consecutive rows in 8 different 16-byte bank groups,
// so a warp reading 8 rows (as float4, or as 4 lanes × 1 float each) is
// conflict-free. The includer defines BM and KTILE; blocks have 256 threads.
#pragma once
#include "gemm/common.cuh"
#include "kmeans/common.cuh"

#ifndef BK
#define BK 8  // dimensions per stage: 8, 16 or 32 (the host passes it)
#endif
#ifndef STAGES
#define STAGES 4
#endif
#define S (BK + 4)  // row stride in shared memory, in floats

struct Stage {
    float x[BM][S];
    float c[KTILE][S];
};

// loadStage starts the copies of dimensions [k0, k0+BK) of points p0.. and
// centers c0.. into st. Out-of-range elements become zeros.
__device__ __forceinline__ void loadStage(Stage& st, const float* __restrict__ x, const float* __restrict__ centers,
                                          int n, int d, int k, int p0, int c0, int k0) {
    int tid = threadIdx.x;
#pragma unroll
    for (int s = 0; s < BM * BK / 4 / 256; s++) {
        int e = tid + 256 * s, r = e / (BK / 4), c = (e % (BK / 4)) * 4;
        cp_async4(&st.x[r][c], x, n, d, p0 + r, k0 + c);
    }
    if (tid < KTILE * BK / 4) {
        int r = tid / (BK / 4), c = (tid % (BK / 4)) * 4;
        cp_async4(&st.c[r][c], centers, k, d, c0 + r, k0 + c);
    }
}

// forEachStage streams all of D through the stages in st (STAGES of them)
// for points p0.. and centers c0.., and calls compute(stage) on each tile
// once it has landed. Every thread of the block must call it.
template <class Compute>
__device__ __forceinline__ void forEachStage(Stage* st, const float* __restrict__ x, const float* __restrict__ centers,
                                             int n, int d, int k, int p0, int c0, Compute compute) {
    int tiles = (d + BK - 1) / BK;
    // Prologue: the first STAGES-1 tiles in flight (a group each, empty past
    // the end, so that the wait below counts right).
#pragma unroll
    for (int s = 0; s < STAGES - 1; s++) {
        if (s < tiles) loadStage(st[s], x, centers, n, d, k, p0, c0, s * BK);
        cp_async_commit();
    }
    for (int t = 0; t < tiles; t++) {
        cp_async_wait<STAGES - 2>();  // this thread's copies of tile t landed
        __syncthreads();              // everyone's did; and tile t-1's stage is free
        int next = t + STAGES - 1;
        if (next < tiles) loadStage(st[next % STAGES], x, centers, n, d, k, p0, c0, next * BK);
        cp_async_commit();
        compute(st[t % STAGES]);
    }
    cp_async_wait_all();
    __syncthreads();  // the last stages are read before anyone refills them
}

// row_norms: xn[i] = |x_i|², a warp per row. X does not change between
// iterations, so the host runs it once (once per batch when streaming).
extern "C" __global__ void row_norms(const float* __restrict__ x, int n, int d, float* __restrict__ xn) {
    int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
    if (warp >= n) return;
    const float* row = x + (size_t)warp * d;
    float s = 0.f;
    for (int j = lane; j < d; j += 32) s += row[j] * row[j];
    for (int o = 16; o > 0; o /= 2) s += __shfl_xor_sync(FULL, s, o);
    if (lane == 0) xn[warp] = s;
}

// writeNearest combines the candidates of the 4 neighbouring lanes that
// share each of this thread's P points (lowest index on a tie, as the CPU
// reference), and lets the first of them write label and distance.
template <int P>
__device__ __forceinline__ void writeNearest(float (&bestD)[P], int (&best)[P], const int (&point)[P], bool writer,
                                             int n, const float* __restrict__ xn, int* __restrict__ labels,
                                             float* __restrict__ dist) {
#pragma unroll
    for (int i = 0; i < P; i++) {
        for (int o = 1; o < 4; o *= 2) {
            float od = __shfl_xor_sync(FULL, bestD[i], o);
            int ob = __shfl_xor_sync(FULL, best[i], o);
            if (od < bestD[i] || (od == bestD[i] && ob < best[i])) bestD[i] = od, best[i] = ob;
        }
        int p = point[i];
        if (writer && p < n) labels[p] = best[i], dist[p] = fmaxf(0.f, xn[p] + bestD[i]);  // rounding can go below 0
    }
}

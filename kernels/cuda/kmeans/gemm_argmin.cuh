// The GEMM form of the assignment: |x - c|² = |x|² - 2·x·c + |c|², so the
// nearest center minimizes |c|² - 2·x·c, and x·c for a tile of points and
// all centers is a small matrix product. A block takes BM = 256 points and
// the centers KTILE = 4·KT at a time; thread (ty, tx) accumulates 4 points ×
// KT centers in registers over the dimensions, BK at a time through shared
// memory, as in the GEMM ladder's register tiling. The argmin is the
// epilogue: distances never go to global memory.
#pragma once
#include "kmeans/common.cuh"

#define BM 256
#define BK 16
#ifndef KT
#define KT 8  // centers per thread; the host compiles KT = ceil(K/4) up to 8
#endif
#define KTILE (4 * KT)

struct Tile {
    float xs[BK][BM + 4];  // X tile, transposed: xs[dim][point]; +4 keeps float4 rows aligned
    float cs[BK][KTILE];   // centers tile: cs[dim][center]
    float xn[BM];          // |x|² of the tile's points
    int label[BM];
    float dist[BM];
};

// nearestTile fills t.label and t.dist for points p0 .. p0+BM-1 (those < n).
// 256 threads; every thread must call it.
__device__ void nearestTile(Tile& t, const float* __restrict__ x, const float* __restrict__ centers,
                            const float* __restrict__ cn, int n, int d, int k, int p0) {
    int tid = threadIdx.x, tx = tid % 4, ty = tid / 4;
    float xnorm[4] = {0.f, 0.f, 0.f, 0.f};  // partial |x|² of the rows this thread loads
    float bestD[4];
    int best[4];
#pragma unroll
    for (int i = 0; i < 4; i++) bestD[i] = __int_as_float(0x7f800000), best[i] = 0;
    for (int c0 = 0; c0 < k; c0 += KTILE) {
        float acc[4][KT] = {};
        for (int k0 = 0; k0 < d; k0 += BK) {
            // X: thread loads 4 dims (one float4 when aligned) of rows tid/4 + 64·s.
#pragma unroll
            for (int s = 0; s < 4; s++) {
                int r = tid / 4 + 64 * s, p = p0 + r, j = k0 + tx * 4;
                float v[4];
                if (p < n && j + 3 < d && (d & 3) == 0) {
                    float4 f = *reinterpret_cast<const float4*>(x + (size_t)p * d + j);
                    v[0] = f.x, v[1] = f.y, v[2] = f.z, v[3] = f.w;
                } else {
#pragma unroll
                    for (int q = 0; q < 4; q++) v[q] = p < n && j + q < d ? x[(size_t)p * d + j + q] : 0.f;
                }
#pragma unroll
                for (int q = 0; q < 4; q++) {
                    t.xs[tx * 4 + q][r] = v[q];
                    if (c0 == 0) xnorm[s] += v[q] * v[q];
                }
            }
            for (int e = tid; e < KTILE * BK; e += blockDim.x) {
                int c = e / BK, q = e % BK;
                t.cs[q][c] = c0 + c < k && k0 + q < d ? centers[(size_t)(c0 + c) * d + k0 + q] : 0.f;
            }
            __syncthreads();
#pragma unroll
            for (int q = 0; q < BK; q++) {
                float4 a = *reinterpret_cast<const float4*>(&t.xs[q][ty * 4]);
                float av[4] = {a.x, a.y, a.z, a.w};
#pragma unroll
                for (int j = 0; j < KT; j++) {
                    float b = t.cs[q][tx * KT + j];
#pragma unroll
                    for (int i = 0; i < 4; i++) acc[i][j] += av[i] * b;
                }
            }
            __syncthreads();
        }
#pragma unroll
        for (int i = 0; i < 4; i++)
#pragma unroll
            for (int j = 0; j < KT; j++) {
                int c = c0 + tx * KT + j;
                float dd = c < k ? cn[c] - 2.f * acc[i][j] : __int_as_float(0x7f800000);
                if (dd < bestD[i]) bestD[i] = dd, best[i] = c;
            }
    }
    // The 4 threads of a point group are neighbouring lanes: combine their
    // candidates (lowest index on a tie, as the CPU reference).
#pragma unroll
    for (int i = 0; i < 4; i++)
        for (int o = 1; o < 4; o *= 2) {
            float od = __shfl_xor_sync(FULL, bestD[i], o);
            int ob = __shfl_xor_sync(FULL, best[i], o);
            if (od < bestD[i] || (od == bestD[i] && ob < best[i])) bestD[i] = od, best[i] = ob;
        }
    // |x|²: the 4 loaders of a row are neighbouring lanes too.
#pragma unroll
    for (int s = 0; s < 4; s++) {
        for (int o = 1; o < 4; o *= 2) xnorm[s] += __shfl_xor_sync(FULL, xnorm[s], o);
        if (tx == 0) t.xn[tid / 4 + 64 * s] = xnorm[s];
    }
    __syncthreads();
    if (tx == 0)
#pragma unroll
        for (int i = 0; i < 4; i++) {
            int r = ty * 4 + i;
            t.label[r] = best[i];
            t.dist[r] = fmaxf(0.f, t.xn[r] + bestD[i]);  // rounding can make a tiny distance negative
        }
    __syncthreads();
}

// The GEMM form of the assignment: |x - c|² = |x|² - 2·x·c + |c|², so the
// nearest center minimizes |c|² - 2·x·c, and x·c for a tile of points and
// all centers is a small matrix product. A block takes BM = 256 points and
// the centers KTILE = 32 at a time; thread (ty, tx) accumulates 4 points ×
// KT centers in registers over the dimensions, BK at a time through shared
// memory, as in the GEMM ladder's register tiling. The argmin is the
// epilogue: distances never go to global memory.
#pragma once
#include "kmeans/common.cuh"

#define BM 256
#define BK 16
#define KT 8  // centers per thread, read as two float4: 32 FMAs per 3 shared loads
#define KTILE (4 * KT)

struct Tile {
    float xs[2][BK][BM + 4];  // X tile, transposed: xs[buffer][dim][point]; +4 keeps float4 rows aligned
    float cs[2][BK][KTILE];   // centers tile: cs[buffer][dim][center]
    float xn[BM];             // |x|² of the tile's points
    int label[BM];
    float dist[BM];
};

// loadX reads this thread's share of the X tile at dimensions [k0, k0+BK):
// 4 dimensions (one float4 when aligned) of rows tid/4 + 64·s.
__device__ __forceinline__ void loadX(float (&v)[4][4], const float* __restrict__ x, int n, int d, int p0, int k0) {
    int tid = threadIdx.x, j = k0 + (tid % 4) * 4;
#pragma unroll
    for (int s = 0; s < 4; s++) {
        int p = p0 + tid / 4 + 64 * s;
        if (p < n && j + 3 < d && (d & 3) == 0) {
            float4 f = *reinterpret_cast<const float4*>(x + (size_t)p * d + j);
            v[s][0] = f.x, v[s][1] = f.y, v[s][2] = f.z, v[s][3] = f.w;
        } else {
#pragma unroll
            for (int q = 0; q < 4; q++) v[s][q] = p < n && j + q < d ? x[(size_t)p * d + j + q] : 0.f;
        }
    }
}

// nearestTile fills t.label and t.dist for points p0 .. p0+BM-1 (those < n).
// 256 threads; every thread must call it. The X and center tiles are double
// buffered: the loads of step k0+BK are issued into registers before the
// FMAs of step k0, so their latency hides behind the arithmetic, and one
// barrier per step suffices.
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
        float v[4][4];
        loadX(v, x, n, d, p0, 0);
        int buf = 0;
        for (int k0 = 0; k0 < d; k0 += BK, buf ^= 1) {
#pragma unroll
            for (int s = 0; s < 4; s++)
#pragma unroll
                for (int q = 0; q < 4; q++) {
                    t.xs[buf][tx * 4 + q][tid / 4 + 64 * s] = v[s][q];
                    if (c0 == 0) xnorm[s] += v[s][q] * v[s][q];
                }
            for (int e = tid; e < KTILE * BK; e += blockDim.x) {
                int c = e / BK, q = e % BK;
                t.cs[buf][q][c] = c0 + c < k && k0 + q < d ? centers[(size_t)(c0 + c) * d + k0 + q] : 0.f;
            }
            __syncthreads();
            if (k0 + BK < d) loadX(v, x, n, d, p0, k0 + BK);  // in flight during the FMAs below
#pragma unroll
            for (int q = 0; q < BK; q++) {
                float4 a = *reinterpret_cast<const float4*>(&t.xs[buf][q][ty * 4]);
                float av[4] = {a.x, a.y, a.z, a.w};
                float4 b0 = *reinterpret_cast<const float4*>(&t.cs[buf][q][tx * KT]);
                float4 b1 = *reinterpret_cast<const float4*>(&t.cs[buf][q][tx * KT + 4]);
                float bv[KT] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
                for (int j = 0; j < KT; j++)
#pragma unroll
                    for (int i = 0; i < 4; i++) acc[i][j] += av[i] * bv[j];
            }
            // No second barrier: the next step writes the other buffer, and
            // the barrier after that write orders it with these reads.
        }
        __syncthreads();  // the last step's reads finish before the next center tile or the epilogue
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

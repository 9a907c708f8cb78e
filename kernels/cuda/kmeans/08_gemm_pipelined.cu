// k-means step 08 — the GEMM assignment with the GEMM ladder's late steps:
// a cp.async pipeline, 8×KT register tiles, and |x|² computed once.
//
// Idea: step 04 stages its tiles through registers, gives each thread
// 4 points × 8 centers, pads K to 32 centers, and computes |x|² again at
// every assignment. Three changes:
// - The tiles flow through a cp.async pipeline (pipeline.cuh): row-major,
//   read as float4 along the dimensions, with no transposition and no
//   staging in registers. The host picks 2 stages of 32 dimensions, so each
//   copy moves 128 bytes of a row, a whole cache line; stages of 8
//   dimensions would move 32-byte pieces.
// - Each thread keeps 8 points × KT centers in registers (step 04: 4 × 8):
//   per 4 dimensions, 8 + KT shared float4 loads feed 32·KT FMAs.
// - KT is a compile-time constant chosen from K by the host (NVRTC compiles
//   at run time, so the kernel can be specialized for the K at hand): K = 25
//   gives KT = 7, a tile of 28 centers, where step 04 computes 32 (7 of its
//   32 centers are padding).
// |x|² does not change between iterations: row_norms computes it once,
// instead of every assignment.
// Traffic: X once per KTILE centers, as in step 04; nothing else.
// Cost: STAGES·(512 + KTILE)·(BK + 4)·4 bytes of shared memory (for K = 25,
// 2·540·36·4 bytes, about 152 KiB: one block per SM), and a compile per K.
#ifndef KT
#define KT 8  // centers per thread (the host passes it)
#endif
#define BM 512  // points per block: 64 groups of 8
#define KTILE (4 * KT)
#include "kmeans/pipeline.cuh"

extern "C" __global__ void __launch_bounds__(256, 2)
    assign_pipelined(const float* __restrict__ x, const float* __restrict__ xn, const float* __restrict__ centers,
                     const float* __restrict__ cn, int n, int d, int k, int* __restrict__ labels,
                     float* __restrict__ dist) {
    extern __shared__ __align__(16) unsigned char smem[];
    Stage* st = reinterpret_cast<Stage*>(smem);
    int tid = threadIdx.x, tx = tid % 4, ty = tid / 4;  // points ty + 64·i, centers tx + 4·j
    int p0 = blockIdx.x * BM;
    float bestD[8];
    int best[8], point[8];
#pragma unroll
    for (int i = 0; i < 8; i++) bestD[i] = __int_as_float(0x7f800000), best[i] = 0, point[i] = p0 + ty + 64 * i;

    for (int c0 = 0; c0 < k; c0 += KTILE) {
        float acc[8][KT];
#pragma unroll
        for (int i = 0; i < 8; i++)
#pragma unroll
            for (int j = 0; j < KT; j++) acc[i][j] = 0.f;
        forEachStage(st, x, centers, n, d, k, p0, c0, [&](const Stage& cur) {
#pragma unroll
            for (int q = 0; q < BK; q += 4) {
                float4 cv[KT];
#pragma unroll
                for (int j = 0; j < KT; j++) cv[j] = *reinterpret_cast<const float4*>(&cur.c[tx + 4 * j][q]);
#pragma unroll
                for (int i = 0; i < 8; i++) {
                    float4 xv = *reinterpret_cast<const float4*>(&cur.x[ty + 64 * i][q]);
#pragma unroll
                    for (int j = 0; j < KT; j++) {
                        float a = acc[i][j];
                        a = fmaf(xv.x, cv[j].x, a);
                        a = fmaf(xv.y, cv[j].y, a);
                        a = fmaf(xv.z, cv[j].z, a);
                        acc[i][j] = fmaf(xv.w, cv[j].w, a);
                    }
                }
            }
        });
#pragma unroll
        for (int i = 0; i < 8; i++)
#pragma unroll
            for (int j = 0; j < KT; j++) {  // c grows with j: a strict < keeps the lowest on a tie
                int c = c0 + tx + 4 * j;
                float dd = c < k ? cn[c] - 2.f * acc[i][j] : __int_as_float(0x7f800000);
                if (dd < bestD[i]) bestD[i] = dd, best[i] = c;
            }
    }
    writeNearest(bestD, best, point, tx == 0, n, xn, labels, dist);
}

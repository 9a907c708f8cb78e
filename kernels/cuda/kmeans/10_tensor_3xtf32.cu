// k-means step 10 — the assignment on tensor cores, at FP32 accuracy:
// 3xTF32.
//
// Idea: at 1M × 1536 × 25 the assignment is 2·N·D·K ≈ 7.7·10¹⁰ flops,
// about a millisecond at an H100's FP32 peak (67 TFLOP/s): the same order
// as one pass over X (6.1 GB at 3.35 TB/s), so on FP32 lanes the arithmetic
// cannot hide under the traffic.
// Tensor cores multiply TF32 (an FP32 exponent with a 10-bit mantissa) many
// times faster, but TF32 alone rounds each input to about 3 decimal digits:
// too coarse to pick the nearest of two close centers. So each value v is
// split into big = tf32(v) and small = tf32(v - big), which together carry
// about 21 bits of mantissa, and x·c is computed as
//     big_x·big_c + big_x·small_c + small_x·big_c
// (small·small is below FP32 rounding), accumulating in FP32. Three tensor
// core products cost less than one FP32 one, and the distances come out as
// accurate as step 08's. The tiles come through the same cp.async pipeline
// (pipeline.cuh); the warp-level instruction is mma.sync m16n8k8 (TF32):
// a warp owns 64 points (4 tiles of 16) × the center tile (NT tiles of 8).
// Fragment layout (PTX ISA, mma.m16n8k8 .tf32), with g = lane / 4 and
// q = lane % 4:
//   A (16×8, points × dims): a0 = (g, q), a1 = (g+8, q), a2 = (g, q+4), a3 = (g+8, q+4)
//   B (8×8, dims × centers): b0 = (q, g), b1 = (q+4, g)
//   C (16×8, points × centers): c0 = (g, 2q), c1 = (g, 2q+1), c2 = (g+8, 2q), c3 = (g+8, 2q+1)
// The host passes BK = 32, so the pipeline's row stride (BK+4) is 36
// floats: lane (g, q) reads word 36·g + q past its tile's, in bank
// (4·g + q) mod 32 (36 ≡ 4 mod 32). The 8 rows g fall in 8 groups of 4
// banks and the 4 lanes q in the 4 banks of a group: 32 banks, conflict-free
// (so would strides of 12 or 20 be, any BK+4 with an odd number of 4-float
// groups).
// Traffic: as step 08: X once per center tile. The arithmetic now hides
// under the memory traffic.
// Cost: the splits (3 instructions per loaded value), three MMAs per
// product, and center tiles padded to multiples of 8.
#ifndef NT
#define NT 4  // center tiles of 8 (the host passes it)
#endif
#define BM 512  // points per block: 8 warps × 64
#define KTILE (8 * NT)
#include "kmeans/pipeline.cuh"

// split writes v as big + small, both TF32 (round to nearest).
__device__ __forceinline__ void split(float v, unsigned& big, unsigned& small) {
    asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(big) : "f"(v));
    asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(small) : "f"(v - __uint_as_float(big)));
}

// mma adds the 16×8 product a·b to d.
__device__ __forceinline__ void mma(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

extern "C" __global__ void __launch_bounds__(256, 2)
    assign_3xtf32(const float* __restrict__ x, const float* __restrict__ xn, const float* __restrict__ centers,
                  const float* __restrict__ cn, int n, int d, int k, int* __restrict__ labels,
                  float* __restrict__ dist) {
    extern __shared__ __align__(16) unsigned char smem[];
    Stage* st = reinterpret_cast<Stage*>(smem);
    int lane = threadIdx.x % 32, g = lane / 4, q = lane % 4;
    int w0 = (threadIdx.x / 32) * 64;  // the warp's first point in the tile
    int p0 = blockIdx.x * BM;
    // This thread's 8 points: row g and g+8 of each of the warp's 4 tiles.
    float bestD[8];
    int best[8], point[8];
#pragma unroll
    for (int i = 0; i < 8; i++) bestD[i] = __int_as_float(0x7f800000), best[i] = 0, point[i] = p0 + w0 + (i / 2) * 16 + g + 8 * (i % 2);

    for (int c0 = 0; c0 < k; c0 += KTILE) {
        float acc[4][NT][4];
#pragma unroll
        for (int m = 0; m < 4; m++)
#pragma unroll
            for (int t = 0; t < NT; t++)
#pragma unroll
                for (int e = 0; e < 4; e++) acc[m][t][e] = 0.f;
        forEachStage(st, x, centers, n, d, k, p0, c0, [&](const Stage& cur) {
#pragma unroll
            for (int kk = 0; kk < BK; kk += 8) {
                unsigned bBig[NT][2], bSmall[NT][2];
#pragma unroll
                for (int t = 0; t < NT; t++) {
                    split(cur.c[t * 8 + g][kk + q], bBig[t][0], bSmall[t][0]);
                    split(cur.c[t * 8 + g][kk + q + 4], bBig[t][1], bSmall[t][1]);
                }
#pragma unroll
                for (int m = 0; m < 4; m++) {
                    int r = w0 + m * 16 + g;
                    unsigned aBig[4], aSmall[4];
                    split(cur.x[r][kk + q], aBig[0], aSmall[0]);
                    split(cur.x[r + 8][kk + q], aBig[1], aSmall[1]);
                    split(cur.x[r][kk + q + 4], aBig[2], aSmall[2]);
                    split(cur.x[r + 8][kk + q + 4], aBig[3], aSmall[3]);
#pragma unroll
                    for (int t = 0; t < NT; t++) {  // small terms first: they are added to a smaller sum
                        mma(acc[m][t], aSmall, bBig[t]);
                        mma(acc[m][t], aBig, bSmall[t]);
                        mma(acc[m][t], aBig, bBig[t]);
                    }
                }
            }
        });
        // acc[m][t][e] is point (m, g + 8·(e/2)), center c0 + 8t + 2q + e%2.
#pragma unroll
        for (int m = 0; m < 4; m++)
#pragma unroll
            for (int t = 0; t < NT; t++)
#pragma unroll
                for (int e = 0; e < 4; e++) {  // c grows with t and e%2: a strict < keeps the lowest on a tie
                    int i = m * 2 + e / 2, c = c0 + t * 8 + 2 * q + e % 2;
                    float dd = c < k ? cn[c] - 2.f * acc[m][t][e] : __int_as_float(0x7f800000);
                    if (dd < bestD[i]) bestD[i] = dd, best[i] = c;
                }
    }
    writeNearest(bestD, best, point, q == 0, n, xn, labels, dist);
}

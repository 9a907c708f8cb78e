// Step 07 — shared memory without bank conflicts.
//
// Shared memory has 32 banks of 4 bytes; threads of a warp that hit different
// addresses in the same bank wait for each other. Step 06 has two conflicts:
// - Storing A transposed: As[k][m] rows are 128 floats long, a multiple of 32,
//   so the two threads that load the same row of A (k = 0..3 and k = 4..7)
//   store to the same bank. Padding each row to 128 + 4 floats shifts them
//   apart (4 keeps rows 16-byte aligned for float4 reads).
// - Reading B: thread tCol read its 8 columns at tCol·8, so the 8 threads that
//   a 16-byte load serves at once were 32 bytes apart: two to a bank. Here each
//   thread owns columns tCol·4..+3 and 64 + tCol·4..+3 (and likewise for rows),
//   so neighbouring threads read neighbouring float4s: no conflict.
// Traffic: unchanged in bytes; shared-memory wavefronts per load drop ~2x.
// Cost: 64 bytes of padding per tile row.
#include "gemm/common.cuh"
#define BM 128
#define BN 128
#define BK 8
#define THREADS 256
#define PAD 4

extern "C" __global__ void __launch_bounds__(THREADS) sgemm(int M, int N, int K, const float* __restrict__ A,
                                                           const float* __restrict__ B, float* __restrict__ C) {
    __shared__ __align__(16) float As[BK][BM + PAD];
    __shared__ __align__(16) float Bs[BK][BN];
    const int tid = threadIdx.x;
    const int tRow = tid / 16, tCol = tid % 16;  // rows tRow·4 + {0, 64}, columns tCol·4 + {0, 64}
    const int rowBase = blockIdx.y * BM, colBase = blockIdx.x * BN;
    const int aR = tid / (BK / 4), aC = (tid % (BK / 4)) * 4;
    const int bR = tid / (BN / 4), bC = (tid % (BN / 4)) * 4;
    float acc[8][8] = {{0.f}};
    float regM[8], regN[8];
    for (int k0 = 0; k0 < K; k0 += BK) {
        float4 a = load4(A, M, K, rowBase + aR, k0 + aC);
        As[aC + 0][aR] = a.x;
        As[aC + 1][aR] = a.y;
        As[aC + 2][aR] = a.z;
        As[aC + 3][aR] = a.w;
        *reinterpret_cast<float4*>(&Bs[bR][bC]) = load4(B, K, N, k0 + bR, colBase + bC);
        __syncthreads();
#pragma unroll
        for (int p = 0; p < BK; ++p) {
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                float4 m = *reinterpret_cast<const float4*>(&As[p][h * 64 + tRow * 4]);
                float4 n = *reinterpret_cast<const float4*>(&Bs[p][h * 64 + tCol * 4]);
                regM[h * 4 + 0] = m.x, regM[h * 4 + 1] = m.y, regM[h * 4 + 2] = m.z, regM[h * 4 + 3] = m.w;
                regN[h * 4 + 0] = n.x, regN[h * 4 + 1] = n.y, regN[h * 4 + 2] = n.z, regN[h * 4 + 3] = n.w;
            }
#pragma unroll
            for (int i = 0; i < 8; ++i)
#pragma unroll
                for (int j = 0; j < 8; ++j) acc[i][j] += regM[i] * regN[j];
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < 8; ++i) {
        int row = rowBase + (i / 4) * 64 + tRow * 4 + i % 4;
#pragma unroll
        for (int h = 0; h < 2; ++h)
            store4(C, M, N, row, colBase + h * 64 + tCol * 4,
                   make_float4(acc[i][h * 4], acc[i][h * 4 + 1], acc[i][h * 4 + 2], acc[i][h * 4 + 3]));
    }
}

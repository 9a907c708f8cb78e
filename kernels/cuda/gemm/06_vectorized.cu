// Step 06 — float4 loads, A transposed in shared memory.
//
// Idea: step 05 moves data one float at a time. Here every global load and
// store moves a float4 (one 16-byte instruction instead of four), and the A
// tile is stored TRANSPOSED in shared memory (As[k][m]), so the 8 values of A
// a thread needs for one k are contiguous and come in two float4 loads, like
// the 8 values of B.
// Traffic: the same bytes as step 05, in 4x fewer load/store instructions,
// global and shared.
// Cost: float4 needs 16-byte aligned rows: when K or N is not a multiple of 4
// the Go side compiles this file with VEC=0, and the loads become guarded
// scalars again (see common.cuh).
#include "gemm/common.cuh"
#define BM 128
#define BN 128
#define BK 8
#define TM 8
#define TN 8
#define THREADS 256

extern "C" __global__ void __launch_bounds__(THREADS) sgemm(int M, int N, int K, const float* __restrict__ A,
                                                           const float* __restrict__ B, float* __restrict__ C) {
    __shared__ __align__(16) float As[BK][BM];  // transposed: As[k][m]
    __shared__ __align__(16) float Bs[BK][BN];
    const int tid = threadIdx.x;
    const int tRow = tid / (BN / TN), tCol = tid % (BN / TN);
    const int rowBase = blockIdx.y * BM, colBase = blockIdx.x * BN;
    // One float4 of each tile per thread: A's 128×8 tile is 256 float4s, so is B's 8×128.
    const int aR = tid / (BK / 4), aC = (tid % (BK / 4)) * 4;
    const int bR = tid / (BN / 4), bC = (tid % (BN / 4)) * 4;
    float acc[TM][TN] = {{0.f}};
    float regM[TM], regN[TN];
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
            for (int i = 0; i < TM; i += 4) {
                float4 v = *reinterpret_cast<const float4*>(&As[p][tRow * TM + i]);
                regM[i] = v.x, regM[i + 1] = v.y, regM[i + 2] = v.z, regM[i + 3] = v.w;
            }
#pragma unroll
            for (int j = 0; j < TN; j += 4) {
                float4 v = *reinterpret_cast<const float4*>(&Bs[p][tCol * TN + j]);
                regN[j] = v.x, regN[j + 1] = v.y, regN[j + 2] = v.z, regN[j + 3] = v.w;
            }
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] += regM[i] * regN[j];
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; j += 4)
            store4(C, M, N, rowBase + tRow * TM + i, colBase + tCol * TN + j,
                   make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]));
}

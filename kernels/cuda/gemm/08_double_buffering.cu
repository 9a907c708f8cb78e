// Step 08 — double buffering: load the next tile while computing this one.
//
// Idea: in step 07 every tile is: load, __syncthreads, compute, __syncthreads.
// While a warp waits for its loads, it computes nothing, and with ~2 blocks
// per SM there are too few other warps to hide DRAM latency. Here shared
// memory holds two tiles. While the threads compute on tile t, the loads of
// tile t+1 are already in flight:
// - B goes global -> shared with cp.async (sm_80+): no registers, no waiting
//   until cp_async_wait_all() after the compute;
// - A must be transposed on the way, which cp.async cannot do, so it is
//   prefetched into registers and stored to shared memory after the compute.
// One __syncthreads per tile instead of two.
// Traffic: unchanged; the latency of each tile's loads is hidden behind the
// previous tile's 8·8·BK FMAs per thread.
// Cost: twice the shared memory (2 × 8.3 KiB) and 4 more registers.
#include "gemm/common.cuh"
#define BM 128
#define BN 128
#define BK 8
#define THREADS 256
#define PAD 4

extern "C" __global__ void __launch_bounds__(THREADS) sgemm(int M, int N, int K, const float* __restrict__ A,
                                                           const float* __restrict__ B, float* __restrict__ C) {
    __shared__ __align__(16) float As[2][BK][BM + PAD];
    __shared__ __align__(16) float Bs[2][BK][BN];
    const int tid = threadIdx.x;
    const int tRow = tid / 16, tCol = tid % 16;
    const int rowBase = blockIdx.y * BM, colBase = blockIdx.x * BN;
    const int aR = tid / (BK / 4), aC = (tid % (BK / 4)) * 4;
    const int bR = tid / (BN / 4), bC = (tid % (BN / 4)) * 4;
    float acc[8][8] = {{0.f}};
    float regM[8], regN[8];

    float4 a = load4(A, M, K, rowBase + aR, aC);
    As[0][aC + 0][aR] = a.x, As[0][aC + 1][aR] = a.y, As[0][aC + 2][aR] = a.z, As[0][aC + 3][aR] = a.w;
    cp_async4(&Bs[0][bR][bC], B, K, N, bR, colBase + bC);
    cp_async_commit();
    cp_async_wait_all();
    __syncthreads();

    const int tiles = (K + BK - 1) / BK;
    for (int t = 0; t < tiles; ++t) {
        const int cur = t & 1, nxt = cur ^ 1;
        const bool more = t + 1 < tiles;
        if (more) {  // start tile t+1: B straight to shared memory, A into registers
            cp_async4(&Bs[nxt][bR][bC], B, K, N, (t + 1) * BK + bR, colBase + bC);
            cp_async_commit();
            a = load4(A, M, K, rowBase + aR, (t + 1) * BK + aC);
        }
#pragma unroll
        for (int p = 0; p < BK; ++p) {
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                float4 m = *reinterpret_cast<const float4*>(&As[cur][p][h * 64 + tRow * 4]);
                float4 n = *reinterpret_cast<const float4*>(&Bs[cur][p][h * 64 + tCol * 4]);
                regM[h * 4 + 0] = m.x, regM[h * 4 + 1] = m.y, regM[h * 4 + 2] = m.z, regM[h * 4 + 3] = m.w;
                regN[h * 4 + 0] = n.x, regN[h * 4 + 1] = n.y, regN[h * 4 + 2] = n.z, regN[h * 4 + 3] = n.w;
            }
#pragma unroll
            for (int i = 0; i < 8; ++i)
#pragma unroll
                for (int j = 0; j < 8; ++j) acc[i][j] += regM[i] * regN[j];
        }
        if (more) {  // finish tile t+1 while nobody reads buffer nxt
            As[nxt][aC + 0][aR] = a.x, As[nxt][aC + 1][aR] = a.y, As[nxt][aC + 2][aR] = a.z, As[nxt][aC + 3][aR] = a.w;
            cp_async_wait_all();
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

// Step 09 — warp tiling (on top of step 08's double buffering).
//
// Idea: add a level between the block and the thread. The block's BM×BN tile
// is split into warp tiles of WM×WN; within a warp, lane (r, c) of an 8×4 grid
// owns 4×4 micro-tiles repeated every 32 rows and 16 columns. So:
// - the values a warp reads from shared memory for one k are just WM + WN
//   floats: 8 lanes share each A float4 (a broadcast) and 8 share each B one;
// - a warp's accumulators map to a compact region of C, so the schedule of
//   shared loads and FMAs is the same for every warp (good for the compiler,
//   and the layout that tensor-core steps use too);
// - BK = 16 halves the number of __syncthreads per FLOP of step 08;
// - blocks are rasterized in groups of GROUP tile rows: blocks that run at the
//   same time read the same few tiles of A and B, which then stay in L2.
// Traffic: global as step 05 (4·M·N·K·(1/BM + 1/BN)); shared loads per FMA
// 2·(MI + NI)·4 / (MI·4 · NI·4): 0.25 at the defaults.
// Cost: the parameters interact (registers, shared memory, occupancy): step 10
// searches them. Every parameter below can be set with -D.
#include "gemm/common.cuh"
#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 128
#endif
#ifndef BK
#define BK 16
#endif
#ifndef WM
#define WM 64
#endif
#ifndef WN
#define WN 32
#endif
#ifndef GROUP
#define GROUP 8
#endif
#define PAD 4
#define WARPS_N (BN / WN)
#define THREADS ((BM / WM) * (BN / WN) * 32)
#define MI (WM / 32)                 // micro-tile repeats along m (8 lane rows × 4)
#define NI (WN / 16)                 // micro-tile repeats along n (4 lane columns × 4)
#define A_LOADS (BM * BK / 4 / THREADS)  // float4 loads of A per thread per tile
#define B_LOADS (BK * BN / 4 / THREADS)
static_assert(BM % WM == 0 && BN % WN == 0 && WM % 32 == 0 && WN % 16 == 0, "warp tile must divide block tile");
static_assert(A_LOADS * THREADS * 4 == BM * BK && B_LOADS * THREADS * 4 == BK * BN, "tiles must split evenly into float4 loads");

extern "C" __global__ void __launch_bounds__(THREADS) sgemm(int M, int N, int K, const float* __restrict__ A,
                                                           const float* __restrict__ B, float* __restrict__ C) {
    __shared__ __align__(16) float As[2][BK][BM + PAD];
    __shared__ __align__(16) float Bs[2][BK][BN];
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int wRow = (warp / WARPS_N) * WM, wCol = (warp % WARPS_N) * WN;
    const int lRow = (lane / 4) * 4, lCol = (lane % 4) * 4;
    // Grouped rasterization: block b takes tile (tm, tn) walking GROUP tile
    // rows column by column, instead of one whole tile row after another.
    const int bid = blockIdx.y * gridDim.x + blockIdx.x, perGroup = GROUP * gridDim.x;
    const int firstM = (bid / perGroup) * GROUP, rowsInGroup = min((int)gridDim.y - firstM, GROUP);
    const int tm = firstM + (bid % perGroup) % rowsInGroup, tn = (bid % perGroup) / rowsInGroup;
    const int rowBase = tm * BM, colBase = tn * BN;
    float acc[MI * 4][NI * 4] = {{0.f}};
    float4 aReg[A_LOADS];

    auto loadA = [&](int k0) {
#pragma unroll
        for (int l = 0; l < A_LOADS; ++l) {
            int e = tid + l * THREADS;
            aReg[l] = load4(A, M, K, rowBase + e / (BK / 4), k0 + (e % (BK / 4)) * 4);
        }
    };
    auto storeA = [&](int s) {
#pragma unroll
        for (int l = 0; l < A_LOADS; ++l) {
            int e = tid + l * THREADS, r = e / (BK / 4), c = (e % (BK / 4)) * 4;
            As[s][c][r] = aReg[l].x, As[s][c + 1][r] = aReg[l].y, As[s][c + 2][r] = aReg[l].z, As[s][c + 3][r] = aReg[l].w;
        }
    };
    auto loadB = [&](int s, int k0) {
#pragma unroll
        for (int l = 0; l < B_LOADS; ++l) {
            int e = tid + l * THREADS, r = e / (BN / 4), c = (e % (BN / 4)) * 4;
            cp_async4(&Bs[s][r][c], B, K, N, k0 + r, colBase + c);
        }
        cp_async_commit();
    };

    loadA(0);
    storeA(0);
    loadB(0, 0);
    cp_async_wait_all();
    __syncthreads();
    const int tiles = (K + BK - 1) / BK;
    for (int t = 0; t < tiles; ++t) {
        const int cur = t & 1;
        const bool more = t + 1 < tiles;
        if (more) {
            loadB(cur ^ 1, (t + 1) * BK);
            loadA((t + 1) * BK);
        }
#pragma unroll
        for (int p = 0; p < BK; ++p) {
            float regM[MI * 4], regN[NI * 4];
#pragma unroll
            for (int mi = 0; mi < MI; ++mi) {
                float4 v = *reinterpret_cast<const float4*>(&As[cur][p][wRow + mi * 32 + lRow]);
                regM[mi * 4] = v.x, regM[mi * 4 + 1] = v.y, regM[mi * 4 + 2] = v.z, regM[mi * 4 + 3] = v.w;
            }
#pragma unroll
            for (int ni = 0; ni < NI; ++ni) {
                float4 v = *reinterpret_cast<const float4*>(&Bs[cur][p][wCol + ni * 16 + lCol]);
                regN[ni * 4] = v.x, regN[ni * 4 + 1] = v.y, regN[ni * 4 + 2] = v.z, regN[ni * 4 + 3] = v.w;
            }
#pragma unroll
            for (int i = 0; i < MI * 4; ++i)
#pragma unroll
                for (int j = 0; j < NI * 4; ++j) acc[i][j] += regM[i] * regN[j];
        }
        if (more) {
            storeA(cur ^ 1);
            cp_async_wait_all();
        }
        __syncthreads();
    }
#pragma unroll
    for (int mi = 0; mi < MI; ++mi)
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
            for (int ni = 0; ni < NI; ++ni) {
                const float* v = &acc[mi * 4 + i][ni * 4];
                store4(C, M, N, rowBase + wRow + mi * 32 + lRow + i, colBase + wCol + ni * 16 + lCol,
                       make_float4(v[0], v[1], v[2], v[3]));
            }
}

// Step 11 — tensor cores through WMMA: TF32 and BF16 inputs, FP32 accumulate.
//
// Idea: a tensor core multiplies small matrix tiles in one instruction
// (mma.sync): a warp computes a 16×16 block of C from a 16×8 (TF32) or 16×16
// (BF16) slice of A and B, 16–32x the FLOP/s of the FP32 lanes. WMMA is the
// portable C++ face of it: fragments are loaded from shared memory, multiplied,
// and stored. The tiling is step 09's, one level coarser: a 128×128 block tile,
// eight warps of 64×32, each holding 4×2 accumulator fragments; tiles of A and
// B are double-buffered with cp.async.
// - TF32: A and B stay FP32 in memory; each fragment is rounded to TF32 (10-bit
//   mantissa) before the multiply: faster math, same traffic.
// - BF16: A and B are stored as bfloat16, which also halves their traffic.
// Traffic: global as step 09 (at 2 bytes per element for BF16); shared loads
// are whole fragments (ldmatrix-like), far fewer instructions per FLOP.
// Cost: rounding error (checked against a looser tolerance for TF32, and for
// BF16 against a reference built from the same rounded inputs); C goes through
// a small per-warp staging buffer so that edge tiles can be stored guarded.
// This is Ampere-style mma.sync: Hopper's wgmma (step 12) is what cuBLAS uses.
#include <mma.h>
#include <cuda_bf16.h>
#include "gemm/common.cuh"
using namespace nvcuda;

#define BM 128
#define BN 128
#define THREADS 256

__device__ __forceinline__ float zero_of(float*) { return 0.f; }
__device__ __forceinline__ __nv_bfloat16 zero_of(__nv_bfloat16*) { return __float2bfloat16(0.f); }

// load_chunk copies 16 bytes (4 floats or 8 bfloat16s) of row r starting at
// column c into shared memory: asynchronously when rows are 16-byte aligned
// (VEC), element by element with zeros outside the matrix otherwise.
template <typename T>
__device__ __forceinline__ void load_chunk(T* dst, const T* __restrict__ m, int rows, int cols, int r, int c) {
    constexpr int E = 16 / sizeof(T);
#if VEC && __CUDA_ARCH__ >= 800
    bool in = r < rows && c < cols;
    const T* src = in ? m + (size_t)r * cols + c : m;
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src), "r"(in ? 16 : 0));
#else
#pragma unroll
    for (int i = 0; i < E; ++i) dst[i] = (r < rows && c + i < cols) ? m[(size_t)r * cols + c + i] : zero_of(dst);
#endif
}

template <typename T> struct Step;
template <> struct Step<float> {  // TF32: k-steps of 8
    static constexpr int BK = 16, KS = 8, PAD = 4;
    using Frag = wmma::precision::tf32;
};
template <> struct Step<__nv_bfloat16> {  // BF16: k-steps of 16
    static constexpr int BK = 32, KS = 16, PAD = 8;
    using Frag = __nv_bfloat16;
};

template <typename T>
__device__ void wmma_gemm(int M, int N, int K, const T* __restrict__ A, const T* __restrict__ B, float* __restrict__ C) {
    constexpr int BK = Step<T>::BK, KS = Step<T>::KS, PAD = Step<T>::PAD, E = 16 / sizeof(T);
    using F = typename Step<T>::Frag;
    __shared__ __align__(128) T As[2][BM][BK + PAD];
    __shared__ __align__(128) T Bs[2][BK][BN + PAD];
    __shared__ __align__(128) float stage[THREADS / 32][16 * 16];
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int wRow = (warp / 4) * 64, wCol = (warp % 4) * 32;
    const int rowBase = blockIdx.y * BM, colBase = blockIdx.x * BN;

    auto load = [&](int s, int k0) {
#pragma unroll
        for (int e = tid; e < BM * BK / E; e += THREADS)
            load_chunk(&As[s][e / (BK / E)][(e % (BK / E)) * E], A, M, K, rowBase + e / (BK / E), k0 + (e % (BK / E)) * E);
#pragma unroll
        for (int e = tid; e < BK * BN / E; e += THREADS)
            load_chunk(&Bs[s][e / (BN / E)][(e % (BN / E)) * E], B, K, N, k0 + e / (BN / E), colBase + (e % (BN / E)) * E);
        cp_async_commit();
    };

    wmma::fragment<wmma::accumulator, 16, 16, KS, float> acc[4][2];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.f);

    load(0, 0);
    cp_async_wait_all();
    __syncthreads();
    const int tiles = (K + BK - 1) / BK;
    for (int t = 0; t < tiles; ++t) {
        const int cur = t & 1;
        if (t + 1 < tiles) load(cur ^ 1, (t + 1) * BK);
#pragma unroll
        for (int ks = 0; ks < BK; ks += KS) {
            wmma::fragment<wmma::matrix_a, 16, 16, KS, F, wmma::row_major> a[4];
            wmma::fragment<wmma::matrix_b, 16, 16, KS, F, wmma::row_major> b[2];
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                wmma::load_matrix_sync(a[i], &As[cur][wRow + i * 16][ks], BK + PAD);
                if constexpr (sizeof(T) == 4) {
                    for (int x = 0; x < a[i].num_elements; ++x) a[i].x[x] = wmma::__float_to_tf32(a[i].x[x]);
                }
            }
#pragma unroll
            for (int j = 0; j < 2; ++j) {
                wmma::load_matrix_sync(b[j], &Bs[cur][ks][wCol + j * 16], BN + PAD);
                if constexpr (sizeof(T) == 4) {
                    for (int x = 0; x < b[j].num_elements; ++x) b[j].x[x] = wmma::__float_to_tf32(b[j].x[x]);
                }
            }
#pragma unroll
            for (int i = 0; i < 4; ++i)
#pragma unroll
                for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
        }
        cp_async_wait_all();
        __syncthreads();
    }
    // Each fragment goes through the warp's staging tile, then to C guarded.
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j) {
            wmma::store_matrix_sync(stage[warp], acc[i][j], 16, wmma::mem_row_major);
            __syncwarp();
            for (int e = lane; e < 256; e += 32) {
                int r = rowBase + wRow + i * 16 + e / 16, c = colBase + wCol + j * 16 + e % 16;
                if (r < M && c < N) C[(size_t)r * N + c] = stage[warp][e];
            }
            __syncwarp();
        }
}

extern "C" __global__ void __launch_bounds__(THREADS) wmma_tf32(int M, int N, int K, const float* __restrict__ A,
                                                               const float* __restrict__ B, float* __restrict__ C) {
    wmma_gemm<float>(M, N, K, A, B, C);
}

extern "C" __global__ void __launch_bounds__(THREADS) wmma_bf16(int M, int N, int K, const __nv_bfloat16* __restrict__ A,
                                                               const __nv_bfloat16* __restrict__ B, float* __restrict__ C) {
    wmma_gemm<__nv_bfloat16>(M, N, K, A, B, C);
}

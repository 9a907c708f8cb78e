// What every LFM2 kernel shares: the element type, conversions and reductions.
//
// The engine is compiled twice from the same sources: LFM2_BF16=0 gives the
// fp32 engine (the one checked against the CPU reference to 1e-4), and
// LFM2_BF16=1 the bf16 one. `elem` is the type of the weights and of every
// activation that feeds a GEMM; the residual stream, GEMM outputs, norms,
// softmax and caches stay fp32 in both, since bf16 keeps only 8 bits of
// mantissa. HEAD_DIM and CONV_L come from the model's config as -D options.
#pragma once
#include <cuda_bf16.h>

#if LFM2_BF16
typedef __nv_bfloat16 elem;
#else
typedef float elem;
#endif

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ void put(float* p, float v) { *p = v; }
__device__ __forceinline__ void put(__nv_bfloat16* p, float v) { *p = __float2bfloat16_rn(v); }

// load16 widens the 16 bytes at p (4 floats or 8 bfloat16s, 16-byte aligned)
// to fp32 in one vector load.
__device__ __forceinline__ void load16(const float* p, float* v) {
    float4 a = __ldg(reinterpret_cast<const float4*>(p));
    v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w;
}
__device__ __forceinline__ void load16(const __nv_bfloat16* p, float* v) {
    uint4 a = __ldg(reinterpret_cast<const uint4*>(p));
    unsigned u[4] = {a.x, a.y, a.z, a.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {  // little-endian: element 2i is the low half
        v[2 * i] = __uint_as_float(u[i] << 16);
        v[2 * i + 1] = __uint_as_float(u[i] & 0xffff0000u);
    }
}

// store4 writes 4 values (16-byte aligned for fp32, 8-byte for bf16) in
// the engine's type, rounding like put.
__device__ __forceinline__ void store4(float* p, float a, float b, float c, float d) {
    *reinterpret_cast<float4*>(p) = make_float4(a, b, c, d);
}
__device__ __forceinline__ void store4(__nv_bfloat16* p, float a, float b, float c, float d) {
    __nv_bfloat162* q = reinterpret_cast<__nv_bfloat162*>(p);
    q[0] = __floats2bfloat162_rn(a, b);
    q[1] = __floats2bfloat162_rn(c, d);
}

// aligned16 reports whether p may be read with 16-byte vector loads.
__device__ __forceinline__ bool aligned16(const void* p) { return (reinterpret_cast<size_t>(p) & 15) == 0; }

// warp_sum leaves the sum of all 32 lanes in every lane: five butterfly
// shuffles, no shared memory.
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// block_sum returns the sum of v over the block to every thread. blockDim.x
// is a multiple of 32; scratch is 32 floats of shared memory.
__device__ __forceinline__ float block_sum(float v, float* scratch) {
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = warp_sum(v);
    __syncthreads();  // a previous call may still be reading scratch
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    v = lane < (int)(blockDim.x >> 5) ? scratch[lane] : 0.f;
    return warp_sum(v);
}

// silu_mul is SwiGLU's silu(a)·b, in the reference's order.
__device__ __forceinline__ float silu_mul(float a, float b) { return a / (1.f + expf(-a)) * b; }

// rows_dot is the inner loop of every GEMV of the engine (steps 08 and 11):
// a warp's 32 lanes add their shares of the dot products of R weight rows
// w[o] with the first nx (at least 1) of M input rows x[r], all of length
// K, to acc[o][r]; warp_sum then finishes each one. At batch 1 such a
// product is bound by how many bytes are in flight, not by arithmetic: each
// lane reads 16 bytes of every weight row per step, and issues the loads of
// ROWS_DOT_STEPS steps before it uses the first, so that R·ROWS_DOT_STEPS
// loads per lane wait on memory together. Each weight element is applied to
// all nx inputs (which come from L1: every warp reads the same few rows).
// The vector loop needs 16-byte aligned rows (K a multiple of 8 bf16 or 4
// floats); otherwise lanes take single elements. Kernels that call it give
// a minimum of blocks per SM in their launch bounds (GEMV_MIN_BLOCKS in
// 11_gemv.cu says why).
#define ROWS_DOT_STEPS 4

// rows_dot_step applies the weights wv (one 16-byte step of each row, at
// element k) to the inputs.
template <int R, int M, int V>
__device__ __forceinline__ void rows_dot_step(const float (&wv)[R][V], const elem* const (&x)[M], int nx, int k, float (&acc)[R][M]) {
#pragma unroll
    for (int r = 0; r < M; ++r) {
        if (r == 0 || r < nx) {
            float xv[V];
            load16(x[r] + k, xv);
#pragma unroll
            for (int o = 0; o < R; ++o)
#pragma unroll
                for (int v = 0; v < V; ++v) acc[o][r] = fmaf(wv[o][v], xv[v], acc[o][r]);
        }
    }
}

template <int R, int M>
__device__ __forceinline__ void rows_dot(const elem* const (&w)[R], const elem* const (&x)[M], int nx, int K, int lane,
                                         float (&acc)[R][M]) {
    constexpr int V = 16 / sizeof(elem), STEP = 32 * V, U = ROWS_DOT_STEPS;
    bool vec = K % V == 0;
#pragma unroll
    for (int o = 0; o < R; ++o) vec = vec && aligned16(w[o]);
#pragma unroll
    for (int r = 0; r < M; ++r) vec = vec && aligned16(x[r]);
    if (!vec) {
        for (int k = lane; k < K; k += 32) {
            float wk[R];
#pragma unroll
            for (int o = 0; o < R; ++o) wk[o] = to_float(__ldg(w[o] + k));
#pragma unroll
            for (int r = 0; r < M; ++r)
                if (r == 0 || r < nx) {
                    float xk = to_float(__ldg(x[r] + k));
#pragma unroll
                    for (int o = 0; o < R; ++o) acc[o][r] = fmaf(wk[o], xk, acc[o][r]);
                }
        }
        return;
    }
    int k = lane * V;
    for (; k + (U - 1) * STEP < K; k += U * STEP) {  // U steps, all inside the rows: loads first
        float wv[U][R][V];
#pragma unroll
        for (int u = 0; u < U; ++u)
#pragma unroll
            for (int o = 0; o < R; ++o) load16(w[o] + k + u * STEP, wv[u][o]);
#pragma unroll
        for (int u = 0; u < U; ++u) rows_dot_step<R, M, V>(wv[u], x, nx, k + u * STEP, acc);
    }
    for (; k < K; k += STEP) {  // the last few steps of this lane
        float wv[R][V];
#pragma unroll
        for (int o = 0; o < R; ++o) load16(w[o] + k, wv[o]);
        rows_dot_step<R, M, V>(wv, x, nx, k, acc);
    }
}

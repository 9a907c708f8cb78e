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

// warp_sum and warp_max leave the result of all 32 lanes in every lane:
// five butterfly shuffles, no shared memory.
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

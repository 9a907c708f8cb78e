// Step 03 — per-head q/k RMSNorm and RoPE, fused with the transpose to
// head-major layouts and the KV-cache write.
//
// Idea: the q|k|v GEMM leaves each token's heads side by side ([tokens,
// heads, dim]); attention wants each head's positions contiguous. One block
// per token, one warp per head: the warp reads its head once, normalizes it
// (warp-shuffle sum of squares), rotates it NeoX style (x[i] pairs with
// x[i + D/2], rotate_half) by the token's position, and writes it where
// attention reads it: q to [batch, heads, seq, dim], k and v straight into
// the caches [batch, kv heads, position, dim]. cos and sin come from a table
// computed once on the host exactly as the CPU reference computes them.
// Traffic: each q/k/v value is read once and written once; three separate
// kernels (norm, rope, transpose) would read and write everything three times.
// Cost: HEAD_DIM floats of shared memory per warp to find each value's pair.
#include "lfm2/common.cuh"

#define WARPS 8

// ROPE_SIGN_BUG=1 compiles in the sign error of the LFM2 development log,
// for the lesson that shows a CPU reference catching it: the first half's
// sine term is added, not subtracted (CUDAOptions.RoPESignBug; its twin in
// the CPU reference is RoPESignBug in engine/llm/lfm2/forward.go).
#ifndef ROPE_SIGN_BUG
#define ROPE_SIGN_BUG 0
#endif

// qkv: [T, (NH + 2·NKV)·HEAD_DIM]; token t = b·S + s is sequence b0 + b at
// position pos0 + s. rope: [max_seq][HEAD_DIM/2] (cos, sin).
extern "C" __global__ void __launch_bounds__(WARPS * 32)
qk_norm_rope(const float* __restrict__ qkv, int S, int NH, int NKV, int b0, int pos0, int max_seq, const float* __restrict__ qnorm,
             const float* __restrict__ knorm, float eps, const float2* __restrict__ rope, float* __restrict__ q_out,
             float* __restrict__ kcache, float* __restrict__ vcache) {
    constexpr int D = HEAD_DIM, HALF = HEAD_DIM / 2;
    __shared__ float buf[WARPS][D];
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    int t = blockIdx.x, b = t / S, s = t - b * S, pos = pos0 + s;
    const float* row = qkv + (size_t)t * (NH + 2 * NKV) * D;
    for (int hh = warp; hh < NH + 2 * NKV; hh += WARPS) {
        const float* src = row + hh * D;
        if (hh >= NH + NKV) {  // v: no norm, no rotation, just its cache slot
            float* dst = vcache + (((size_t)(b0 + b) * NKV + (hh - NH - NKV)) * max_seq + pos) * D;
            for (int d = lane; d < D; d += 32) dst[d] = src[d];
            continue;
        }
        bool is_q = hh < NH;
        const float* w = is_q ? qnorm : knorm;
        float* dst = is_q ? q_out + (((size_t)b * NH + hh) * S + s) * D
                          : kcache + (((size_t)(b0 + b) * NKV + (hh - NH)) * max_seq + pos) * D;
        float ss = 0.f;
        for (int d = lane; d < D; d += 32) {
            float v = src[d];
            buf[warp][d] = v;
            ss += v * v;
        }
        float r = 1.f / sqrtf(warp_sum(ss) / (float)D + eps);
        for (int d = lane; d < D; d += 32) buf[warp][d] = buf[warp][d] * r * w[d];
        __syncwarp();
        const float2* cs = rope + (size_t)pos * HALF;
        for (int d = lane; d < D; d += 32) {
            int i = d < HALF ? d : d - HALF;
            float x1 = buf[warp][i], x2 = buf[warp][i + HALF];
            float2 c = cs[i];
#if ROPE_SIGN_BUG
            dst[d] = d < HALF ? x1 * c.x + x2 * c.y : x2 * c.x + x1 * c.y;  // the bug: + where RoPE has −
#else
            dst[d] = d < HALF ? x1 * c.x - x2 * c.y : x2 * c.x + x1 * c.y;
#endif
        }
        __syncwarp();  // the next head overwrites buf
    }
}

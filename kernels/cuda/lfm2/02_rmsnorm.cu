// Step 02 — RMSNorm with warp-shuffle reductions.
//
// Idea: one block per row. Each thread sums the squares of a strided share of
// the row, warps reduce with __shfl_xor_sync (no shared memory, no barrier),
// and one more warp reduces the per-warp sums; then every thread scales its
// share by rsqrt(mean + eps) and the weight. The output is written in the
// engine's type, ready to be a GEMM input, so no separate cast pass exists.
// Rows may be strided (first, stride): the final norm of prefill normalizes
// only each sequence's last position when only those logits are wanted.
// At decode a norm is one row of a few KB, so its time is latency: when the
// row is a multiple of 4 wide and fits RMS_VEC float4s per thread, each
// thread loads its share of the row and of the weight with 16-byte loads
// before the reduction and keeps them in registers, so the kernel waits on
// memory once, not three times (row, then weight and row again).
// Traffic: the row and the weight read once, the output written once.
// Cost: two barriers per row; a naive version with one thread per row reads
// rows uncoalesced and leaves most of the GPU idle when rows are few.
#include "lfm2/common.cuh"

#define RMS_VEC 4  // float4s of the row per thread on the register path

extern "C" __global__ void rmsnorm(const float* __restrict__ x, int first, int stride, int H, const float* __restrict__ w, float eps,
                                   elem* __restrict__ out) {
    __shared__ float scratch[32];
    const float* row = x + ((size_t)first + (size_t)blockIdx.x * stride) * H;
    elem* o = out + (size_t)blockIdx.x * H;
    if (H % 4 == 0 && H <= 4 * RMS_VEC * (int)blockDim.x && aligned16(x) && aligned16(w) && aligned16(out)) {
        float4 v[RMS_VEC], g[RMS_VEC];
        float ss = 0.f;
#pragma unroll
        for (int j = 0; j < RMS_VEC; ++j) {
            int i = 4 * (threadIdx.x + j * blockDim.x);
            float4 zero = make_float4(0.f, 0.f, 0.f, 0.f);
            v[j] = i < H ? __ldg(reinterpret_cast<const float4*>(row + i)) : zero;
            g[j] = i < H ? __ldg(reinterpret_cast<const float4*>(w + i)) : zero;
            ss += v[j].x * v[j].x + v[j].y * v[j].y + v[j].z * v[j].z + v[j].w * v[j].w;
        }
        float r = 1.f / sqrtf(block_sum(ss, scratch) / (float)H + eps);
#pragma unroll
        for (int j = 0; j < RMS_VEC; ++j) {
            int i = 4 * (threadIdx.x + j * blockDim.x);
            if (i < H) store4(o + i, v[j].x * r * g[j].x, v[j].y * r * g[j].y, v[j].z * r * g[j].z, v[j].w * r * g[j].w);
        }
        return;
    }
    float ss = 0.f;
    for (int i = threadIdx.x; i < H; i += blockDim.x) ss += row[i] * row[i];
    ss = block_sum(ss, scratch);
    float r = 1.f / sqrtf(ss / (float)H + eps);
    for (int i = threadIdx.x; i < H; i += blockDim.x) put(o + i, row[i] * r * w[i]);
}

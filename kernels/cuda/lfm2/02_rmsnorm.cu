// Step 02 — RMSNorm with warp-shuffle reductions.
//
// Idea: one block per row. Each thread sums the squares of a strided share of
// the row, warps reduce with __shfl_xor_sync (no shared memory, no barrier),
// and one more warp reduces the per-warp sums; then every thread scales its
// share by rsqrt(mean + eps) and the weight. The output is written in the
// engine's type, ready to be a GEMM input, so no separate cast pass exists.
// Rows may be strided (first, stride): the final norm of prefill normalizes
// only each sequence's last position when only those logits are wanted.
// Traffic: the row is read twice (the second time from L1) and written once.
// Cost: two barriers per row; a naive version with one thread per row reads
// rows uncoalesced and leaves most of the GPU idle when rows are few.
#include "lfm2/common.cuh"

extern "C" __global__ void rmsnorm(const float* __restrict__ x, int first, int stride, int H, const float* __restrict__ w, float eps,
                                   elem* __restrict__ out) {
    __shared__ float scratch[32];
    const float* row = x + ((size_t)first + (size_t)blockIdx.x * stride) * H;
    float ss = 0.f;
    for (int i = threadIdx.x; i < H; i += blockDim.x) ss += row[i] * row[i];
    ss = block_sum(ss, scratch);
    float r = 1.f / sqrtf(ss / (float)H + eps);
    elem* o = out + (size_t)blockIdx.x * H;
    for (int i = threadIdx.x; i < H; i += blockDim.x) put(o + i, row[i] * r * w[i]);
}

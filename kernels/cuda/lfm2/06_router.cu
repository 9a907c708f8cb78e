// Step 06 — the MoE router: gate logits, sigmoid, top-k, weights.
//
// Idea: one block per TOKENS tokens. Their normalized inputs are staged in
// shared memory; each warp computes some of the E gate logits for all of
// them (dots of length H, reduced with shuffles), so each gate row is read
// once per TOKENS tokens, and turns them into sigmoid scores. The experts
// are *selected* by the k largest sigmoid + expert_bias and *weighted* by
// their unbiased sigmoid, normalized over the chosen k, s / (Σ s + 1e-6),
// when norm_topk (norm_topk_prob), then times scaling
// (routed_scaling_factor), as transformers' Lfm2Moe does. A model without
// use_expert_bias gets a bias of zeros. The selection is k passes over E
// scores by one thread per token, in the reference's order, so ties (lower
// index wins) and the sum's rounding match it exactly. Each choice is
// counted per expert with an atomic, for the grouping that follows (07).
// The router's weights stay fp32 in both engines: a flipped choice changes
// the output far more than bf16 rounding elsewhere. The sigmoid is computed
// in double, like the reference, for the same reason.
// Traffic: the tokens' inputs once, the gate matrix (E×H fp32, a few hundred
// KB) from L2 once per block. Running the logits through cuBLAS would need
// the gate in the GEMM's input type, bf16 in the bf16 engine.
// Cost: TOKENS·(H + 2E) words of dynamic shared memory per block.
#include "lfm2/common.cuh"

#define TOKENS 4

extern "C" __global__ void route(const elem* __restrict__ xn, int T, int H, const float* __restrict__ gate, const float* __restrict__ bias,
                                 int E, int K, int norm_topk, float scaling, int* __restrict__ top_idx, float* __restrict__ top_w,
                                 int* __restrict__ counts) {
    extern __shared__ float sh[];  // xs[TOKENS][H] | score[TOKENS][E] | used[TOKENS][E]
    float* xs = sh;
    float* score = sh + TOKENS * H;
    int* used = reinterpret_cast<int*>(score + TOKENS * E);
    int t0 = blockIdx.x * TOKENS, nt = min(TOKENS, T - t0);
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, warps = blockDim.x >> 5;
    for (int i = threadIdx.x; i < TOKENS * H; i += blockDim.x) {
        int r = i / H;
        xs[i] = r < nt ? to_float(xn[(size_t)(t0 + r) * H + i - r * H]) : 0.f;
    }
    for (int i = threadIdx.x; i < TOKENS * E; i += blockDim.x) used[i] = 0;
    __syncthreads();
    for (int e = warp; e < E; e += warps) {
        const float* g = gate + (size_t)e * H;
        float p[TOKENS] = {};
        for (int i = lane; i < H; i += 32) {
            float gi = g[i];
#pragma unroll
            for (int r = 0; r < TOKENS; ++r) p[r] += gi * xs[r * H + i];
        }
#pragma unroll
        for (int r = 0; r < TOKENS; ++r) {
            float z = warp_sum(p[r]);
            if (lane == 0) score[r * E + e] = (float)(1.0 / (1.0 + exp(-(double)z)));
        }
    }
    __syncthreads();
    if (threadIdx.x >= nt) return;
    int t = t0 + threadIdx.x;
    const float* sc = score + threadIdx.x * E;
    int* u = used + threadIdx.x * E;
    float sum = 0.f;
    for (int k = 0; k < K; ++k) {
        int best = -1;
        for (int e = 0; e < E; ++e)
            if (!u[e] && (best < 0 || sc[e] + bias[e] > sc[best] + bias[best])) best = e;
        u[best] = 1;
        top_idx[t * K + k] = best;
        sum += sc[best];
        atomicAdd(&counts[best], 1);
    }
    for (int k = 0; k < K; ++k) {
        float w = sc[top_idx[t * K + k]];
        if (norm_topk) w /= sum + 1e-6f;
        top_w[t * K + k] = w * scaling;
    }
}

// Step 06 — the MoE router: gate logits, sigmoid, top-k, weights.
//
// Idea: one block of ROUTE_WARPS warps per TOKENS tokens. Their normalized
// inputs are staged in shared memory as fp32; each warp computes the gate
// logit of one expert at a time for all of them (one expert per warp for
// the 8B model's 32): its lanes stream the gate row with 16-byte loads,
// several in flight, and a warp-shuffle sum finishes each dot product, so
// each gate row is read once per TOKENS tokens. Then one warp per token
// selects: the experts are *chosen* by the k largest sigmoid + expert_bias,
// k rounds of a warp-wide argmax in which each lane holds the experts lane,
// lane + 32, ..., ties to the lower index, which is exactly the reference's
// scan in order (for scores that are not NaN). They are *weighted* by their
// unbiased sigmoid, normalized over the chosen k, s / (Σ s + 1e-6), when
// norm_topk (norm_topk_prob), then times scaling (routed_scaling_factor),
// as transformers' Lfm2Moe does; the sum is taken in the order of choice,
// like the reference, so it rounds alike. A model without use_expert_bias
// gets a bias of zeros. Each choice is counted per expert with an atomic,
// for the grouping that follows (07). The router's weights stay fp32 in
// both engines: a flipped choice changes the output far more than bf16
// rounding elsewhere. The sigmoid is computed in double, like the
// reference, for the same reason.
// Traffic: the tokens' inputs once, the gate matrix (E×H fp32, 256 KB for
// the 8B model) once per block.
// Cost: TOKENS·(H + 2E) words of dynamic shared memory per block. At decode
// one block, on one SM, reads the whole gate: what keeps that short is the
// number of loads in flight (32 warps, GATE_STEPS 16-byte loads per lane).
// The first version had 8 warps walking their gate rows one load at a time
// and one thread per token scanning the E scores k times: at batch 1 a
// latency-bound read of the gate (docs/lfm2.md has its profile).
// Tried for prefill: a tiled router, 32 tokens per block of 256 threads,
// 64-column chunks of inputs and gate rows staged in shared memory, 2
// tokens × 2 experts per thread: the gate read once per 32 tokens instead
// of 4. The whole 8B prefill on one GPU gained a little, but the two-GPU
// pipeline lost (docs/lfm2.md has the figures), presumably because its
// long blocks of a 4096-token micro-batch hold SMs that the other lane's
// expert GEMMs wait for, where this kernel's many short blocks fill gaps.
// Reverted.
#include "lfm2/common.cuh"

#define TOKENS 4
#define ROUTE_WARPS 32

// gate_dots adds this lane's share of the gate row g times each of the nt
// (at least 1) staged inputs xs[r] (length H) to p[r]. With rows of 16-byte
// multiples, a lane issues the loads of GATE_STEPS 16-byte steps before it
// uses the first.
#define GATE_STEPS 4
__device__ __forceinline__ void gate_dots(const float* __restrict__ g, const float* xs, int H, int nt, int lane, float (&p)[TOKENS]) {
    if (H % 4 != 0) {
        for (int i = lane; i < H; i += 32) {
            float gi = __ldg(g + i);
#pragma unroll
            for (int r = 0; r < TOKENS; ++r)
                if (r == 0 || r < nt) p[r] += gi * xs[r * H + i];
        }
        return;
    }
    for (int i0 = 4 * lane; i0 < H; i0 += 128 * GATE_STEPS) {
        float4 gv[GATE_STEPS];
#pragma unroll
        for (int u = 0; u < GATE_STEPS; ++u) {
            int i = i0 + 128 * u;
            gv[u] = i < H ? __ldg(reinterpret_cast<const float4*>(g + i)) : make_float4(0.f, 0.f, 0.f, 0.f);
        }
#pragma unroll
        for (int u = 0; u < GATE_STEPS; ++u) {
            int i = min(i0 + 128 * u, H - 4);  // past H the weights are zeros: any inputs will do
#pragma unroll
            for (int r = 0; r < TOKENS; ++r)
                if (r == 0 || r < nt) {
                    float4 xv = *reinterpret_cast<const float4*>(xs + r * H + i);
                    p[r] += gv[u].x * xv.x + gv[u].y * xv.y + gv[u].z * xv.z + gv[u].w * xv.w;
                }
        }
    }
}

// beats reports whether expert i with biased score v is a better choice
// than bi with bv: any expert beats none (-1), then the larger score, then
// the lower index.
__device__ __forceinline__ bool beats(float v, int i, float bv, int bi) {
    return i >= 0 && (bi < 0 || v > bv || (v == bv && i < bi));
}

// E <= 32·32: a lane marks its chosen experts in one 32-bit mask. The
// launch bound's minimum of one block per SM lets ptxas keep the gate loads
// together (GEMV_MIN_BLOCKS in 11_gemv.cu says why).
extern "C" __global__ void __launch_bounds__(ROUTE_WARPS * 32, 1)
route(const elem* __restrict__ xn, int T, int H, const float* __restrict__ gate, const float* __restrict__ bias, int E, int K,
      int norm_topk, float scaling, int* __restrict__ top_idx, float* __restrict__ top_w, int* __restrict__ counts) {
    extern __shared__ __align__(16) float sh[];  // xs[TOKENS][H] | score[TOKENS][E] | key[TOKENS][E]
    float* xs = sh;
    float* score = sh + TOKENS * H;
    float* key = score + TOKENS * E;
    int t0 = blockIdx.x * TOKENS, nt = min(TOKENS, T - t0);
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const elem* src = xn + (size_t)t0 * H;  // the block's tokens are consecutive rows
    for (int i = threadIdx.x; i < nt * H; i += blockDim.x) xs[i] = to_float(src[i]);
    __syncthreads();
    for (int e = warp; e < E; e += ROUTE_WARPS) {
        float p[TOKENS] = {};
        gate_dots(gate + (size_t)e * H, xs, H, nt, lane, p);
#pragma unroll
        for (int r = 0; r < TOKENS; ++r) {
            if (r >= nt) break;
            float z = warp_sum(p[r]);
            if (lane == 0) {
                float s = (float)(1.0 / (1.0 + exp(-(double)z)));
                score[r * E + e] = s;
                key[r * E + e] = s + bias[e];
            }
        }
    }
    __syncthreads();
    if (warp >= nt) return;
    int t = t0 + warp;
    const float *sc = score + warp * E, *kv = key + warp * E;
    unsigned taken = 0;  // bit j: expert lane + 32·j is chosen
    float sum = 0.f;
    for (int k = 0; k < K; ++k) {
        float bv = 0.f;
        int bi = -1;
        for (int j = 0, e = lane; e < E; ++j, e += 32)
            if (!(taken >> j & 1u) && beats(kv[e], e, bv, bi)) bv = kv[e], bi = e;
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
            float ov = __shfl_xor_sync(0xffffffffu, bv, o);
            int oi = __shfl_xor_sync(0xffffffffu, bi, o);
            if (beats(ov, oi, bv, bi)) bv = ov, bi = oi;
        }
        // Every lane holds the same choice (K <= E, so there is one).
        if ((bi & 31) == lane) taken |= 1u << (bi >> 5);
        sum += sc[bi];
        if (lane == 0) {
            top_idx[t * K + k] = bi;
            atomicAdd(&counts[bi], 1);
        }
    }
    __syncwarp();  // lane 0's top_idx is visible to the other lanes
    for (int k = lane; k < K; k += 32) {
        float w = sc[top_idx[t * K + k]];
        if (norm_topk) w /= sum + 1e-6f;
        top_w[t * K + k] = w * scaling;
    }
}

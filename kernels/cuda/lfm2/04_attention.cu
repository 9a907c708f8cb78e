// Step 04 — fused causal GQA attention with an online (flash-style) softmax.
//
// Idea: one warp per (sequence, position, query head). Lanes split the head
// dimension, so each key and value row is one coalesced 256-byte read; a
// warp-shuffle sum gives the score. The softmax is online: a running max m,
// a running sum l and the output o are rescaled by exp(m_old - m_new) when a
// larger score arrives, so scores are never stored and one pass over the
// keys suffices, for any length. Keys 0..pos only (causal). The four warps
// of a block are consecutive query heads, which share one KV head under GQA
// (32 query heads, 8 KV heads), so a key row read by one is in L1 for the
// others. Keys go four at a time for instruction-level parallelism. The same
// kernel serves prefill (S positions at once) and decode (S = 1, keys from
// the cache). The output, [tokens, heads·dim] in the engine's type, is the
// input of the out_proj GEMM.
// Traffic: each query reads its keys and values once (through L1/L2 for the
// group); nothing of size seq² is ever written. A naive version writes the
// score matrix, reads it back for the softmax and again for P·V.
// Cost: decode of a long context runs one warp per head over all keys, in
// order; splitting keys over warps (flash-decoding) would help past ~4k keys.
#include "lfm2/common.cuh"

#define WARPS 4
#define DPL ((HEAD_DIM + 31) / 32)  // head dims per lane

// q: [B, NH, S, D]; caches: [max_batch, NKV, max_seq, D]; out: [B·S, NH·D].
extern "C" __global__ void __launch_bounds__(WARPS * 32)
attention(const float* __restrict__ q, int B, int S, int NH, int NKV, int b0, int pos0, int max_seq, const float* __restrict__ kcache,
          const float* __restrict__ vcache, float scale, elem* __restrict__ out) {
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    int qi = blockIdx.x * WARPS + warp;  // (b, s, h), h fastest
    if (qi >= B * S * NH) return;
    int h = qi % NH, s = (qi / NH) % S, b = qi / (NH * S);
    int kh = h / (NH / NKV), n = pos0 + s + 1;
    const float* qrow = q + (((size_t)b * NH + h) * S + s) * HEAD_DIM;
    size_t head = ((size_t)(b0 + b) * NKV + kh) * max_seq * HEAD_DIM;
    const float* K = kcache + head;
    const float* V = vcache + head;
    float qv[DPL], o[DPL];
#pragma unroll
    for (int r = 0; r < DPL; ++r) {
        int d = lane + 32 * r;
        qv[r] = d < HEAD_DIM ? qrow[d] : 0.f;
        o[r] = 0.f;
    }
    float m = __uint_as_float(0xff800000u), l = 0.f;  // -inf: the first score always wins
    int j = 0;
    for (; j + 4 <= n; j += 4) {
        float sc[4];
#pragma unroll
        for (int u = 0; u < 4; ++u) {
            float p = 0.f;
#pragma unroll
            for (int r = 0; r < DPL; ++r) {
                int d = lane + 32 * r;
                if (d < HEAD_DIM) p += qv[r] * K[(size_t)(j + u) * HEAD_DIM + d];
            }
            sc[u] = p;
        }
#pragma unroll
        for (int u = 0; u < 4; ++u) sc[u] = warp_sum(sc[u]) * scale;
        float mn = fmaxf(m, fmaxf(fmaxf(sc[0], sc[1]), fmaxf(sc[2], sc[3])));
        float corr = expf(m - mn), e[4];
#pragma unroll
        for (int u = 0; u < 4; ++u) e[u] = expf(sc[u] - mn);
        l = l * corr + ((e[0] + e[1]) + (e[2] + e[3]));
#pragma unroll
        for (int r = 0; r < DPL; ++r) {
            int d = lane + 32 * r;
            if (d < HEAD_DIM) {
                const float* v = V + (size_t)j * HEAD_DIM + d;
                o[r] = o[r] * corr + e[0] * v[0] + e[1] * v[HEAD_DIM] + e[2] * v[2 * HEAD_DIM] + e[3] * v[3 * HEAD_DIM];
            }
        }
        m = mn;
    }
    for (; j < n; ++j) {
        float p = 0.f;
#pragma unroll
        for (int r = 0; r < DPL; ++r) {
            int d = lane + 32 * r;
            if (d < HEAD_DIM) p += qv[r] * K[(size_t)j * HEAD_DIM + d];
        }
        float sc = warp_sum(p) * scale, mn = fmaxf(m, sc);
        float corr = expf(m - mn), e = expf(sc - mn);
        l = l * corr + e;
#pragma unroll
        for (int r = 0; r < DPL; ++r) {
            int d = lane + 32 * r;
            if (d < HEAD_DIM) o[r] = o[r] * corr + e * V[(size_t)j * HEAD_DIM + d];
        }
        m = mn;
    }
    elem* orow = out + ((size_t)(b * S + s) * NH + h) * HEAD_DIM;
#pragma unroll
    for (int r = 0; r < DPL; ++r) {
        int d = lane + 32 * r;
        if (d < HEAD_DIM) put(orow + d, o[r] / l);
    }
}

// Step 05 — the gated short convolution: B⊙x, a depthwise causal conv1d of
// CONV_L taps continuing from the conv state, then C⊙, in one pass.
//
// Idea: the in_proj GEMM leaves each token's B | C | x side by side. One
// thread per (sequence, channel) walks the sequence's positions in order,
// keeping the last CONV_L inputs of its channel in registers: the first
// CONV_L-1 come from the conv state (the previous call's last inputs), and
// at the end the thread writes its window back as the new state. Consecutive
// threads take consecutive channels, so every read and write is coalesced.
// The output, in the engine's type, is the input of the out_proj GEMM.
// Traffic: B, C and x read once, y written once, the state read and written
// once per call; separate gate, conv and gate kernels would each re-read.
// Cost: the positions of one sequence are serial in a thread, which is fine
// for short prefills and decode (S = 1); long prompts still have
// batch × hidden threads.
#include "lfm2/common.cuh"

// bcx: [T, 3H], token t = b·S + s; w: [H, CONV_L]; state: [max_batch,
// CONV_L-1, H], oldest first; out: [T, H].
extern "C" __global__ void short_conv(const float* __restrict__ bcx, int S, int H, int b0, const float* __restrict__ w,
                                      float* __restrict__ state, elem* __restrict__ out) {
    int c = blockIdx.x * blockDim.x + threadIdx.x, b = blockIdx.y;
    if (c >= H) return;
    float win[CONV_L], wc[CONV_L];
    float* st = state + (size_t)(b0 + b) * (CONV_L - 1) * H + c;
#pragma unroll
    for (int j = 0; j < CONV_L; ++j) wc[j] = w[c * CONV_L + j];
#pragma unroll
    for (int j = 0; j < CONV_L - 1; ++j) win[j] = st[(size_t)j * H];
    for (int s = 0; s < S; ++s) {
        const float* r = bcx + (size_t)(b * S + s) * 3 * H;
        win[CONV_L - 1] = r[c] * r[2 * H + c];
        float acc = 0.f;
#pragma unroll
        for (int j = 0; j < CONV_L; ++j) acc += wc[j] * win[j];
        put(out + (size_t)(b * S + s) * H + c, acc * r[H + c]);
#pragma unroll
        for (int j = 0; j < CONV_L - 1; ++j) win[j] = win[j + 1];
    }
#pragma unroll
    for (int j = 0; j < CONV_L - 1; ++j) st[(size_t)j * H] = win[j];
}

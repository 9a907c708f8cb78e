// Exercise lfm2/router, reference solution: the MoE router of LFM2 from the
// gate logits, a thread per token.
//
// Idea: an expert's score is sigmoid(logit) + expert_bias. The experts in
// order of choice are the scores from largest to smallest, ties to the
// lower index: a strict total order. So round j needs no list of the
// experts taken so far: it picks the best expert *after* round j−1's pick in
// that order (a smaller score, or the same score and a larger index). The
// weights are the chosen experts' unbiased sigmoids, divided by their sum
// (+1e-6) when norm_topk, times scaling; the sum is taken in the order of
// choice, as the CPU reference does, so that it rounds alike.
// Traffic: each round reads the token's row of logits again (from L1);
// neighbouring threads read rows E = experts floats apart.
// Cost: k·experts sigmoids per token. LFM2's step 06 (kernels/cuda/lfm2)
// computes the logits too, and selects with a warp per token: each lane
// holds a few experts and a shuffle reduction finds the best.

__device__ __forceinline__ float sigmoid(float z) { return 1.f / (1.f + expf(-z)); }

extern "C" __global__ void route(const float* __restrict__ logits, const float* __restrict__ bias, int tokens,
                                 int experts, int k, int norm_topk, float scaling, int* __restrict__ top_idx,
                                 float* __restrict__ top_w) {
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= tokens) return;
    const float* z = logits + (size_t)t * experts;
    int* idx = top_idx + (size_t)t * k;
    float* wts = top_w + (size_t)t * k;
    int prev = -1;  // the last pick and its score
    float prev_score = 0.f, sum = 0.f;
    for (int j = 0; j < k; ++j) {
        int pick = -1;
        float pick_score = 0.f;
        for (int e = 0; e < experts; ++e) {
            const float score = sigmoid(z[e]) + bias[e];
            const bool after = prev < 0 || score < prev_score || (score == prev_score && e > prev);
            if (after && (pick < 0 || score > pick_score)) pick = e, pick_score = score;
        }
        const float s = sigmoid(z[pick]);
        idx[j] = pick;
        wts[j] = s;
        sum += s;
        prev = pick, prev_score = pick_score;
    }
    for (int j = 0; j < k; ++j) {
        float wt = wts[j];
        if (norm_topk) wt /= sum + 1e-6f;
        wts[j] = wt * scaling;
    }
}

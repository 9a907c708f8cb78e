// Exercise lfm2/router, reference solution: the MoE router of LFM2 from the
// gate logits, a work-item per token.
//
// Idea: an expert's score is sigmoid(logit) + expert_bias. The experts in
// order of choice are the scores from largest to smallest, ties to the
// lower index: a strict total order. So round j needs no list of the
// experts taken so far: it picks the best expert *after* round j−1's pick in
// that order (a smaller score, or the same score and a larger index). The
// weights are the chosen experts' unbiased sigmoids, divided by their sum
// (+1e-6) when norm_topk, times scaling; the sum is taken in the order of
// choice, as the CPU reference does, so that it rounds alike.
// Traffic: each round reads the token's row of logits again (from cache);
// neighbouring work-items read rows E = experts floats apart.
// Cost: k·experts sigmoids per token. LFM2's CUDA step 06 (notebook 06)
// computes the logits too, and selects with a warp per token: each lane
// holds a few experts and a shuffle reduction finds the best.

float sigmoid(const float z) { return 1.0f / (1.0f + exp(-z)); }

__kernel void route(const __global float* restrict logits, const __global float* restrict bias, const int tokens,
                    const int experts, const int k, const int norm_topk, const float scaling,
                    __global int* restrict top_idx, __global float* restrict top_w)
{
    const int t = get_global_id(0);
    if (t >= tokens) return;
    const __global float* z = logits + (size_t)t * experts;
    __global int* idx = top_idx + (size_t)t * k;
    __global float* wts = top_w + (size_t)t * k;
    int prev = -1;  // the last pick and its score
    float prev_score = 0.0f, sum = 0.0f;
    for (int j = 0; j < k; j++) {
        int pick = -1;
        float pick_score = 0.0f;
        for (int e = 0; e < experts; e++) {
            const float score = sigmoid(z[e]) + bias[e];
            const bool after = prev < 0 || score < prev_score || (score == prev_score && e > prev);
            if (after && (pick < 0 || score > pick_score)) {
                pick = e;
                pick_score = score;
            }
        }
        const float s = sigmoid(z[pick]);
        idx[j] = pick;
        wts[j] = s;
        sum += s;
        prev = pick;
        prev_score = pick_score;
    }
    for (int j = 0; j < k; j++) {
        float wt = wts[j];
        if (norm_topk) wt /= sum + 1e-6f;
        wts[j] = wt * scaling;
    }
}

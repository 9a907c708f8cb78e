// Exercise sqfd/assign, reference solution: the k-medoids assignment under
// SQFD with the Gaussian similarity, a thread per signature.
//
// Idea: thread i walks the k medoids and computes each SQFD² = S(i, i) +
// S(m, m) − 2·S(i, m), where S(a, b) = Σ_a Σ_b w_a w_b exp(−α·|f_a − f_b|²)
// over the two signatures' centroids; the self terms S(i, i) come
// precomputed (self[]), so only the cross term is summed here. It keeps the
// nearest medoid, the lowest index on ties (a strict <, in medoid order, as
// the CPU does), and writes its SQFD.
// Traffic: every thread reads its own centroids once per medoid and each
// medoid's once per centroid of its own, through L1/L2; nothing is shared.
// Cost: a warp runs as long as its largest signature. k-medoids steps 01
// and 02 (kernels/cuda/kmedoids) go further: float4 records, the
// special-function unit's exp2, then medoids staged in shared memory.

extern "C" __global__ void sqfd_assign(const int* __restrict__ index, const float* __restrict__ features,
                                       const float* __restrict__ weights, const float* __restrict__ self, int n,
                                       int dim, const int* __restrict__ medoids, int k, float alpha,
                                       int* __restrict__ labels, float* __restrict__ dist) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const int i0 = index[i], i1 = index[i + 1];
    int label = -1;
    float best = 0.f;
    for (int c = 0; c < k; ++c) {
        const int m = medoids[c], m0 = index[m], m1 = index[m + 1];
        float cross = 0.f;  // S(i, m)
        for (int a = i0; a < i1; ++a) {
            const float* fa = features + (size_t)a * dim;
            float term = 0.f;  // Σ_b w_b exp(−α·|f_a − f_b|²)
            for (int b = m0; b < m1; ++b) {
                const float* fb = features + (size_t)b * dim;
                float d2 = 0.f;
                for (int j = 0; j < dim; ++j) {
                    const float t = fa[j] - fb[j];
                    d2 = fmaf(t, t, d2);
                }
                term = fmaf(weights[b], expf(-alpha * d2), term);
            }
            cross = fmaf(weights[a], term, cross);
        }
        const float d2 = fmaxf(0.f, self[i] + self[m] - 2.f * cross);
        if (label < 0 || d2 < best) best = d2, label = c;
    }
    labels[i] = label;
    dist[i] = sqrtf(best);
}

// Exercise sqfd/assign, reference solution: the k-medoids assignment under
// SQFD with the Gaussian similarity, a work-item per signature.
//
// Idea: work-item i walks the k medoids and computes each SQFD² = S(i, i) +
// S(m, m) − 2·S(i, m), where S(a, b) = Σ_a Σ_b w_a w_b exp(−α·|f_a − f_b|²)
// over the two signatures' centroids; the self terms S(i, i) come
// precomputed (self[]), so only the cross term is summed here. It keeps the
// nearest medoid, the lowest index on ties (a strict <, in medoid order, as
// the CPU does), and writes its SQFD.
// Traffic: every work-item reads its own centroids once per medoid and each
// medoid's once per centroid of its own, through the caches; nothing is
// shared.
// Cost: a SIMD group runs as long as its largest signature. The CUDA
// k-medoids steps 01 and 02 (notebook 05) go further: float4 records, a
// hardware exp2, then medoids staged in shared memory.

__kernel void sqfd_assign(const __global int* restrict index, const __global float* restrict features,
                          const __global float* restrict weights, const __global float* restrict self, const int n,
                          const int dim, const __global int* restrict medoids, const int k, const float alpha,
                          __global int* restrict labels, __global float* restrict dist)
{
    const int i = get_global_id(0);
    if (i >= n) return;
    const int i0 = index[i], i1 = index[i + 1];
    int label = -1;
    float best = 0.0f;
    for (int c = 0; c < k; c++) {
        const int m = medoids[c], m0 = index[m], m1 = index[m + 1];
        float cross = 0.0f;  // S(i, m)
        for (int a = i0; a < i1; a++) {
            const __global float* fa = features + (size_t)a * dim;
            float term = 0.0f;  // Σ_b w_b exp(−α·|f_a − f_b|²)
            for (int b = m0; b < m1; b++) {
                const __global float* fb = features + (size_t)b * dim;
                float d2 = 0.0f;
                for (int j = 0; j < dim; j++) {
                    const float t = fa[j] - fb[j];
                    d2 = fma(t, t, d2);
                }
                term = fma(weights[b], exp(-alpha * d2), term);
            }
            cross = fma(weights[a], term, cross);
        }
        const float d2 = fmax(0.0f, self[i] + self[m] - 2.0f * cross);
        if (label < 0 || d2 < best) {
            best = d2;
            label = c;
        }
    }
    labels[i] = label;
    dist[i] = sqrt(best);
}

// k-medoids step 01 — the assignment by the definition: a thread per
// signature, everything from global memory.
//
// Idea: thread i walks the K medoids and computes each SQFD² = S(i, i) +
// S(m, m) − 2·S(i, m) in full (S(i, i) once, hoisted out of the loop), and
// keeps the nearest medoid (the lowest index on ties, as the CPU does).
// Traffic: every thread reads its own centroids K + 1 times and each medoid's
// twice per medoid, all through L1/L2; nothing is shared between threads.
// Cost: about twice the useful work (S(m, m) is recomputed for every pair),
// and a warp runs as long as its largest signature: sizes of 10 to 40
// centroids leave lanes idle. Step 02 removes both.
#include "kmedoids/common.cuh"

extern "C" __global__ void assign_naive(const float4* __restrict__ data, const int* __restrict__ index, int first,
                                        int count, const int* __restrict__ medoids, int k, float kparam,
                                        int* __restrict__ labels, float* __restrict__ dist) {
    const int i = first + blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= first + count) return;
    const int i0 = index[i], i1 = index[i + 1];
    const float self_i = cross_range(data, i0, i1, i0, i1, kparam);
    float best = INF_FLOAT;
    int label = 0;
    for (int c = 0; c < k; ++c) {
        const int m = medoids[c], m0 = index[m], m1 = index[m + 1];
        const float d2 = m == i ? 0.f
                                : fmaxf(0.f, self_i + cross_range(data, m0, m1, m0, m1, kparam) -
                                                 2.f * cross_range(data, i0, i1, m0, m1, kparam));
        if (d2 < best) best = d2, label = c;
    }
    labels[i] = label;
    dist[i] = sqrtf(best);
}

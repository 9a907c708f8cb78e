// k-medoids step 04 — the medoid scores by the definition: a thread per
// candidate, everything from global memory.
//
// Idea: the new medoid of a cluster is the member whose distances to the
// other members sum least. Thread p takes row p of clusterList (step 03),
// walks the members of its cluster and adds SQFD(i, j), each computed in
// full like step 01. Scores are sums in 32.32 fixed point (common.cuh), the
// same bits as step 05's.
// Traffic: every thread reads its cluster's members' centroids, all through
// L1/L2, with no reuse between threads.
// Cost: about twice the useful work, divergence on signature sizes, and a
// thread per candidate: a large cluster is as slow as its longest thread.
#include "kmedoids/common.cuh"

extern "C" __global__ void score_naive(const float4* __restrict__ data, const int* __restrict__ index,
                                       const int* __restrict__ list, const int* __restrict__ labels,
                                       const int* __restrict__ offsets, int row0, int row1, float kparam,
                                       unsigned long long* __restrict__ score) {
    const int p = row0 + blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= row1) return;
    const int i = list[p], i0 = index[i], i1 = index[i + 1], c = labels[i];
    const float self_i = cross_range(data, i0, i1, i0, i1, kparam);
    unsigned long long sum = 0;
    for (int q = offsets[c]; q < offsets[c + 1]; ++q) {
        const int j = list[q], j0 = index[j], j1 = index[j + 1];
        if (j != i)
            sum += to_fixed(sqrtf(fmaxf(0.f, self_i + cross_range(data, j0, j1, j0, j1, kparam) -
                                                 2.f * cross_range(data, i0, i1, j0, j1, kparam))));
    }
    score[p] = sum;
}

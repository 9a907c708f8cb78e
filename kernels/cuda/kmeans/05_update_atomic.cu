// k-means step 05 — the update with atomics: every element adds itself.
//
// Idea: the simplest parallel update. A thread per element x[i][j] adds it
// to sums[label i][j] with atomicAdd; the host divides by the counts.
// Traffic: X once, coalesced; N·D atomics into only K·D addresses.
// Cost: contention. With K = 25, each address takes N/K atomics, all
// serialized in L2: the update can cost more than the assignment. Steps
// 06 and 07 reduce before they add.
extern "C" __global__ void update_atomic(const float* __restrict__ x, const int* __restrict__ labels, int n, int d,
                                         float* __restrict__ sums) {
    size_t total = (size_t)n * d;
    for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += (size_t)gridDim.x * blockDim.x) {
        size_t i = e / d;
        atomicAdd(&sums[(size_t)labels[i] * d + (e - i * d)], x[e]);
    }
}

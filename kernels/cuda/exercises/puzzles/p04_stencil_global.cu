// Puzzle 4's contrast: the same stencil without shared memory.
//
// Idea: each thread loads its three inputs from global memory; the cache
// catches most of the repeats, which is what the shared tile makes sure of.
// Traffic: three loads per element through the cache, out written once.
// Cost: the repeated loads; on a GPU, the notebook times it next to yours.

extern "C" __global__ void stencil3(const float* __restrict__ x, int n, float* __restrict__ out) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const float left = i > 0 ? x[i - 1] : 0.f, right = i + 1 < n ? x[i + 1] : 0.f;
    STORE(out, i, 0.25f * left + 0.5f * x[i] + 0.25f * right);
}

// Puzzle 2 (puzzles/guard), reference solution: out[i] = a[i] + b[i] with
// more threads than elements.
//
// Idea: blocks have BLOCK (256) threads, a -D define, and the grid has
// ceil(n / BLOCK) of them, so the last block's threads past n have no
// element: they must neither read nor write. One comparison, i < n, is the
// guard; for n = 0 one block still runs, and none of its threads stores.
// Traffic: a and b read once, out written once: 12 bytes per element.
// Cost: the idle threads of the last block, nothing at any real n.

extern "C" __global__ void vector_add(const float* __restrict__ a, const float* __restrict__ b, int n,
                                      float* __restrict__ out) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) STORE(out, i, a[i] + b[i]);
}

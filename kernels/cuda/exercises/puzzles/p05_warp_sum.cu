// Puzzle 5 (puzzles/warp-reduce), reference solution: sums[w] = x[32w] +
// ... + x[32w + 31] (those below n), with warp shuffles.
//
// Idea: the 32 threads of a warp run in lockstep and can read each other's
// registers: __shfl_down_sync(mask, v, d) gives each lane the v of the lane
// d above it. Five steps (16, 8, 4, 2, 1) add the warp's 32 values into
// lane 0, with no shared memory and no barrier. Threads past n hold 0, and
// every lane takes part in every shuffle (the mask names all 32).
// Traffic: x read once: 4 bytes per element, and a sum per 32.
// Cost: five shuffles per warp.

extern "C" __global__ void warp_sum(const float* __restrict__ x, int n, float* __restrict__ sums) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = i < n ? x[i] : 0.f;
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
    if (threadIdx.x % 32 == 0 && i < n) STORE(sums, i / 32, v);
}

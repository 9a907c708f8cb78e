// Puzzle 4 (puzzles/stencil), reference solution: out[i] = x[i-1] / 4 +
// x[i] / 2 + x[i+1] / 4, with zeros outside x, through shared memory.
//
// Idea: each input is needed by three threads. The block loads its BLOCK
// elements once into a shared tile, with one more on each side (the halo,
// which belongs to the neighbouring blocks; zero past the ends of x),
// waits at __syncthreads() until the tile is whole, and then every thread
// reads its three values from the tile.
// Traffic: x read once (plus two halo values per block), out written once:
// 8 bytes per element, where three loads per element read 16 through the
// cache.
// Cost: one barrier per block, and the halo's two extra loads.

extern "C" __global__ void stencil3(const float* __restrict__ x, int n, float* __restrict__ out) {
    __shared__ float tile[BLOCK + 2];  // tile[t + 1] = x[first + t]
    const int t = threadIdx.x, first = blockIdx.x * BLOCK, i = first + t;
    tile[t + 1] = i < n ? x[i] : 0.f;
    if (t == 0) tile[0] = first > 0 ? x[first - 1] : 0.f;
    if (t == BLOCK - 1) tile[BLOCK + 1] = i + 1 < n ? x[i + 1] : 0.f;
    __syncthreads();
    if (i < n) STORE(out, i, 0.25f * tile[t] + 0.5f * tile[t + 1] + 0.25f * tile[t + 2]);
}

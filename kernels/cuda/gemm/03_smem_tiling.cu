// Step 03 — shared-memory tiling.
//
// Idea: a block of 32×32 threads computes a 32×32 tile of C. It walks K in
// steps of 32: all threads copy one element of a 32×32 tile of A and one of B
// into shared memory, synchronize, and then each thread does 32 multiply-adds
// from shared memory. Each value loaded from global memory is now used 32
// times (by the 32 threads of its row or column of the tile).
// Traffic: global reads drop 32x, to 2·4·M·N·K/32 bytes; shared memory serves
// the other 31 of every 32 reads (~20x faster than DRAM, but not free: 2 shared
// loads per FMA).
// Cost: 8 KiB of shared memory per block and two __syncthreads per tile.
#define TILE 32

extern "C" __global__ void sgemm(int M, int N, int K, const float* __restrict__ A,
                                 const float* __restrict__ B, float* __restrict__ C) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
    float acc = 0.f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        // Tiles that stick out of A or B read zeros, which add nothing.
        As[ty][tx] = (row < M && k0 + tx < K) ? A[(size_t)row * K + k0 + tx] : 0.f;
        Bs[ty][tx] = (k0 + ty < K && col < N) ? B[(size_t)(k0 + ty) * N + col] : 0.f;
        __syncthreads();
#pragma unroll
        for (int p = 0; p < TILE; ++p) acc += As[ty][p] * Bs[p][tx];
        __syncthreads();
    }
    if (row < M && col < N) C[(size_t)row * N + col] = acc;
}

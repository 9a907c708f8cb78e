// k-means step 03 — a block per point, threads across dimensions.
//
// Idea (the seed's fix): turn the loop around. Block i owns point i; thread
// t reads dimensions t, t+TPB, ... of the row, so a warp reads 32
// consecutive floats (coalesced) and keeps them in registers. The centers
// come through shared memory in chunks of KC whole centers, KC chosen by the
// host from the device's shared memory per block (the seed's plan instead
// of a hard-coded 8). Each thread adds its dimensions' share of all KC
// distances, and one block reduction per chunk finds the nearest.
// Traffic: each row is read once, coalesced; the centers once per block
// from L2. Cost: a block per point means N blocks, each with KC reductions
// and its own pass over the centers: the centers' traffic from L2 is N·K·D
// floats, K times the data.
#include "kmeans/common.cuh"

#define KC_MAX 32     // distances a thread keeps per chunk
#define DIMS_MAX 48   // dimensions per thread: D <= 48·TPB (1536 with 32 threads)

extern "C" __global__ void assign_block(const float* __restrict__ x, const float* __restrict__ centers, int n, int d,
                                        int k, int kc, int* __restrict__ labels, float* __restrict__ dist) {
    extern __shared__ float chunk[];  // kc·d floats
    __shared__ float partial[32][KC_MAX + 1];
    const float* row = x + (size_t)blockIdx.x * d;
    float v[DIMS_MAX];
#pragma unroll
    for (int s = 0; s < DIMS_MAX; s++) {
        int j = threadIdx.x + s * blockDim.x;
        v[s] = j < d ? row[j] : 0.f;
    }
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
    int best = 0;
    float bestD = __int_as_float(0x7f800000);
    for (int c0 = 0; c0 < k; c0 += kc) {
        int m = min(kc, k - c0);
        __syncthreads();
        for (int t = threadIdx.x; t < m * d; t += blockDim.x) chunk[t] = centers[c0 * d + t];
        __syncthreads();
        for (int c = 0; c < m; c++) {
            float s = 0.f;
#pragma unroll
            for (int q = 0; q < DIMS_MAX; q++) {
                int j = threadIdx.x + q * blockDim.x;
                if (j < d) {
                    float t = v[q] - chunk[c * d + j];
                    s += t * t;
                }
            }
            for (int o = 16; o > 0; o /= 2) s += __shfl_down_sync(FULL, s, o);
            if (lane == 0) partial[warp][c] = s;
        }
        __syncthreads();
        if (threadIdx.x == 0)
            for (int c = 0; c < m; c++) {
                float s = 0.f;
                for (int w = 0; w < warps; w++) s += partial[w][c];
                if (s < bestD) best = c0 + c, bestD = s;
            }
    }
    if (threadIdx.x == 0) labels[blockIdx.x] = best, dist[blockIdx.x] = bestD;
}

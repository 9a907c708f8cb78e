// k-means step 07 — assignment and update in one kernel.
//
// Idea: step 04's tile of 256 points already has its labels in shared
// memory when the argmin ends; add the tile's rows to the sums right then,
// while they are fresh in L2, instead of a second kernel over X. Blocks are
// persistent (a grid the size of the GPU), each owning private partial sums
// (K×D in global memory, mostly L2-resident): no atomics. Within a tile the
// rows are ordered by label (a counting sort in shared memory), so a thread
// walks its dimension down the tile and touches its partial sums once per
// label run, not once per row. reduce_partials adds the blocks' partials.
// Traffic: X from DRAM once per iteration; the re-read of each tile comes
// from L2 when it still holds it. Cost: K·D floats per resident block, and
// the final reduction over blocks.
#include "kmeans/gemm_argmin.cuh"

extern "C" __global__ void __launch_bounds__(256)
    assign_fused(const float* __restrict__ x, const float* __restrict__ centers, const float* __restrict__ cn, int n,
                 int d, int k, int* __restrict__ labels, float* __restrict__ dist, float* __restrict__ partial) {
    __shared__ __align__(16) Tile t;
    __shared__ short order[BM];
    extern __shared__ int cursor[];  // k counts, then offsets
    float* mine = partial + (size_t)blockIdx.x * k * d;
    for (int p0 = blockIdx.x * BM; p0 < n; p0 += gridDim.x * BM) {
        nearestTile(t, x, centers, cn, n, d, k, p0);
        int m = min(BM, n - p0);
        for (int r = threadIdx.x; r < m; r += blockDim.x) labels[p0 + r] = t.label[r], dist[p0 + r] = t.dist[r];
        // Counting sort of the tile's rows by label.
        for (int c = threadIdx.x; c < k; c += blockDim.x) cursor[c] = 0;
        __syncthreads();
        for (int r = threadIdx.x; r < m; r += blockDim.x) atomicAdd(&cursor[t.label[r]], 1);
        __syncthreads();
        if (threadIdx.x == 0)
            for (int c = 0, s = 0; c < k; c++) {
                int v = cursor[c];
                cursor[c] = s;
                s += v;
            }
        __syncthreads();
        for (int r = threadIdx.x; r < m; r += blockDim.x) order[atomicAdd(&cursor[t.label[r]], 1)] = r;
        __syncthreads();
        for (int j = threadIdx.x; j < d; j += blockDim.x) {
            int run = t.label[order[0]];
            float sum = 0.f;
            for (int s = 0; s < m; s++) {
                int r = order[s], l = t.label[r];
                if (l != run) {
                    mine[(size_t)run * d + j] += sum;
                    run = l, sum = 0.f;
                }
                sum += x[(size_t)(p0 + r) * d + j];
            }
            mine[(size_t)run * d + j] += sum;
        }
        __syncthreads();  // the tile is reloaded next
    }
}

// reduce_partials: sums[e] += the sum over blocks of partial[b][e] (once
// per stream's partials when streaming).
extern "C" __global__ void reduce_partials(const float* __restrict__ partial, int blocks, int elems,
                                           float* __restrict__ sums) {
    int e = blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= elems) return;
    float s = 0.f;
    for (int b = 0; b < blocks; b++) s += partial[(size_t)b * elems + e];
    sums[e] += s;
}

// k-means step 04 — distances as a GEMM, with the argmin fused in.
//
// Idea: |x - c|² = |x|² - 2·x·c + |c|²: the K·N dot products are a matrix
// product X·Cᵀ, and the register-tiled GEMM of the gemm ladder computes it
// at a useful fraction of the FP32 peak (gemm_argmin.cuh). A block holds
// 256 points × up to 32 centers in registers, and keeps only the nearest
// center per point: the N×K distance matrix never exists. |c|² comes from
// center_norms, |x|² from the same loads.
// Traffic: X once per 32 centers (once for K <= 32), coalesced float4
// loads; the centers from L2 per tile.
// Cost: cancellation: |x|² and 2·x·c are large and close when x is near c,
// so float32 loses about |x|²·2⁻²⁴ of absolute precision on the distance.
// It matters only for near-ties, and the tests count them.
#include "kmeans/gemm_argmin.cuh"

extern "C" __global__ void __launch_bounds__(256) assign_gemm(const float* __restrict__ x, const float* __restrict__ centers,
                                                             const float* __restrict__ cn, int n, int d, int k,
                                                             int* __restrict__ labels, float* __restrict__ dist) {
    __shared__ __align__(16) Tile t;
    int p0 = blockIdx.x * BM;
    nearestTile(t, x, centers, cn, n, d, k, p0);
    for (int r = threadIdx.x; r < BM && p0 + r < n; r += blockDim.x) labels[p0 + r] = t.label[r], dist[p0 + r] = t.dist[r];
}

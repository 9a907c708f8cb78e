// k-medoids step 05 — the seed's score kernels: small clusters several to a
// block, big clusters split across blocks and combined with atomics.
//
// Idea: the rows are the signatures in cluster order (step 03 gathered them
// into a contiguous copy), cut into tiles as in step 02; a thread holds one
// centroid of the tile's candidates, and the targets (the other members of
// the candidates' clusters) are staged in shared memory and reduced GROUP at
// a time with step 02's walk (common.cuh). A pair's distance is
// √(S(i, i) + S(j, j) − 2·S(i, j)), added to the candidate's score in 32.32
// fixed point. Whether a cluster is small or big is its work, (centroids)²,
// against the cut-off `big` (a parameter):
//   score_small  a block per tile, for the rows of small clusters in it (the
//                seed's several clusters per kernel): it walks every target
//                of those clusters, a thread skipping the targets of other
//                clusters, so each score is complete and written directly.
//   score_big    a block per (tile, chunk of `chunk` targets) of a big
//                cluster: a candidate's score is split across blocks and
//                combined with 64-bit integer atomics, whose sum does not
//                depend on their order. The host lists the work, per big
//                cluster, as entries (cluster, first tile, items).
// Traffic: each tile's centroids once per block; the targets from L2 once
// per block; one atomic per candidate per target chunk.
// Cost: in score_small, a warp that spans two clusters runs both clusters'
// targets; big clusters pay a few atomics. Small clusters are, by the
// definition of the cut-off, a small share of the work.
#include "kmedoids/common.cuh"

// distance is SQFD of rows s (of the tile starting at r0) and t of the
// sorted set, from its cross term; a row's distance to itself is exactly 0.
__device__ __forceinline__ float distance(const float* __restrict__ self, int r0, int s, int t, float cross) {
    return r0 + s == t ? 0.f : sqrtf(fmaxf(0.f, self[r0 + s] + self[t] - 2.f * cross));
}

extern "C" __global__ void __launch_bounds__(TPB, 2)
    score_small(const float4* __restrict__ data, const int* __restrict__ index, const float* __restrict__ self,
                const int* __restrict__ tile_first, int tile0, const int* __restrict__ list,
                const int* __restrict__ labels, const int* __restrict__ offsets, const int* __restrict__ centroids,
                long long big, int trows, float kparam, unsigned long long* __restrict__ score) {
    TILE_SHARED;
    __shared__ int first_cluster, last_cluster;
    const int r0 = tile_first[tile0 + blockIdx.x], r1 = tile_first[tile0 + blockIdx.x + 1];
    if (r0 == r1) return;  // the whole block
    if (threadIdx.x == 0) first_cluster = 0x7fffffff, last_cluster = -1;
    const Centroid a = load_tile(tile, index, data, r0, r1);  // its barrier publishes the two above
    const int rows = r1 - r0;
    // The row thread's cluster segment, and the segment of the cluster of
    // this thread's centroid; empty for big clusters.
    int row_lo = 0, row_hi = 0, mine_lo = 0, mine_hi = 0;
    if ((int)threadIdx.x < rows) {
        const int c = labels[list[r0 + threadIdx.x]];
        if ((long long)centroids[c] * centroids[c] < big) {
            row_lo = offsets[c], row_hi = offsets[c + 1];
            atomicMin(&first_cluster, c);
            atomicMax(&last_cluster, c);
        }
    }
    if ((int)threadIdx.x < tile.first[rows]) {
        int lo = 0, hi = rows - 1;  // the last row s with tile.first[s] <= threadIdx.x
        while (lo < hi) {
            const int mid = (lo + hi + 1) / 2;
            if (tile.first[mid] <= (int)threadIdx.x)
                lo = mid;
            else
                hi = mid - 1;
        }
        const int c = labels[list[r0 + lo]];
        if ((long long)centroids[c] * centroids[c] < big) mine_lo = offsets[c], mine_hi = offsets[c + 1];
    }
    __syncthreads();
    if (last_cluster < 0) return;  // the whole block: only big clusters here
    unsigned long long sum = 0;
    walk_targets(
        tile, stage, a, rows, index, data, offsets[first_cluster], offsets[last_cluster + 1], trows, kparam,
        [&](int t) { return t >= mine_lo && t < mine_hi; },
        [&](int s, int t, float cross) { return distance(self, r0, s, t, cross); },
        [&](int t, float d) {
            if (t >= row_lo && t < row_hi) sum += to_fixed(d);
        });
    if ((int)threadIdx.x < rows && row_lo < row_hi) score[r0 + threadIdx.x] = sum;
}

extern "C" __global__ void __launch_bounds__(TPB, 2)
    score_big(const float4* __restrict__ data, const int* __restrict__ index, const float* __restrict__ self,
              const int* __restrict__ tile_first, const int* __restrict__ entry_item,
              const int* __restrict__ entry_cluster, const int* __restrict__ entry_tile, int entries,
              const int* __restrict__ offsets, int chunk, int trows, float kparam,
              unsigned long long* __restrict__ score) {
    TILE_SHARED;
    int e = 0, hi = entries - 1;  // the last entry e with entry_item[e] <= blockIdx.x
    while (e < hi) {
        const int mid = (e + hi + 1) / 2;
        if (entry_item[mid] <= (int)blockIdx.x)
            e = mid;
        else
            hi = mid - 1;
    }
    const int c = entry_cluster[e], p0 = offsets[c], p1 = offsets[c + 1];
    const int chunks = (p1 - p0 + chunk - 1) / chunk, item = blockIdx.x - entry_item[e];
    const int b = entry_tile[e] + item / chunks, j = item % chunks;
    const int r0 = max(p0, tile_first[b]), r1 = min(p1, tile_first[b + 1]);
    if (r0 >= r1) return;  // the whole block
    const Centroid a = load_tile(tile, index, data, r0, r1);
    const int rows = r1 - r0;
    unsigned long long sum = 0;
    walk_targets(
        tile, stage, a, rows, index, data, p0 + j * chunk, min(p1, p0 + (j + 1) * chunk), trows, kparam,
        [](int) { return true; }, [&](int s, int t, float cross) { return distance(self, r0, s, t, cross); },
        [&](int, float d) { sum += to_fixed(d); });
    if ((int)threadIdx.x < rows) atomicAdd(&score[r0 + threadIdx.x], sum);
}

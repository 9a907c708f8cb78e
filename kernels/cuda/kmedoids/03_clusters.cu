// k-medoids step 03 — the cluster preprocessing on the GPU.
//
// Idea: the seed built clusterList (the signatures ordered by cluster) and
// clusterListIndex (where each cluster starts) in a serial pass on the host,
// and blamed it for scaling badly with K. Here it is a counting sort:
//   cluster_histogram  counts per (cluster, chunk of CHUNK signatures) and
//                      centroids per cluster, with integer atomics
//   scan_int           (rows.cu) exclusive sums of the counts, cluster-major:
//                      where each chunk's members of each cluster go
//   cluster_offsets    clusterListIndex, K + 1 entries
//   cluster_scatter    clusterList: a warp per chunk, ranking equal labels
//                      with __match_any_sync, so that each cluster lists its
//                      signatures in index order, exactly as the CPU's
//                      kmedoids.Clusters does, and every GPU builds the same
// Then rows.cu's select_rows, scan_int and gather_rows copy the signatures
// into cluster order, so that the score kernels read rows and targets
// contiguously, and bucket_tiles cuts those rows into tiles. Last:
//   cluster_buckets    each cluster's first and last tile (for the host's
//                      list of big-cluster work)
//   bucket_work        the score work of each tile: Σ over its rows of the
//                      row's centroids × its cluster's centroids. Its prefix
//                      sums (scan_long) split the scores between GPUs: the
//                      seed's |C|² complexities, counted in centroid pairs.
//   cluster_minima     after the scores: each cluster's least (score, point)
//                      over the rows one GPU scored.
// Traffic: the labels twice and the dataset once (the gather) per iteration:
// at N = 100k and K = 100 about 80 MB, well under 1% of the score pass.
// Cost: about a dozen small launches, and single-block scans over K·N/1024
// counts and N sizes.
#include "kmedoids/common.cuh"

#define CHUNK 1024  // signatures per warp in cluster_histogram and cluster_scatter

extern "C" __global__ void cluster_histogram(const int* __restrict__ labels, const int* __restrict__ index, int n,
                                             int chunks, int* __restrict__ counts, int* __restrict__ centroids) {
    const int end = min(n, (blockIdx.x + 1) * CHUNK);
    for (int i = blockIdx.x * CHUNK + threadIdx.x; i < end; i += 32) {
        const int l = labels[i];
        atomicAdd(&counts[l * chunks + blockIdx.x], 1);
        atomicAdd(&centroids[l], index[i + 1] - index[i]);
    }
}

extern "C" __global__ void cluster_offsets(const int* __restrict__ starts, int k, int chunks, int n,
                                           int* __restrict__ offsets) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c < k) offsets[c] = starts[c * chunks];
    if (c == k) offsets[k] = n;
}

// cluster_scatter consumes the scanned counts as cursors. The peers of a
// round (lanes with equal labels) read the cursor, write their rank after
// it, and the first of them advances it; __syncwarp orders the rounds.
extern "C" __global__ void cluster_scatter(const int* __restrict__ labels, int n, int chunks, int* cursor,
                                           int* __restrict__ list) {
    const int lane = threadIdx.x, end = min(n, (blockIdx.x + 1) * CHUNK);
    for (int base = blockIdx.x * CHUNK; base < end; base += 32) {
        const int i = base + lane;
        const int l = i < end ? labels[i] : -1;
        const unsigned peers = __match_any_sync(FULL_MASK, l);
        const int rank = __popc(peers & ((1u << lane) - 1u));
        if (l >= 0) list[cursor[l * chunks + blockIdx.x] + rank] = i;
        __syncwarp();
        if (l >= 0 && rank == 0) cursor[l * chunks + blockIdx.x] += __popc(peers);
        __syncwarp();
    }
}

// cluster_buckets: first[c] and last[c] are the tiles of cluster c's first
// and last rows in the sorted set (tile of row p: sorted_index[p] / cap);
// -1 for an empty cluster.
extern "C" __global__ void cluster_buckets(const int* __restrict__ offsets, const int* __restrict__ sorted_index,
                                           int k, int cap, int* __restrict__ first, int* __restrict__ last) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= k) return;
    const int p0 = offsets[c], p1 = offsets[c + 1];
    first[c] = p0 < p1 ? sorted_index[p0] / cap : -1;
    last[c] = p0 < p1 ? sorted_index[p1 - 1] / cap : -1;
}

// bucket_work: work[b] for tiles b < buckets, and work[buckets] = 0 for the
// scan that follows.
extern "C" __global__ void bucket_work(const int* __restrict__ tile_first, int buckets,
                                       const int* __restrict__ sorted_index, const int* __restrict__ list,
                                       const int* __restrict__ labels, const int* __restrict__ centroids,
                                       long long* __restrict__ work) {
    const int b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b > buckets) return;
    long long w = 0;
    if (b < buckets)
        for (int p = tile_first[b]; p < tile_first[b + 1]; ++p)
            w += (long long)(sorted_index[p + 1] - sorted_index[p]) * centroids[labels[list[p]]];
    work[b] = w;
}

// cluster_minima: for each cluster, the least score over its rows in [row0,
// row1) and, on equal scores, the least signature: the CPU's rule. A warp per
// cluster; (~0, -1) where the cluster has no row in the range.
extern "C" __global__ void cluster_minima(const unsigned long long* __restrict__ score, const int* __restrict__ list,
                                          const int* __restrict__ offsets, int k, int row0, int row1,
                                          unsigned long long* __restrict__ best_score, int* __restrict__ best_point) {
    const int c = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
    if (c >= k) return;  // the whole warp
    unsigned long long s = ~0ull;
    int point = 0x7fffffff;
    const int p1 = min(offsets[c + 1], row1);
    for (int p = max(offsets[c], row0) + lane; p < p1; p += 32) {
        const unsigned long long v = score[p];
        const int q = list[p];
        if (v < s || (v == s && q < point)) s = v, point = q;
    }
    for (int o = 16; o > 0; o /= 2) {
        const unsigned long long v = __shfl_xor_sync(FULL_MASK, s, o);
        const int q = __shfl_xor_sync(FULL_MASK, point, o);
        if (v < s || (v == s && q < point)) s = v, point = q;
    }
    if (lane == 0) {
        best_score[c] = s;
        best_point[c] = point == 0x7fffffff ? -1 : point;
    }
}

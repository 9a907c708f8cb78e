// k-medoids step 02 — the seed's assignment kernel: a tile of source
// signatures per block, the medoids staged in shared memory.
//
// Idea: a block takes a tile of consecutive signatures (rows.cu's
// bucket_tiles: at most TPB = 512 centroids, about 20 signatures of 10–40)
// and gives each thread one source centroid, kept in registers: the seed's
// sigPerBlock sources, counted in centroids so that no lane idles on a short
// signature. The medoids, gathered into one contiguous set each iteration
// (the seed's "consolidated" medoids), are staged in shared memory a chunk
// at a time; every thread reads the same medoid centroid at once, a
// broadcast. For GROUP = 8 medoids at a time a thread sums w_b·f(a, b) over
// each medoid's centroids in a register, the block adds those partial sums
// per source signature (the cross term S(i, m)), and SQFD² = S(i, i) +
// S(m, m) − 2·S(i, m) uses the self-similarities computed once at upload
// (the seed recomputed them in every block, every iteration). Weights are
// normalized once on the host too, not per block.
// Traffic: each tile's centroids are read once; the medoids once per block
// from L2 (K·25 centroids of 32 bytes: 80 KB for K = 100); labels and
// distances written once.
// Cost: two barriers and a shared-memory reduction per 8 medoids (a few
// percent of the arithmetic), and about 8% of the threads idle on average
// in a tile's tail (cap / TPB with signatures of up to 40 centroids).
// The inner loop per centroid pair: two 16-byte broadcast loads, 7
// subtractions, 7 multiply-adds, one multiply, one MUFU.EX2 and one
// multiply-add: 17 FP32 instructions for the 25 useful flops of 3·D + 4.
#include "kmedoids/common.cuh"

extern "C" __global__ void __launch_bounds__(TPB, 2)
    assign_shared(const float4* __restrict__ data, const int* __restrict__ index, const float* __restrict__ self,
                  const int* __restrict__ tile_first, int tile0, const float4* __restrict__ mdata,
                  const int* __restrict__ mindex, const float* __restrict__ mself, const int* __restrict__ medoids,
                  int k, int trows, float kparam, int* __restrict__ labels, float* __restrict__ dist) {
    TILE_SHARED;
    const int r0 = tile_first[tile0 + blockIdx.x], r1 = tile_first[tile0 + blockIdx.x + 1];
    if (r0 == r1) return;  // the whole block: a bucket in which no signature starts
    const Centroid a = load_tile(tile, index, data, r0, r1);
    const int rows = r1 - r0;
    float best = INF_FLOAT;
    int label = 0;
    walk_targets(
        tile, stage, a, rows, mindex, mdata, 0, k, trows, kparam, [](int) { return true; },
        [&](int s, int m, float cross) {
            return medoids[m] == r0 + s ? 0.f : fmaxf(0.f, self[r0 + s] + mself[m] - 2.f * cross);
        },
        [&](int m, float d2) {
            if (d2 < best) best = d2, label = m;
        });
    if ((int)threadIdx.x < rows) {
        labels[r0 + threadIdx.x] = label;
        dist[r0 + threadIdx.x] = sqrtf(best);
    }
}

// k-means step 01 — naive assignment: a thread per point.
//
// Idea: the textbook loop. Thread i walks the K centers and, for each, the
// D dimensions of its point and of the center, all from global memory.
// Traffic: every thread reads its whole row (D floats) once per center, K
// times in all, mostly from L1/L2; the centers are read by every thread.
// Cost: a warp's 32 threads read 32 rows D floats apart: each load touches
// 32 different cache lines (uncoalesced), and each line is used for one
// float before the next center comes round.
#include "kmeans/common.cuh"

extern "C" __global__ void assign_naive(const float* __restrict__ x, const float* __restrict__ centers, int n, int d,
                                        int k, int* __restrict__ labels, float* __restrict__ dist) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const float* row = x + (size_t)i * d;
    int best = 0;
    float bestD = __int_as_float(0x7f800000);
    for (int c = 0; c < k; c++) {
        float s = 0.f;
        for (int j = 0; j < d; j++) {
            float t = row[j] - centers[c * d + j];
            s += t * t;
        }
        if (s < bestD) best = c, bestD = s;
    }
    labels[i] = best;
    dist[i] = bestD;
}

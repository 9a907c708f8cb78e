// k-means step 02 — centers in shared memory, in chunks: still a thread per point.
//
// Idea (the seed's first version): the centers are read by every thread, so
// stage them in shared memory, KC centers at a time (KC·D floats; 8 centers
// of 1536 dimensions fill 48 KiB), and keep a running best per thread.
// Traffic saved: the centers now come from shared memory, read once per
// block from global memory.
// Cost: the point rows are still read one thread per row (uncoalesced), and
// each thread re-reads its row once per chunk. The seed blamed bank
// conflicts; but all 32 threads read the same center element at once, which
// shared memory broadcasts without conflict. What stays slow is the
// uncoalesced row traffic: compare with step 03.
#include "kmeans/common.cuh"

extern "C" __global__ void assign_chunked(const float* __restrict__ x, const float* __restrict__ centers, int n, int d,
                                          int k, int kc, int* __restrict__ labels, float* __restrict__ dist) {
    extern __shared__ float chunk[];  // kc·d floats
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    const float* row = x + (size_t)min(i, n - 1) * d;
    int best = 0;
    float bestD = __int_as_float(0x7f800000);
    for (int c0 = 0; c0 < k; c0 += kc) {
        int m = min(kc, k - c0);
        __syncthreads();  // the previous chunk is no longer read
        for (int t = threadIdx.x; t < m * d; t += blockDim.x) chunk[t] = centers[c0 * d + t];
        __syncthreads();
        for (int c = 0; c < m; c++) {
            float s = 0.f;
            for (int j = 0; j < d; j++) {
                float t = row[j] - chunk[c * d + j];
                s += t * t;
            }
            if (s < bestD) best = c0 + c, bestD = s;
        }
    }
    if (i < n) labels[i] = best, dist[i] = bestD;
}

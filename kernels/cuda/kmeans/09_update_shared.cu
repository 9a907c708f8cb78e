// k-means step 09 — the update as one streaming pass, with per-block
// cluster sums in shared memory: no sort, no gather.
//
// Idea: step 06 sorts the points by label so that a thread can sum a run of
// rows in a register; the sort costs a scatter, and the gathered re-read of
// X is slower than a stream. Here a block owns a slice of blockDim.x
// dimensions and a range of rows, read in order (coalesced, 128 bytes per
// warp per row). Thread t owns dimension j of the slice and a column of a
// K × blockDim.x table in shared memory, and adds x[i][j] into row
// labels[i] of it. A thread only ever touches its own column, so there are
// no atomics and no barriers; the warp's 32 columns are 32 consecutive
// words, so no bank conflicts either (the label is the same for the warp).
// Eight rows are loaded before they are added, so that eight loads per
// thread are in flight. At the end a block adds its table to the sums:
// K·blockDim.x atomics per block, a few per row of X.
// The same pass also measures the inertia exactly: it has x[i][j] in hand,
// so it adds (x[i][j] - c[labels[i]][j])², with the centers of the
// assignment: the thread's column of them sits in shared memory next to its
// column of the table, so the inertia adds a shared load per element and
// no global one. The GEMM form of steps 08 and 10 is accurate enough to
// rank centers, but |x|² + |c|² - 2·x·c cancels badly for a point near its
// center: its rounding grows with |x|² + |c|², not with the distance, and
// on tensor cores (3xTF32) the split adds its own. Here those distances
// never enter the inertia.
// Traffic: X once, streamed; labels and centers from L1/L2.
// Cost: 2·K·blockDim.x·4 bytes of shared memory: blockDim.x shrinks as K
// grows (the host picks it); a shared load, a subtraction and an FMA per
// element for the inertia.
#include "kmeans/common.cuh"

extern "C" __global__ void update_shared(const float* __restrict__ x, const int* __restrict__ labels,
                                         const float* __restrict__ centers, int n, int d, int k, int rowsPerBlock,
                                         float* __restrict__ sums, double* __restrict__ inertia) {
    extern __shared__ float table[];         // table[c * blockDim.x + t]: sums
    float* mine = table + k * blockDim.x;  // mine[c * blockDim.x + t] = centers[c][j]
    int t = threadIdx.x, j = blockIdx.x * blockDim.x + t;
    float sq = 0.f;
    if (j < d) {
        for (int c = 0; c < k; c++) table[c * blockDim.x + t] = 0.f, mine[c * blockDim.x + t] = centers[(size_t)c * d + j];
        int r0 = blockIdx.y * rowsPerBlock, r1 = min(n, r0 + rowsPerBlock);
        const float* col = x + j;
        int i = r0;
        for (; i + 8 <= r1; i += 8) {
            int l[8];
            float v[8];
#pragma unroll
            for (int u = 0; u < 8; u++) l[u] = __ldg(labels + i + u), v[u] = __ldg(col + (size_t)(i + u) * d);
#pragma unroll
            for (int u = 0; u < 8; u++) {
                table[l[u] * blockDim.x + t] += v[u];
                float e = v[u] - mine[l[u] * blockDim.x + t];
                sq = fmaf(e, e, sq);
            }
        }
        for (; i < r1; i++) {
            int l = labels[i];
            float v = col[(size_t)i * d], e = v - mine[l * blockDim.x + t];
            table[l * blockDim.x + t] += v;
            sq = fmaf(e, e, sq);
        }
        for (int c = 0; c < k; c++) {
            float s = table[c * blockDim.x + t];
            if (s != 0.f) atomicAdd(&sums[(size_t)c * d + j], s);
        }
    }
    sq = blockSum(sq);  // every thread takes part, also those past d
    if (t == 0) atomicAdd(inertia, (double)sq);
}

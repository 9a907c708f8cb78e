// SpMV step 04 — CSR vector again, with several rows in flight per group.
//
// Idea: step 02's layout (LANES lanes per row, a shuffle reduction) was not
// what made it slow; its schedule was. A group had one row, and waited three
// times in a row: for the row's bounds, then for its columns and values, then
// for x. Step 03 fixed that with host-cut row blocks and shared memory; this
// step keeps step 02's simple layout and fixes only the schedule. Each group
// takes ROWS rows and issues the loads of all of them before it uses any:
// ROWS pairs of bounds, then ROWS columns and values, then ROWS reads of x.
// A lane now has up to 3·ROWS loads in flight where it had one. At each of
// the ROWS steps a warp's groups serve consecutive rows (group k of the warp
// takes rows first + u·GROUPS), so the columns and values a warp reads are
// still one contiguous stretch, as in step 02.
// Traffic: the same bytes as steps 02 and 03; more of them in flight.
// Cost: registers. Pending loads live in registers, and with ROWS = 4 the
// compiler wants 56 per thread, which leaves room for 32 warps per SM: half
// the warps, so half the gain. __launch_bounds__(256, 8) caps it at 32, for
// 64 warps (on an H200: banded 0.54x -> 0.64x of the bound, Poisson 0.69x
// -> 0.75x; ROWS = 6 under the cap spills and is slower). Also ROWS shuffle
// reductions per group. A group walks its rows together, LANES entries at a
// time, until its longest row is done: lanes idle on the shorter rows, which
// is what R-MAT's power-law rows make expensive. No host-side analysis.
#ifndef LANES
#define LANES 32
#endif
#ifndef ROWS
#define ROWS 4
#endif
#define GROUPS (32 / LANES)  // groups of lanes in a warp

extern "C" __global__ void __launch_bounds__(256, 8) spmv_vector_rows(int rows, const int* __restrict__ rowPtr, const int* __restrict__ colIdx,
                                            const float* __restrict__ val, const float* __restrict__ x,
                                            float* __restrict__ y) {
    int lane = threadIdx.x % LANES;
    int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    int first = warp * ROWS * GROUPS + threadIdx.x % 32 / LANES;  // this group's row at step u = 0
    int begin[ROWS], end[ROWS], longest = 0;
#pragma unroll
    for (int u = 0; u < ROWS; u++) {  // ROWS independent pairs of loads
        int r = first + u * GROUPS;
        begin[u] = end[u] = 0;
        if (r < rows) begin[u] = rowPtr[r], end[u] = rowPtr[r + 1];
    }
#pragma unroll
    for (int u = 0; u < ROWS; u++) longest = max(longest, end[u] - begin[u]);
    float sum[ROWS];
#pragma unroll
    for (int u = 0; u < ROWS; u++) sum[u] = 0.f;
    for (int q = lane; q < longest; q += LANES) {
        int col[ROWS];
        float v[ROWS];
#pragma unroll
        for (int u = 0; u < ROWS; u++) {  // 2·ROWS independent loads ...
            int p = begin[u] + q;
            col[u] = p < end[u] ? colIdx[p] : -1;
            v[u] = p < end[u] ? val[p] : 0.f;
        }
#pragma unroll
        for (int u = 0; u < ROWS; u++)  // ... then ROWS independent reads of x
            if (col[u] >= 0) sum[u] += v[u] * x[col[u]];
    }
    // Every lane of the warp gets here (no early return), as the shuffles need.
#pragma unroll
    for (int u = 0; u < ROWS; u++) {
#pragma unroll
        for (int off = LANES / 2; off > 0; off /= 2) sum[u] += __shfl_down_sync(0xffffffffu, sum[u], off, LANES);
        int r = first + u * GROUPS;
        if (lane == 0 && r < rows) y[r] = sum[u];
    }
}

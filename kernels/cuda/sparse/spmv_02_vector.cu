// SpMV step 02 — CSR vector: one warp per row.
//
// Idea: the 32 lanes of a warp share one row: lane l reads entries l, l+32,
// ... of the row, so each step of the warp is one coalesced read of 32
// consecutive column indices and values; the 32 partial sums are then added
// with warp shuffles (no shared memory, no __syncthreads).
// Traffic: the same bytes as step 01, in full 128-byte lines.
// Cost: rows shorter than 32 entries leave lanes idle, so on very sparse
// matrices (a few entries per row) step 01 can win; the shuffle reduction
// costs 5 steps per row.
extern "C" __global__ void spmv_vector(int rows, const int* __restrict__ rowPtr, const int* __restrict__ colIdx,
                                       const float* __restrict__ val, const float* __restrict__ x, float* __restrict__ y) {
    int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
    if (warp >= rows) return;
    float sum = 0.f;
    for (int p = rowPtr[warp] + lane; p < rowPtr[warp + 1]; p += 32) sum += val[p] * x[colIdx[p]];
#pragma unroll
    for (int off = 16; off > 0; off /= 2) sum += __shfl_down_sync(0xffffffffu, sum, off);
    if (lane == 0) y[warp] = sum;
}

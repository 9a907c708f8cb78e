// SpMV step 02 — CSR vector: a group of LANES threads per row.
//
// Idea: the LANES lanes of a group share one row: lane l reads entries l,
// l+LANES, ... of the row, so the group reads consecutive column indices and
// values together (coalesced), and its partial sums are added with warp
// shuffles (no shared memory, no __syncthreads). With LANES = 32 (the classic
// vector kernel) a whole warp serves each row.
// Traffic: the same bytes as step 01, in whole lines instead of scattered words.
// Cost: rows shorter than LANES leave lanes idle: with 5 entries per row,
// 27 of 32 lanes do nothing. So the Go side also compiles this kernel with
// LANES = the mean row length rounded up to a power of two (2..32): the
// "adaptive" variant. The shuffle reduction costs log2(LANES) steps per row.
#ifndef LANES
#define LANES 32
#endif

extern "C" __global__ void spmv_vector(int rows, const int* __restrict__ rowPtr, const int* __restrict__ colIdx,
                                       const float* __restrict__ val, const float* __restrict__ x, float* __restrict__ y) {
    int row = (blockIdx.x * blockDim.x + threadIdx.x) / LANES, lane = threadIdx.x % LANES;
    float sum = 0.f;
    if (row < rows)  // no early return: every lane of the warp must reach the shuffles
        for (int p = rowPtr[row] + lane; p < rowPtr[row + 1]; p += LANES) sum += val[p] * x[colIdx[p]];
#pragma unroll
    for (int off = LANES / 2; off > 0; off /= 2) sum += __shfl_down_sync(0xffffffffu, sum, off, LANES);
    if (row < rows && lane == 0) y[row] = sum;
}

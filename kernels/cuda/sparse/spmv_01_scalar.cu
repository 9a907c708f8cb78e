// SpMV step 01 — CSR scalar: one thread per row, y = A·x.
//
// Idea: the textbook mapping. Thread i walks row i of A and sums a(i,k)·x[k].
// Traffic: every stored entry is read once (4-byte column index + 4-byte
// value), x is gathered (cached), y written once: about 8·nnz + 4·rows bytes.
// Cost: neighbouring threads walk different rows, so the 32 loads a warp
// issues at each step are 32 scattered addresses (one row length apart), not
// one coalesced line; and a warp waits for its longest row, so power-law
// matrices leave most lanes idle.
extern "C" __global__ void spmv_scalar(int rows, const int* __restrict__ rowPtr, const int* __restrict__ colIdx,
                                       const float* __restrict__ val, const float* __restrict__ x, float* __restrict__ y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= rows) return;
    float sum = 0.f;
    for (int p = rowPtr[i]; p < rowPtr[i + 1]; ++p) sum += val[p] * x[colIdx[p]];
    y[i] = sum;
}

// SpMV step 05 — SELL-C-σ: step 01's thread per row, in a format that
// makes its loads coalesced (Kreutzer et al. 2014).
//
// Idea: step 01 is slow because the 32 rows of a warp lie one row length
// apart in CSR, so each load of the warp touches 32 lines. Change the
// layout, not the schedule: cut the rows into chunks of C = CHUNK = 32 (a
// warp) and store each chunk column by column, entry j of the chunk's rows
// side by side. Lane r of a warp then reads entry j of its row next to lane
// r+1's: one coalesced line per step, with no shuffles and no shared memory.
// A chunk is as wide as its longest row, so the host sorts the rows by
// length within windows of σ rows (sellSigma in engine/sparse) to put rows
// of similar length together, and keeps the permutation to write y back in
// order. Each thread stops at its own row's length: the padding costs
// memory but is never read.
// Traffic: the entries once, coalesced, as in steps 02-04; per row a length
// and a permutation index instead of a row pointer; x gathered as before;
// y written through the permutation (scattered within a window of σ rows).
// Cost: the conversion on the host (a sort per window, once per matrix, like
// step 03's row blocks), the padding in memory, and a warp still waits for
// its longest row: a power-law row a thousand times longer than its
// neighbours keeps one lane busy while 31 wait, which no layout fixes
// (step 03 gives such a row a block). The loop is unrolled by four so that
// the compiler can issue four iterations' loads before their sums.
#ifndef CHUNK
#define CHUNK 32
#endif

extern "C" __global__ void spmv_sell(int rows, const int* __restrict__ chunkPtr, const int* __restrict__ rowLen,
                                     const int* __restrict__ perm, const int* __restrict__ colIdx,
                                     const float* __restrict__ val, const float* __restrict__ x, float* __restrict__ y) {
    int slot = blockIdx.x * blockDim.x + threadIdx.x;  // the slot-th row in the sorted order
    if (slot >= rows) return;
    int start = chunkPtr[slot / CHUNK] + slot % CHUNK, n = rowLen[slot];
    float sum = 0.f;
#pragma unroll 4
    for (int j = 0; j < n; j++) sum += val[start + j * CHUNK] * x[colIdx[start + j * CHUNK]];
    y[perm[slot]] = sum;
}

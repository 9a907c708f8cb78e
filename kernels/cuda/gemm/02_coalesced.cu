// Step 02 — coalesced: threadIdx.x runs along COLUMNS.
//
// Idea: the same arithmetic as step 01, with the two thread indices swapped.
// Now the 32 threads of a warp share one row and take 32 consecutive columns:
// - their loads of B[p][col..col+31] are one 128-byte line (coalesced);
// - their loads of A[row][p] are one address, broadcast to the whole warp;
// - their stores to C are one 128-byte line.
// Traffic: the same 8·M·N·K bytes are requested, but per warp and k, A takes
// one sector instead of 32 and C's stores 4 (one line) instead of 32. B takes
// 4 sectors where step 01 took one, but they serve 32 columns, not one: per
// column, 8x fewer. Memory does full lines of work.
// Cost: nothing: only the index mapping changed.
extern "C" __global__ void sgemm(int M, int N, int K, const float* __restrict__ A,
                                 const float* __restrict__ B, float* __restrict__ C) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < M && col < N) {
        float acc = 0.f;
        for (int p = 0; p < K; ++p) acc += A[(size_t)row * K + p] * B[(size_t)p * N + col];
        C[(size_t)row * N + col] = acc;
    }
}

// Step 01 — naive: one thread per element of C.
//
// Idea: thread (x, y) computes C[row][col] as a dot product of row `row` of A
// and column `col` of B. threadIdx.x runs along ROWS here, the "natural" choice
// that turns out to be the wrong one (step 02).
// Traffic: every thread reads K floats of A and K of B from global memory:
// 8·M·N·K bytes in all, 2·K times more than the 4·(MK + KN) the inputs hold.
// Caches absorb some of it. Worse, the 32 threads of a warp have consecutive
// `row`s and one `col`: their loads of A are K floats apart and their stores
// to C N floats apart, so each of those is its own 32-byte sector, 32 sectors
// for 128 useful bytes (uncoalesced). Only their load of B is cheap: one
// address for the whole warp, a broadcast of a single sector.
// Cost: none; it is the reference point.
extern "C" __global__ void sgemm(int M, int N, int K, const float* __restrict__ A,
                                 const float* __restrict__ B, float* __restrict__ C) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    int col = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < M && col < N) {
        float acc = 0.f;
        for (int p = 0; p < K; ++p) acc += A[(size_t)row * K + p] * B[(size_t)p * N + col];
        C[(size_t)row * N + col] = acc;
    }
}

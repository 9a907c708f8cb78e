// Step 11 — small-batch projections: a GEMV kernel instead of cuBLAS.
//
// Idea: at decode a projection multiplies a few rows (one per sequence) by a
// weight matrix: out[r, n] (+)= Σ_k in[r, k]·W[n, k]. That is a GEMV, bound
// by the speed at which W streams from memory, and cuBLAS, tuned for large
// tiles, reached a small part of the bandwidth on it (docs/lfm2.md has the
// profile). Here
// each warp computes GEMV_ROWS outputs for all the input rows: its lanes
// stream the weight rows with 16-byte loads, several steps in flight
// (rows_dot in common.cuh), apply each weight to every input row (read from
// L1), and finish with warp shuffles. Blocks of GEMV_WARPS warps cover N, so
// a 2048-wide projection has 256 blocks and every SM streams. Accumulation is
// fp32 like the cuBLAS path; accumulate adds to out (the residual stream,
// cuBLAS's beta = 1). gemv_1 is compiled for one input row (batch 1),
// gemv_8 for up to GEMV_MAX_ROWS; above that the engine calls cuBLAS, whose
// tensor-core tiles win once the weights are reused across rows.
// Traffic: W read once, the input rows from L1, the outputs written once.
// Cost: rows·N·K CUDA-core FMAs, negligible next to the weight traffic at
// up to 8 rows.
#include "lfm2/common.cuh"

#define GEMV_WARPS 4
#define GEMV_ROWS 2  // weight rows (outputs) per warp
#define GEMV_MAX_ROWS 8
// GEMV_MIN_BLOCKS is the launch bound's blocks per SM: with it, ptxas may
// spend the registers that keep ROWS_DOT_STEPS steps of loads in flight;
// without it, it schedules each step's loads after the previous step's
// arithmetic, to save registers, and a warp waits on memory step by step.
#define GEMV_MIN_BLOCKS 3

static_assert(GEMV_ROWS * GEMV_MAX_ROWS <= 32, "each lane writes at most one output of a warp");

// gemv: in [rows, K], W [N, K], out [rows, N]; rows <= M.
template <int M>
__device__ __forceinline__ void gemv(const elem* __restrict__ in, int rows, int K, const elem* __restrict__ W, int N,
                                     float* __restrict__ out, int accumulate) {
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    int n0 = (blockIdx.x * GEMV_WARPS + warp) * GEMV_ROWS;
    if (n0 >= N) return;
    const elem* w[GEMV_ROWS];
#pragma unroll
    for (int o = 0; o < GEMV_ROWS; ++o) w[o] = W + (size_t)min(n0 + o, N - 1) * K;  // past N: a valid row, not written
    const elem* x[M];
#pragma unroll
    for (int r = 0; r < M; ++r) x[r] = in + (size_t)min(r, rows - 1) * K;
    float acc[GEMV_ROWS][M] = {};
    rows_dot<GEMV_ROWS, M>(w, x, rows, K, lane, acc);
#pragma unroll
    for (int r = 0; r < M; ++r) {
        if (r >= rows) break;
#pragma unroll
        for (int o = 0; o < GEMV_ROWS; ++o) {
            float s = warp_sum(acc[o][r]);
            if (lane == o * M + r && n0 + o < N) {  // each lane writes one of the warp's outputs
                float* p = out + (size_t)r * N + n0 + o;
                *p = accumulate ? *p + s : s;
            }
        }
    }
}

extern "C" __global__ void __launch_bounds__(GEMV_WARPS * 32, GEMV_MIN_BLOCKS)
gemv_1(const elem* in, int rows, int K, const elem* W, int N, float* out, int accumulate) {
    gemv<1>(in, rows, K, W, N, out, accumulate);
}

extern "C" __global__ void __launch_bounds__(GEMV_WARPS * 32, GEMV_MIN_BLOCKS)
gemv_8(const elem* in, int rows, int K, const elem* W, int N, float* out, int accumulate) {
    gemv<GEMV_MAX_ROWS>(in, rows, K, W, N, out, accumulate);
}

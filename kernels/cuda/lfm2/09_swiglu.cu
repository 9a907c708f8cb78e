// Step 09 — fused W1/W3: SwiGLU on the output of one GEMM.
//
// Idea: w1 (gate) and w3 (up) read the same input, so their rows are stored
// one after the other, [w1; w3] of shape [2I, H], and one GEMM computes both:
// h = x·[w1; w3]ᵀ, of shape [rows, 2I]. This kernel then writes
// silu(h[:, :I]) ⊙ h[:, I:] in the engine's type, the input of the w2 GEMM.
// Traffic: the input x is read once instead of twice, and there is one GEMM
// launch instead of two, with twice the columns (better tensor-core tiles).
// Cost: h, 2I floats per row, is written and read once.
#include "lfm2/common.cuh"

extern "C" __global__ void swiglu(const float* __restrict__ h, long long rows, int I, elem* __restrict__ act) {
    long long n = rows * I;
    for (long long idx = blockIdx.x * (long long)blockDim.x + threadIdx.x; idx < n; idx += (long long)gridDim.x * blockDim.x) {
        long long r = idx / I, i = idx - r * I;
        const float* hr = h + r * 2 * I;
        put(act + idx, silu_mul(hr[i], hr[I + i]));
    }
}

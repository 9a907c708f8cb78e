// Step 1: naive. One work-item computes one element of C = A·B (row-major:
// A is M×K, B is K×N, C is M×N) with a dot product of a row of A and a
// column of B read straight from global memory.
//
// Global traffic (ignoring caches): every output reads K floats of A and K
// of B, and writes one float of C: 4·(2·M·N·K + M·N) bytes. For a cube of
// side n that is about 2n/3 times the compulsory 4·(M·K + K·N + M·N) bytes,
// and one 4-byte load per flop: this step is bound by memory (or by the
// caches that save it), never by the arithmetic units.
//
// Layout: dimension 0 of the NDRange walks the columns of C (n), dimension 1
// the rows (m). Neighbouring work-items of a warp share m and take
// consecutive n, so their B loads and C stores are coalesced and their A
// load is one broadcast address.
//
// Costs: one accumulator register, no __local memory, no constraints.
// Edges: the NDRange is rounded up to whole work-groups; work-items outside
// C return at once (there is no barrier to keep them for).
//
// This is the OpenCL baseline of the lab: there is no clBLAS on these
// machines, so OpenCL steps are compared with this kernel here, and the
// notebook compares them with cuBLAS from the CUDA run separately.
//
// Every step accumulates with fma(a, b, acc): one fused multiply-add
// instruction on GPUs and on x86 CPUs with FMA, so all steps round the same
// way and their speedups come from memory, not from the arithmetic.
// The lab builds without -cl-fast-relaxed-math: it implies
// -cl-finite-math-only, which lets the compiler assume no NaN or Inf, and a
// NaN in A must reach C exactly as in the reference. GEMM is nothing but
// FMAs, so the flag would buy nothing anyway.
//
// Parameters (-D at build time):
//   WG  work-group side, WG×WG work-items (default 16).

#ifndef WG
#define WG 16
#endif

__kernel __attribute__((reqd_work_group_size(WG, WG, 1)))
void gemm(const int M, const int N, const int K,
          const __global float* restrict A,
          const __global float* restrict B,
          __global float* restrict C)
{
    const int n = get_global_id(0); // column of C
    const int m = get_global_id(1); // row of C
    if (m >= M || n >= N) {
        return;
    }
    float acc = 0.0f;
    for (int k = 0; k < K; k++) {
        acc = fma(A[m*K + k], B[k*N + n], acc);
    }
    C[m*N + n] = acc;
}

// divergence: the cost of threads of one warp taking different branches.
//
// The guide claims: "Full lock-step parallelism is achieved when all threads in
// a warp follow the same control path. If the threads diverge via a conditional
// branch [...] the hardware serially executes each branch path taken", and
// advises to minimise conditional code.
//
// This kernel measures it: every thread runs branch A or branch B, chosen by
// mask[i] (0: A, 1: B). Each branch is a chain of ITERS dependent FMAs with
// its own constants (A pulls v towards 0.5, B towards -0.5), so both are real
// work of the same cost. The host varies only the mask: all A (uniform), whole
// 32-thread groups alternating (warp_split), even and odd lanes alternating
// (alternate_lanes), random lanes with probability p. branchless computes
// both chains for every thread and picks one with a ternary, without a branch.
//
// Why: a warp is 32 lanes in lock-step; when its lanes disagree the warp runs
// A with the B lanes masked off, then B with the A lanes masked off (Volta's
// independent thread scheduling does not change that: the paths still issue
// one after the other), so a divergent warp costs A + B while a uniform one
// costs A or B. What counts is whether lanes of one warp disagree, not how
// many threads take B: warp_split sends half the threads down B at no cost,
// alternate_lanes costs up to twice the time (A + B instead of one chain; the
// work both share, loads and loop, keeps it below that), and random p costs
// about 1 + (1-(1-p)^32).
// (The OpenCL twin explains why PoCL's CPU device shows this differently.)
#ifndef ITERS
#define ITERS 128
#endif

extern "C" __global__ void branchy(int n, const int* __restrict__ mask, const float* __restrict__ x,
                                   float* __restrict__ out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i];
    if (mask[i] == 0) {
        for (int k = 0; k < ITERS; k++) v = fmaf(v, 0.999f, 0.0005f);  // branch A
    } else {
        for (int k = 0; k < ITERS; k++) v = fmaf(v, 0.998f, -0.001f);  // branch B
    }
    out[i] = v;
}

// branchless: both chains on every thread, combined with a ternary (a select
// instruction, no branch). Twice the arithmetic, no divergence; the two
// chains are independent, so the warp scheduler can overlap their latencies.
extern "C" __global__ void branchless(int n, const int* __restrict__ mask, const float* __restrict__ x,
                                      float* __restrict__ out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float a = x[i], b = a;
    for (int k = 0; k < ITERS; k++) {
        a = fmaf(a, 0.999f, 0.0005f);
        b = fmaf(b, 0.998f, -0.001f);
    }
    out[i] = mask[i] != 0 ? b : a;
}

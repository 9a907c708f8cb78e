// divergence: the cost of work-items of one warp taking different branches.
//
// The guide claims: "Full lock-step parallelism is achieved when all threads in
// a warp follow the same control path. If the threads diverge via a conditional
// branch [...] the hardware serially executes each branch path taken", and
// advises to minimise conditional code.
//
// This kernel measures it: every work-item runs branch A or branch B, chosen by
// mask[i] (0: A, 1: B). Each branch is a chain of ITERS dependent
// multiply-adds with its own constants (A pulls v towards 0.5, B towards
// -0.5), so both are real work of the same cost. The host varies only the
// mask: all A (uniform), whole 32-lane groups alternating (warp_split), even
// and odd lanes alternating (alternate_lanes), random lanes with probability
// p. branchless computes both chains for every work-item and picks one with a
// select, without any branch.
//
// Why: on NVIDIA a warp is 32 lanes in lock-step; when its lanes disagree
// the warp runs A with the B lanes masked off, then B with the A lanes masked
// off, so a divergent warp costs A + B while a uniform one costs A or B. What
// counts is whether lanes of one warp disagree, not how many lanes take B:
// warp_split sends half the work-items down B at no cost, alternate_lanes
// costs up to twice the time (A + B instead of one chain; the work both
// share keeps it below that). PoCL's CPU device either vectorizes work-items across
// SIMD lanes (then a divergent branch becomes both paths with masked
// blends, as on a GPU, only with 4 to 16 lanes instead of 32) or, when it
// cannot, runs work-items one after another in scalar code, where a branch per
// work-item costs nothing beyond a predictable-or-not CPU branch. So the
// divergence penalty there is small, different, or absent.
#ifndef ITERS
#define ITERS 128
#endif

__kernel void branchy(int n, __global const int* restrict mask, __global const float* restrict x,
                      __global float* restrict out) {
    int i = get_global_id(0);
    if (i >= n) return;
    float v = x[i];
    if (mask[i] == 0) {
        for (int k = 0; k < ITERS; k++) v = v * 0.999f + 0.0005f;  // branch A
    } else {
        for (int k = 0; k < ITERS; k++) v = v * 0.998f - 0.001f;  // branch B
    }
    out[i] = v;
}

// branchless: both chains on every work-item, combined with a select. Twice
// the arithmetic, no divergence; the two chains are independent, so a GPU can
// overlap their latencies.
__kernel void branchless(int n, __global const int* restrict mask, __global const float* restrict x,
                         __global float* restrict out) {
    int i = get_global_id(0);
    if (i >= n) return;
    float a = x[i], b = a;
    for (int k = 0; k < ITERS; k++) {
        a = a * 0.999f + 0.0005f;
        b = b * 0.998f - 0.001f;
    }
    out[i] = select(a, b, mask[i] != 0);
}

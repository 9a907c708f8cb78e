// Work-group size sweep (suite "wgsize"; the CUDA twin is cuda/warps/wgsize.cu).
//
// The guide's claim: on PowerVR Rogue the hardware schedules work-items in
// groups of 32 (its "warp"), so work-group sizes should be multiples of 32,
// and kernels should declare their size with
// __attribute__((reqd_work_group_size(X,Y,Z))) so that the compiler can plan
// registers and local memory for exactly that size.
//
// What this measures: the same two kernels launched with local sizes 8 ... 1024,
// each built twice: with -DWG=<size>, which adds reqd_work_group_size(WG,1,1),
// and without it.
//   wg_copy: dst[i] = src[i]; 8 bytes per element, no arithmetic: memory bound.
//   wg_fma:  ITERS dependent FMAs per element (2*ITERS flops per 8 bytes):
//            compute bound, and latency bound inside one work-item, so the
//            device must interleave many warps to hide FMA latency.
// Why: a group smaller than 32 leaves lanes of every warp idle (8 uses a
// quarter of the machine); sizes that are multiples of 32 fill warps, and the
// group size also sets how many groups fit on a compute unit (occupancy) and
// so how much latency can be hidden. The hint lets a compiler trade registers
// for occupancy. On PoCL's CPU device a work-group is a loop run by one thread
// (vectorised across work-items), so small groups cost per-group overhead
// rather than idle lanes, and the hint mainly lets the loop be specialised.

#ifdef WG
#define WG_HINT __attribute__((reqd_work_group_size(WG, 1, 1)))
#else
#define WG_HINT
#endif

#ifndef ITERS
#define ITERS 256
#endif

__kernel WG_HINT void wg_copy(int n, __global const float* restrict src, __global float* restrict dst) {
    int i = get_global_id(0);
    if (i < n) dst[i] = src[i];
}

// a <- a*0.999 + 0.001, ITERS times: a contraction towards 1 slow enough that
// the result still depends on the input, computed with correctly rounded fma.
__kernel WG_HINT void wg_fma(int n, __global const float* restrict src, __global float* restrict dst) {
    int i = get_global_id(0);
    if (i >= n) return;
    float a = src[i];
    // Fully unrolled so that PoCL can vectorise across work-items (see intensity.cl).
#pragma unroll
    for (int k = 0; k < ITERS; k++) a = fma(a, 0.999f, 0.001f);
    dst[i] = a;
}

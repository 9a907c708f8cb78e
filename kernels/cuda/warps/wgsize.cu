// Work-group (block) size sweep (suite "wgsize"; the OpenCL twin is
// opencl/warps/wgsize.cl).
//
// The guide's claim (PowerVR Rogue, OpenCL): work-items are scheduled in
// groups of 32, so work-group sizes should be multiples of 32, and kernels
// should declare their size (reqd_work_group_size) so that the compiler can
// plan registers for it. CUDA's counterpart of the hint is __launch_bounds__.
//
// What this measures: the same two kernels launched with blocks of 8 ... 1024
// threads, each compiled twice: with -DWG=<size>, which adds
// __launch_bounds__(WG), and without it.
//   wg_copy: dst[i] = src[i]; 8 bytes per element: memory bound.
//   wg_fma:  ITERS dependent FMAs per element (2*ITERS flops per 8 bytes):
//            compute bound, latency bound within a thread.
// Why: a warp is 32 threads; a block of 8 leaves 24 lanes of its warp idle.
// An SM also holds at most 32 blocks (sm_90), so small blocks cap the number of
// resident warps (occupancy) below what latency hiding needs: 32 blocks of 32
// threads are 32 warps of the 64 an SM can hold. From blocks of 64 on, 32
// blocks fill all 64 warp slots, so occupancy explains a gain from 32 to 64
// only; a gain beyond 64 has another cause, which this sweep does not name.
// __launch_bounds__ tells ptxas the largest block, so it may use more
// registers per thread when it is small.

#ifdef WG
#define WG_HINT __launch_bounds__(WG)
#else
#define WG_HINT
#endif

#ifndef ITERS
#define ITERS 256
#endif

extern "C" __global__ void WG_HINT wg_copy(int n, const float* __restrict__ src, float* __restrict__ dst) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] = src[i];
}

// a <- a*0.999 + 0.001, ITERS times, with correctly rounded fmaf.
extern "C" __global__ void WG_HINT wg_fma(int n, const float* __restrict__ src, float* __restrict__ dst) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float a = src[i];
#pragma unroll 16
    for (int k = 0; k < ITERS; k++) a = fmaf(a, 0.999f, 0.001f);
    dst[i] = a;
}

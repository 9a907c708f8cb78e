// Cost of a block barrier (suite "barrier"; the OpenCL twin is
// opencl/warps/barrier.cl).
//
// The guide's claim (OpenCL, PowerVR Rogue): a work-group barrier is cheap
// when the group is one warp of 32 and costs more as the group spans more
// warps that must all arrive before any may continue. CUDA's counterpart is
// __syncthreads() over shared memory.
//
// What this measures: `rounds` (a kernel argument) rounds of (write my value to shared memory,
// __syncthreads, read my neighbour's value, average), built with -DL=<block>.
//   bar_sync: the real exchange; one barrier per round (a double buffer, so no
//             second barrier before the next write).
//   bar_none: the same loads, stores and arithmetic, each thread reading its
//             own slot, which needs no barrier, so there is none.
// (time(bar_sync) - time(bar_none)) / barriers executed = cost per barrier.
// Shared memory is accessed through a volatile pointer so that the compiler
// keeps the store and load in bar_none too.
// Why: __syncthreads (BAR.SYNC) stalls every warp of the block until the last
// arrives; a block of 32 is a single warp and waits for no one, a block of 256
// waits for 8 warps. The stall is hidden only by other resident blocks
// (occupancy), so the cost per barrier seen here is a throughput cost.

#ifndef L
#define L 256
#endif

// rounds: number of exchange rounds; n must be a multiple of L.
extern "C" __global__ void bar_sync(int n, int rounds, const float* __restrict__ src, float* __restrict__ dst) {
    __shared__ float buf[2 * L];
    int l = threadIdx.x;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = src[i];
    for (int r = 0; r < rounds; r++) {
        volatile float* p = buf + (r & 1) * L;
        p[l] = v;
        __syncthreads();
        v = 0.5f * (v + p[(l + 1) & (L - 1)]);
    }
    dst[i] = v;
}

extern "C" __global__ void bar_none(int n, int rounds, const float* __restrict__ src, float* __restrict__ dst) {
    __shared__ float buf[2 * L];
    int l = threadIdx.x;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = src[i];
    for (int r = 0; r < rounds; r++) {
        volatile float* p = buf + (r & 1) * L;
        p[l] = v;
        v = 0.5f * (v + p[l]);
    }
    dst[i] = v;
}

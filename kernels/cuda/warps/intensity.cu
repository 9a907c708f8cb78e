// Arithmetic-intensity sweep (suite "intensity"; the OpenCL twin is
// opencl/warps/intensity.cl).
//
// The guide's claim: short kernels of low arithmetic intensity are limited by
// memory, not by the ALUs; give each thread enough arithmetic per byte loaded
// and the GPU becomes compute bound.
//
// What this measures: every element is read once and written once (8 bytes)
// and gets F dependent FMAs (2F flops; -DF=1 ... 512), so the intensity is
// F/4 flop per byte. On the roofline the points climb the bandwidth slope at
// constant time, then bend at the ridge point (about 67 TFLOP/s / 4.8 TB/s = 14
// flop/byte on an H200, i.e. F near 56) where time starts to grow with F.
// Why: a memory-bound kernel runs at DRAM speed whatever the ALUs do; FMAs are
// free until they outlast the loads. One dependent chain per thread (4-cycle
// FMA latency) is hidden only by having several warps per scheduler resident:
// occupancy, with warps of 32.

#ifndef F
#define F 1
#endif

// a <- a*0.999 + 0.001, F times, with correctly rounded fmaf.
extern "C" __global__ void intensity(int n, const float* __restrict__ src, float* __restrict__ dst) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float a = src[i];
#pragma unroll 16
    for (int k = 0; k < F; k++) a = fmaf(a, 0.999f, 0.001f);
    dst[i] = a;
}

// Arithmetic-intensity sweep (suite "intensity"; the CUDA twin is
// cuda/warps/intensity.cu).
//
// The guide's claim: short kernels of low arithmetic intensity are limited by
// memory, not by the ALUs; give each work-item enough arithmetic per byte
// loaded and the GPU becomes compute bound.
//
// What this measures: every element is read once and written once (8 bytes)
// and gets F dependent FMAs (2F flops; -DF=1 ... 512), so the intensity is
// 2F/8 = F/4 flop per byte. Plotted on the roofline, the points climb the
// bandwidth slope while time stays flat, then bend at the ridge point (peak
// GFLOP/s / peak GB/s) where time starts to grow with F.
// Why: a memory-bound kernel runs at the speed of DRAM whatever the ALUs do;
// extra FMAs are free until they take longer than the loads. One dependent
// chain per element means the device hides FMA latency only by running many
// warps at once. On PoCL's CPU device the same shape appears, with the ridge
// at the CPU's far lower flop/byte ratio and vector width, not warps of 32.

#ifndef F
#define F 1
#endif

// a <- a*0.999 + 0.001, F times, with correctly rounded fma.
__kernel void intensity(int n, __global const float* restrict src, __global float* restrict dst) {
    int i = get_global_id(0);
    if (i >= n) return;
    float a = src[i];
    // Fully unrolled: straight-line code lets PoCL vectorise across work-items
    // (its work-item loop becomes the innermost loop); a k loop would not.
#pragma unroll
    for (int k = 0; k < F; k++) a = fma(a, 0.999f, 0.001f);
    dst[i] = a;
}

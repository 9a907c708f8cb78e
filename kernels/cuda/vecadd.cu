// vec_add: c = a + b, one thread per element.
//
// Idea: the "hello world" of GPU kernels. Thread i of the grid handles element
// i, so the 32 threads of a warp read 32 neighbouring floats: the loads
// coalesce into four 32-byte sectors per array.
// Traffic: 12 bytes per element (read a and b, write c) for 1 flop, an
// arithmetic intensity of 1/12 FLOP/byte. No GPU can be compute-bound here:
// the ceiling is DRAM bandwidth.
// Cost: n must be guarded, since the grid is rounded up to whole blocks.
extern "C" __global__ void vec_add(long long n, const float* __restrict__ a,
                                   const float* __restrict__ b, float* __restrict__ c) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

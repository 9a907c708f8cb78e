// saxpy: out = alpha * x + y, one thread per element.
//
// Idea: BLAS level 1. Written out of place so that every repetition of a
// benchmark does the same work and the result can be checked.
// Traffic: 12 bytes per element for 2 flops (one FMA): 1/6 FLOP/byte, still
// far left of any GPU's ridge point, so it runs at the speed of vec_add.
extern "C" __global__ void saxpy(long long n, float alpha, const float* __restrict__ x,
                                 const float* __restrict__ y, float* __restrict__ out) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = fmaf(alpha, x[i], y[i]);
}

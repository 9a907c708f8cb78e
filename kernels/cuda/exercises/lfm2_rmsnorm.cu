// Exercise lfm2/rmsnorm, reference solution: RMSNorm of each row,
// y = x / sqrt(mean(x²) + eps) · w, a block of 256 threads per row.
//
// Idea: the threads of a row's block sum the squares of a strided share of
// it (neighbouring threads read neighbouring floats: coalesced), a tree in
// shared memory reduces the 256 partial sums in 8 halving steps, and every
// thread then scales its share by the one factor.
// Traffic: x read twice (the second time mostly from L2), w read once per
// row (from L2 after the first), y written once: a memory-bound kernel.
// Cost: 9 barriers per row. LFM2's own step 02 (kernels/cuda/lfm2) reduces
// with warp shuffles instead (two barriers) and keeps a row in registers
// when it fits, so that it reads x only once.

#define THREADS 256  // the check launches blocks of 256 threads

extern "C" __global__ void rmsnorm(const float* __restrict__ x, const float* __restrict__ w, int width,
                                   float eps, float* __restrict__ y) {
    __shared__ float partial[THREADS];
    const int row = blockIdx.x;
    const float* xr = x + (size_t)row * width;
    float ss = 0.f;
    for (int i = threadIdx.x; i < width; i += THREADS) ss = fmaf(xr[i], xr[i], ss);
    partial[threadIdx.x] = ss;
    __syncthreads();
    for (int stride = THREADS / 2; stride > 0; stride >>= 1) {
        if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
        __syncthreads();
    }
    const float r = 1.f / sqrtf(partial[0] / (float)width + eps);
    float* yr = y + (size_t)row * width;
    for (int i = threadIdx.x; i < width; i += THREADS) yr[i] = xr[i] * r * w[i];
}

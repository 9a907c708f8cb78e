// Exercise lfm2/rmsnorm, reference solution: RMSNorm of each row,
// y = x / sqrt(mean(x²) + eps) · w, a work-group of 256 work-items per row.
//
// Idea: the work-items of a row's group sum the squares of a strided share
// of it (neighbouring work-items read neighbouring floats: coalesced on a
// GPU), a tree in local memory reduces the 256 partial sums in 8 halving
// steps, and every work-item then scales its share by the one factor.
// Traffic: x read twice (the second time mostly from cache), w read once
// per row (from cache after the first), y written once: a memory-bound
// kernel.
// Cost: 9 barriers per row. LFM2's CUDA step 02 (notebook 06) reduces with
// warp shuffles instead (two barriers) and keeps a row in registers when it
// fits, so that it reads x only once.

#define THREADS 256  // the check launches work-groups of 256

__kernel __attribute__((reqd_work_group_size(THREADS, 1, 1)))
void rmsnorm(const __global float* restrict x, const __global float* restrict w, const int width,
             const float eps, __global float* restrict y)
{
    __local float partial[THREADS];
    const int row = get_group_id(0), lid = get_local_id(0);
    const __global float* xr = x + (size_t)row * width;
    float ss = 0.0f;
    for (int i = lid; i < width; i += THREADS) ss = fma(xr[i], xr[i], ss);
    partial[lid] = ss;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int stride = THREADS / 2; stride > 0; stride >>= 1) {
        if (lid < stride) partial[lid] += partial[lid + stride];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const float r = 1.0f / sqrt(partial[0] / (float)width + eps);
    __global float* yr = y + (size_t)row * width;
    for (int i = lid; i < width; i += THREADS) yr[i] = xr[i] * r * w[i];
}

// Shared pieces of the k-means kernels. X is N×D row-major float32; C (the
// centers) is K×D; every assignment kernel writes labels[i] (int) and
// dist[i], the squared distance of point i to its center.
#pragma once

#define FULL 0xffffffffu

// blockSum returns the sum of v over the block to thread 0 (blockDim.x a
// multiple of 32, at most 1024). Every thread must call it.
__device__ __forceinline__ float blockSum(float v) {
    __shared__ float warpSums[32];
    for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(FULL, v, o);
    if (threadIdx.x % 32 == 0) warpSums[threadIdx.x / 32] = v;
    __syncthreads();
    v = threadIdx.x < blockDim.x / 32 ? warpSums[threadIdx.x] : 0.f;
    if (threadIdx.x < 32)
        for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(FULL, v, o);
    __syncthreads();  // warpSums is reused by the next call
    return v;
}

// inertia_and_counts: inertia += sum of dist (double, one atomic per block;
// skipped when inertia is null: the update measures it), counts[k] = points
// labelled k (a shared-memory histogram per block).
extern "C" __global__ void inertia_and_counts(const float* __restrict__ dist, const int* __restrict__ labels, int n,
                                              int k, double* __restrict__ inertia, int* __restrict__ counts) {
    extern __shared__ int hist[];
    for (int c = threadIdx.x; c < k; c += blockDim.x) hist[c] = 0;
    __syncthreads();
    float s = 0.f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        s += dist[i];
        atomicAdd(&hist[labels[i]], 1);
    }
    s = blockSum(s);
    if (threadIdx.x == 0 && inertia) atomicAdd(inertia, (double)s);
    for (int c = threadIdx.x; c < k; c += blockDim.x)
        if (hist[c]) atomicAdd(&counts[c], hist[c]);
}

// center_norms: cn[c] = |c|², and +inf for the padding centers c >= k, so
// that the GEMM kernel never picks them.
extern "C" __global__ void center_norms(const float* __restrict__ centers, int k, int kPad, int d, float* __restrict__ cn) {
    int c = blockIdx.x;
    float s = 0.f;
    if (c < k)
        for (int j = threadIdx.x; j < d; j += blockDim.x) s += centers[c * d + j] * centers[c * d + j];
    s = blockSum(s);
    if (threadIdx.x == 0) cn[c] = c < k ? s : __int_as_float(0x7f800000);
}

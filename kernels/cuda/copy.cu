// Copy kernels: how close can a kernel get to the copy engine's bandwidth?
//
// Traffic: every variant reads n*4 bytes and writes n*4 bytes; the benchmark
// counts both, as cudaMemcpy bandwidth figures do.
//
// copy_f32:  one float per thread. Simple and coalesced, but each thread
//            issues one 4-byte load, so many warps are needed to keep enough
//            bytes in flight to cover DRAM latency.
// copy_f4:   one float4 per thread: 16-byte loads (LDG.128) put four times the
//            bytes in flight per instruction, with a quarter of the threads.
// copy_f4_grid_stride: a grid sized to fill the GPU once (SMs x resident
//            blocks), each thread looping over the array. Fewer blocks to
//            schedule; each thread keeps two float4 loads in flight.
// All need 16-byte aligned pointers (cuMemAlloc gives 256) for the float4
// casts; the n % 4 trailing floats are copied one by one.

extern "C" __global__ void copy_f32(long long n, const float* __restrict__ src, float* __restrict__ dst) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] = src[i];
}

// copy_tail copies the last n % 4 floats, using the first threads of the grid.
__device__ __forceinline__ void copy_tail(long long n, long long gid, const float* src, float* dst) {
    long long t = (n / 4) * 4 + gid;
    if (t < n) dst[t] = src[t];
}

extern "C" __global__ void copy_f4(long long n, const float* __restrict__ src, float* __restrict__ dst) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n / 4) reinterpret_cast<float4*>(dst)[i] = reinterpret_cast<const float4*>(src)[i];
    copy_tail(n, i, src, dst);
}

extern "C" __global__ void copy_f4_grid_stride(long long n, const float* __restrict__ src, float* __restrict__ dst) {
    const float4* s = reinterpret_cast<const float4*>(src);
    float4* d = reinterpret_cast<float4*>(dst);
    long long n4 = n / 4;
    long long gid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long stride = (long long)gridDim.x * blockDim.x;
    long long i = gid;
    for (; i + stride < n4; i += 2 * stride) { // two independent loads in flight
        float4 a = s[i], b = s[i + stride];
        d[i] = a;
        d[i + stride] = b;
    }
    if (i < n4) d[i] = s[i];
    copy_tail(n, gid, src, dst);
}

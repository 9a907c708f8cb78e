// Step 00 — weights onto the device, converted there.
//
// Idea: the checkpoint is memory-mapped on the host; each tensor's raw bytes
// (F32, BF16 or F16) go to a staging buffer on the GPU as they are, and a
// kernel converts them into the engine's type at their place in the fused
// layouts (q|k|v, w1|w3, all experts in one array). The host never holds a
// converted copy of a 16 GB model. For the speed benchmark without the real
// checkpoint, fill_normal makes seeded N(mean, std²) weights in place from a
// counter-based hash: no host copy at all. Each value is rounded to bf16, as
// a real checkpoint stores it, so the fp32 and bf16 engines hold the same
// weights and differ only in their arithmetic (compare them like for like).
// Traffic: one read of the source bytes, one write of the result.
// Cost: a staging buffer as large as the largest tensor.
#include "lfm2/common.cuh"

// Source dtypes, numbered as the Go side passes them.
#define SRC_F32 0
#define SRC_BF16 1
#define SRC_F16 2

// half_to_float widens IEEE half bits: 1 sign, 5 exponent (bias 15), 10
// mantissa bits.
__device__ __forceinline__ float half_to_float(unsigned short h) {
    unsigned sign = (unsigned)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
    if (exp == 0)  // zero or subnormal: mant × 2^-24
        return __uint_as_float(__float_as_uint((float)mant * 5.9604644775390625e-8f) | sign);
    if (exp == 0x1f) return __uint_as_float(sign | 0x7f800000u | (mant << 13));  // inf, nan
    return __uint_as_float(sign | ((exp + 112u) << 23) | (mant << 13));
}

__device__ __forceinline__ float load_src(const void* src, int dtype, long long i) {
    if (dtype == SRC_F32) return static_cast<const float*>(src)[i];
    unsigned short bits = static_cast<const unsigned short*>(src)[i];
    return dtype == SRC_BF16 ? __uint_as_float((unsigned)bits << 16) : half_to_float(bits);
}

template <typename T>
__device__ void convert(const void* __restrict__ src, int dtype, long long n, T* __restrict__ dst) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
        put(dst + i, load_src(src, dtype, i));
}

// convert_elem writes n values into the engine's element type (weights of GEMMs).
extern "C" __global__ void convert_elem(const void* src, int dtype, long long n, elem* dst) { convert(src, dtype, n, dst); }

// convert_f32 writes n values as fp32 (norm weights, conv kernels, router).
extern "C" __global__ void convert_f32(const void* src, int dtype, long long n, float* dst) { convert(src, dtype, n, dst); }

// mix64 is splitmix64's finalizer: consecutive inputs give unrelated outputs.
__device__ __forceinline__ unsigned long long mix64(unsigned long long z) {
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

// normal_at is the i-th value of tensor number `tensor`: a standard normal by
// Box–Muller from the hash of (seed, tensor, i), so any element can be made
// by any thread in any order.
__device__ __forceinline__ float normal_at(unsigned long long seed, unsigned long long tensor, long long i) {
    unsigned long long h = mix64(seed ^ mix64(tensor ^ mix64((unsigned long long)i)));
    float u1 = (float)((h >> 40) + 1) * (1.f / 16777216.f);  // (0, 1]
    float u2 = (float)((h >> 16) & 0xffffffull) * (1.f / 16777216.f);
    return sqrtf(-2.f * logf(u1)) * cospif(2.f * u2);
}

template <typename T>
__device__ void fill(unsigned long long seed, unsigned long long tensor, long long n, float mean, float std, T* __restrict__ dst) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
        put(dst + i, __bfloat162float(__float2bfloat16_rn(mean + std * normal_at(seed, tensor, i))));
}

extern "C" __global__ void fill_normal_elem(unsigned long long seed, unsigned long long tensor, long long n, float mean, float std, elem* dst) {
    fill(seed, tensor, n, mean, std, dst);
}

extern "C" __global__ void fill_normal_f32(unsigned long long seed, unsigned long long tensor, long long n, float mean, float std, float* dst) {
    fill(seed, tensor, n, mean, std, dst);
}

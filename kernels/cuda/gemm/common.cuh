// Helpers shared by the GEMM ladder's later steps (06 onwards).
//
// Matrices are row-major: A is M×K, B is K×N, C is M×N. Tiles that stick out of
// a matrix read zeros and skip their stores, so every step handles any M, N, K.
//
// VEC is 1 when K % 4 == 0 and N % 4 == 0: every row of A, B and C then starts
// on a 16-byte boundary, so float4 loads and stores are legal. The Go side sets
// it per shape; with VEC 0 the same kernels move one float at a time.
#pragma once
#ifndef VEC
#define VEC 0
#endif

// load4 reads columns c..c+3 of row r of a rows×cols matrix, zeros outside.
__device__ __forceinline__ float4 load4(const float* __restrict__ m, int rows, int cols, int r, int c) {
    const float* p = m + (size_t)r * cols + c;
#if VEC
    if (r < rows && c < cols) return *reinterpret_cast<const float4*>(p);
    return make_float4(0.f, 0.f, 0.f, 0.f);
#else
    bool in = r < rows;
    return make_float4(in && c < cols ? p[0] : 0.f, in && c + 1 < cols ? p[1] : 0.f,
                       in && c + 2 < cols ? p[2] : 0.f, in && c + 3 < cols ? p[3] : 0.f);
#endif
}

// store4 writes v to columns c..c+3 of row r, skipping what lies outside.
__device__ __forceinline__ void store4(float* __restrict__ m, int rows, int cols, int r, int c, float4 v) {
    if (r >= rows) return;
    float* p = m + (size_t)r * cols + c;
#if VEC
    if (c < cols) *reinterpret_cast<float4*>(p) = v;
#else
    if (c < cols) p[0] = v.x;
    if (c + 1 < cols) p[1] = v.y;
    if (c + 2 < cols) p[2] = v.z;
    if (c + 3 < cols) p[3] = v.w;
#endif
}

// Asynchronous copies global -> shared (cp.async, sm_80+): the copy bypasses
// registers and runs while the warp computes. A copy of an element outside the
// matrix copies 0 bytes and fills zeros ("src-size" 0); its address is clamped
// to the matrix start so that it stays valid.
__device__ __forceinline__ unsigned smem_addr(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// cp_async4 copies columns c..c+3 of row r into dst (16 bytes, 16-byte aligned).
__device__ __forceinline__ void cp_async4(float* dst, const float* __restrict__ m, int rows, int cols, int r, int c) {
#if __CUDA_ARCH__ >= 800
#if VEC
    bool in = r < rows && c < cols;
    const float* src = in ? m + (size_t)r * cols + c : m;
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src), "r"(in ? 16 : 0));
#else
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        bool in = r < rows && c + i < cols;
        const float* src = in ? m + (size_t)r * cols + c + i : m;
        asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(smem_addr(dst + i)), "l"(src), "r"(in ? 4 : 0));
    }
#endif
#else
    *reinterpret_cast<float4*>(dst) = load4(m, rows, cols, r, c);
#endif
}

__device__ __forceinline__ void cp_async_commit() {
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;\n" ::);
#endif
}

// cp_async_wait_all waits for every copy this thread issued.
__device__ __forceinline__ void cp_async_wait_all() {
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_group 0;\n" ::);
#endif
}

// cp_async_wait<N> waits until at most N of this thread's committed groups
// are still in flight: with a pipeline of S stages, N = S - 2 means "the
// oldest stage has landed".
template <int N>
__device__ __forceinline__ void cp_async_wait() {
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
#endif
}

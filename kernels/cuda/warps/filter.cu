// filter.cu: image filtering through texture objects versus plain loads.
//
// Claim (seed opencl-powervr-rogue-guide.txt, image-filtering case study):
// read images through the texture hardware (OpenCL image + sampler; in CUDA a
// texture object) "to benefit from TPU acceleration": texture fetches go
// through a cache organised for 2D locality, and the border handling is done
// by the addressing hardware instead of conditional code in the kernel.
//
// Measured: a 5x5 Gaussian blur (weights [1 4 6 4 1]/16 in each direction)
// and the Sobel gradient magnitude sqrt(gx^2 + gy^2), one thread per output
// pixel, written to a plain buffer. Both variants read the same pitched
// linear buffer (rows padded to CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT):
// *_texture through a cudaTextureObject_t (CU_RESOURCE_TYPE_PITCH2D,
// CU_TR_ADDRESS_MODE_CLAMP, point filtering, unnormalized coordinates) with
// tex2D<float>(tex, x + 0.5f, y + 0.5f), the clamp done by the texture unit;
// *_plain with ordinary loads (no __restrict__/__ldg, so not forced through
// the read-only path) and min/max clamping of each coordinate in the kernel.
// Both give the same clamp-to-edge result, checked against Go.
//
// Why: on Maxwell and later (Hopper included) L1 and the texture cache are one
// unified unit, so plain loads of a 2D neighbourhood already hit in L1, and the
// expected difference is small: the texture path saves the clamp arithmetic
// but adds texture-unit latency. The guide's advice comes from a GPU (Rogue)
// whose TPU is a separate, faster path for images.

__device__ __forceinline__ float gwt(int i) {
    return i == 0 || i == 4 ? 0.0625f : (i == 2 ? 0.375f : 0.25f);
}

#define TEX(xx, yy) tex2D<float>(in, (xx) + 0.5f, (yy) + 0.5f)
#define PLAIN(xx, yy) in[min(max((yy), 0), h - 1) * pitch + min(max((xx), 0), w - 1)]

extern "C" __global__ void blur_texture(cudaTextureObject_t in, float* out, int w, int h) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= w || y >= h) return;
    float acc = 0.0f;
#pragma unroll
    for (int j = 0; j < 5; j++) {
        float row = 0.0f;
#pragma unroll
        for (int i = 0; i < 5; i++) row += gwt(i) * TEX(x + i - 2, y + j - 2);
        acc += gwt(j) * row;
    }
    out[y * w + x] = acc;
}

extern "C" __global__ void blur_plain(const float* in, float* out, int w, int h, int pitch) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= w || y >= h) return;
    float acc = 0.0f;
#pragma unroll
    for (int j = 0; j < 5; j++) {
        float row = 0.0f;
#pragma unroll
        for (int i = 0; i < 5; i++) row += gwt(i) * PLAIN(x + i - 2, y + j - 2);
        acc += gwt(j) * row;
    }
    out[y * w + x] = acc;
}

#define SOBEL(P)                                                             \
    float gx = (P(x + 1, y - 1) + 2.0f * P(x + 1, y) + P(x + 1, y + 1)) - \
               (P(x - 1, y - 1) + 2.0f * P(x - 1, y) + P(x - 1, y + 1));   \
    float gy = (P(x - 1, y + 1) + 2.0f * P(x, y + 1) + P(x + 1, y + 1)) - \
               (P(x - 1, y - 1) + 2.0f * P(x, y - 1) + P(x + 1, y - 1));   \
    out[y * w + x] = sqrtf(gx * gx + gy * gy);

extern "C" __global__ void sobel_texture(cudaTextureObject_t in, float* out, int w, int h) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= w || y >= h) return;
    SOBEL(TEX)
}

extern "C" __global__ void sobel_plain(const float* in, float* out, int w, int h, int pitch) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= w || y >= h) return;
    SOBEL(PLAIN)
}

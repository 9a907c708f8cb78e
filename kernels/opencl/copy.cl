// Copy kernels (see cuda/copy.cu for the reasoning).
// copy_f32: one float per work-item. copy_f4: one float4 per work-item, with the
// n % 4 trailing floats copied by the first work-items.
__kernel void copy_f32(int n, __global const float* restrict src, __global float* restrict dst) {
    int i = get_global_id(0);
    if (i < n) dst[i] = src[i];
}

__kernel void copy_f4(int n, __global const float4* restrict src, __global float4* restrict dst) {
    int i = get_global_id(0);
    if (i < n / 4) dst[i] = src[i];
    int t = (n / 4) * 4 + i;
    if (t < n) ((__global float*)dst)[t] = ((__global const float*)src)[t];
}

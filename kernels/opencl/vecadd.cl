// vec_add: c = a + b, one work-item per element.
// Traffic: 12 bytes per element for 1 flop: memory-bound on every device.
__kernel void vec_add(int n, __global const float* restrict a, __global const float* restrict b,
                      __global float* restrict c) {
    int i = get_global_id(0);
    if (i < n) c[i] = a[i] + b[i];
}

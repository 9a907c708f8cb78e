// Step 10 — the LM head and greedy decoding on the device.
//
// Idea: the LM head is one GEMM (cuBLAS: logits = x̂·Eᵀ with the tied
// embedding table E, [vocab, hidden]) over the rows whose logits are wanted,
// all positions or only each sequence's last. Greedy decoding then needs
// only the argmax of each row, which this kernel computes on the GPU, so a
// decode step sends back one int per sequence instead of 65536 floats, and
// feeds the next step's embedding without the host in between.
// Traffic: one read of each logits row.
// Cost: a block per row; ties go to the lower index, as in the reference. A
// row holding a NaN or an infinity has no answer: its id is -1, which the
// embedding turns into a NaN row on the device and the host reports.
#include "lfm2/common.cuh"

// better reports whether (v, i) beats (bv, bi): larger, or as large and earlier.
__device__ __forceinline__ bool better(float v, int i, float bv, int bi) { return v > bv || (v == bv && i < bi); }

extern "C" __global__ void argmax_rows(const float* __restrict__ logits, int V, int* __restrict__ out) {
    __shared__ float sv[32];
    __shared__ int si[32];
    __shared__ bool sbad[32];
    const float* row = logits + (size_t)blockIdx.x * V;
    float bv = __uint_as_float(0xff800000u);  // -inf
    int bi = V;
    bool bad = false;
    for (int i = threadIdx.x; i < V; i += blockDim.x) {
        bad |= !isfinite(row[i]);
        if (better(row[i], i, bv, bi)) bv = row[i], bi = i;
    }
    bad = __any_sync(0xffffffffu, bad);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        float ov = __shfl_xor_sync(0xffffffffu, bv, o);
        int oi = __shfl_xor_sync(0xffffffffu, bi, o);
        if (better(ov, oi, bv, bi)) bv = ov, bi = oi;
    }
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) sv[warp] = bv, si[warp] = bi, sbad[warp] = bad;
    __syncthreads();
    if (warp != 0) return;
    int warps = blockDim.x >> 5;
    bv = lane < warps ? sv[lane] : __uint_as_float(0xff800000u);
    bi = lane < warps ? si[lane] : V;
    bad = __any_sync(0xffffffffu, lane < warps && sbad[lane]);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        float ov = __shfl_xor_sync(0xffffffffu, bv, o);
        int oi = __shfl_xor_sync(0xffffffffu, bi, o);
        if (better(ov, oi, bv, bi)) bv = ov, bi = oi;
    }
    if (lane == 0) out[blockIdx.x] = bad ? -1 : bi;
}

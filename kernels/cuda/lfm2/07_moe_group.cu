// Step 07 — grouping the (token, expert) pairs by expert, and combining the
// experts' outputs back: what lets each expert run as one dense GEMM.
//
// Idea: after the router, expert e has counts[e] of the T·k pairs. A scan of
// the counts gives each expert a contiguous range of rows; each pair takes
// the next row of its expert's range with an atomic cursor, and (for the
// cuBLAS path) copies its token's input row there. Now expert e's inputs are
// one dense [counts[e], H] matrix: one GEMM per expert for w1|w3, one SwiGLU
// pass over all rows (step 09), one GEMM per expert for w2 (cuBLAS, bf16
// tensor cores: the grouped path). moe_combine then sums each token's k
// outputs, weighted, into the residual stream, in slot order like the
// reference, so the result does not depend on the order the atomics gave.
// The scan also gives the persistent kernel (step 08) its units: the token
// tiles of each expert, counted by tile_off.
// Traffic: the gather writes T·k·H elements once; the combine reads T·k·H
// floats once. A per-token loop over experts would instead read each chosen
// expert's weights once per token.
// Cost: the host must know the counts to size the GEMMs: one small device to
// host copy and wait per MoE layer. The persistent kernel avoids it.
#include "lfm2/common.cuh"

// meta, int32: counts[E] | offsets[E+1] | cursor[E] | tile_off[E+1]
#define COUNTS(m, E) (m)
#define OFFSETS(m, E) ((m) + (E))
#define CURSOR(m, E) ((m) + 2 * (E) + 1)
#define TILE_OFF(m, E) ((m) + 3 * (E) + 1)

// moe_offsets scans the counts with one warp: lanes take 32 experts at a
// time, and shuffle scans give each its offsets among the rows and the
// tiles. It adds the counts to the layer's expert-load histogram and zeroes
// them for the next router. A single thread walking the experts would wait
// on each expert's count in turn.
extern "C" __global__ void moe_offsets(int E, int tile, int* meta, int* load) {
    if (blockIdx.x != 0 || threadIdx.x >= 32) return;
    int *counts = COUNTS(meta, E), *offsets = OFFSETS(meta, E), *cursor = CURSOR(meta, E), *tile_off = TILE_OFF(meta, E);
    int lane = threadIdx.x, rows = 0, tiles = 0;  // totals of the experts before this group of 32
    for (int base = 0; base < E; base += 32) {
        int e = base + lane;
        int n = e < E ? counts[e] : 0, nt = (n + tile - 1) / tile;
        int sn = n, st = nt;  // inclusive scans over the group
#pragma unroll
        for (int d = 1; d < 32; d <<= 1) {
            int a = __shfl_up_sync(0xffffffffu, sn, d), b = __shfl_up_sync(0xffffffffu, st, d);
            if (lane >= d) sn += a, st += b;
        }
        if (e < E) {
            offsets[e] = cursor[e] = rows + sn - n;
            tile_off[e] = tiles + st - nt;
            load[e] += n;
            counts[e] = 0;
        }
        rows += __shfl_sync(0xffffffffu, sn, 31);
        tiles += __shfl_sync(0xffffffffu, st, 31);
    }
    if (lane == 0) offsets[E] = rows, tile_off[E] = tiles;
}

// moe_scatter: one block per pair p = t·K + k. perm[row] is the token of each
// expert-ordered row, slot_row[p] the row of each pair. With gather, the
// token's input row is copied to xg[row].
extern "C" __global__ void moe_scatter(const elem* __restrict__ xn, int H, int K, const int* __restrict__ top_idx, int* meta, int E,
                                       int* __restrict__ perm, int* __restrict__ slot_row, int gather, elem* __restrict__ xg) {
    __shared__ int row;
    int p = blockIdx.x, t = p / K;
    if (threadIdx.x == 0) {
        row = atomicAdd(&CURSOR(meta, E)[top_idx[p]], 1);
        perm[row] = t;
        slot_row[p] = row;
    }
    if (!gather) return;
    __syncthreads();
    const elem* src = xn + (size_t)t * H;
    elem* dst = xg + (size_t)row * H;
    for (int i = threadIdx.x; i < H; i += blockDim.x) dst[i] = src[i];
}

// moe_combine: x[t] += Σ_k w[t,k] · y[slot_row[t,k]], one block per token.
extern "C" __global__ void moe_combine(const float* __restrict__ y, int H, int K, const int* __restrict__ slot_row,
                                       const float* __restrict__ top_w, float* __restrict__ x) {
    int t = blockIdx.x;
    for (int i = threadIdx.x; i < H; i += blockDim.x) {
        float acc = 0.f;
        for (int k = 0; k < K; ++k) acc += top_w[t * K + k] * y[(size_t)slot_row[t * K + k] * H + i];
        x[(size_t)t * H + i] += acc;
    }
}

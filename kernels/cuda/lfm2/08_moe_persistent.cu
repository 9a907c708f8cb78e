// Step 08 — the persistent MoE kernel with an atomic task queue.
//
// Idea: the grouped path (step 07 + cuBLAS) needs the per-expert counts on
// the host to size its GEMMs, and launches two GEMMs per expert: at decode,
// with 1 to 64 tokens, that is a host round trip and ~64 tiny launches per
// layer, each leaving most SMs idle. Here the work is cut into tasks
// (expert, tile of TILE rows of that expert, chunk of CHUNK output rows), and
// one grid of just as many blocks as fit on the GPU at once loops: take the
// next task number from an atomic counter, do it, repeat. The number of
// tasks is read on the device (tile_off, from step 07's scan), so the host
// never waits, and every SM stays busy until the queue is empty, however
// unevenly the router spread the tokens.
// moe_gate_up: act[row, i] = silu(w1_e[i]·x) · (w3_e[i]·x) for the rows of a
// tile (fused W1/W3: both rows are read in the same task); moe_down:
// y[row, j] = w2_e[j]·act[row]. A task stages its tile's inputs in shared
// memory as fp32; each warp takes CHUNK/WARPS output rows, its lanes read a
// weight row with 16-byte loads and apply each element to all TILE tokens.
// Traffic: each weight row is read once per token tile, so at decode (one
// tile per expert) every chosen expert's weights are read exactly once: the
// memory-bound optimum.
// Cost: CUDA-core FMAs, not tensor cores: for prefill, where an expert sees
// thousands of tokens, the grouped cuBLAS path is far faster. The engine
// picks this kernel when the pairs are few (see CUDAOptions.MoE).
#include "lfm2/common.cuh"

#define TILE MOE_TILE  // token rows per task (from the Go side): each weight element serves TILE tokens
#define WARPS 8
#define ROWS_PER_WARP 2
#define CHUNK (WARPS * ROWS_PER_WARP)  // output rows per task

#define OFFSETS(m, E) ((m) + (E))
#define TILE_OFF(m, E) ((m) + 3 * (E) + 1)
#define QUEUE(m, E) ((m) + 4 * (E) + 2)

// Task is one unit of work: rows [row0, row0 + nrows) of expert e's range,
// output rows [chunk·CHUNK, chunk·CHUNK + CHUNK).
struct Task {
    int e, row0, nrows, chunk;
};

// next_task takes a task number from queue and decodes it; false when the
// queue is empty. Every thread of the block gets the same answer.
__device__ bool next_task(int* queue, const int* meta, int E, int chunks, int* slot, Task& tk) {
    __syncthreads();  // everyone is done with the previous task's shared data
    if (threadIdx.x == 0) *slot = atomicAdd(queue, 1);
    __syncthreads();
    int id = *slot;
    const int *offsets = OFFSETS(meta, E), *tile_off = TILE_OFF(meta, E);
    if (id >= tile_off[E] * chunks) return false;
    int tile = id / chunks, e = 0;
    while (tile_off[e + 1] <= tile) ++e;  // experts without tokens have no tiles
    tk.e = e;
    tk.chunk = id - tile * chunks;
    tk.row0 = offsets[e] + (tile - tile_off[e]) * TILE;
    tk.nrows = min(TILE, offsets[e + 1] - tk.row0);
    return true;
}

// load_tile widens the task's nrows input rows (of length K) into xs; rowmap,
// when not null, maps an expert-ordered row to the source row (its token).
__device__ void load_tile(float* xs, const elem* __restrict__ src, const int* __restrict__ rowmap, const Task& tk, int K) {
    for (int idx = threadIdx.x; idx < tk.nrows * K; idx += blockDim.x) {
        int r = idx / K, k = idx - r * K, row = tk.row0 + r;
        xs[idx] = to_float(src[(size_t)(rowmap ? rowmap[row] : row) * K + k]);
    }
}

// dot_tile adds this lane's share of w·xs[r] to acc[r] for the tile's rows:
// 16-byte weight loads when K allows, one element at a time otherwise.
__device__ __forceinline__ void dot_tile(const elem* __restrict__ w, const float* xs, int K, int nrows, int lane, float acc[TILE]) {
    constexpr int V = 16 / sizeof(elem);
    if (K % V == 0) {
        for (int k = lane * V; k < K; k += 32 * V) {
            float wv[V];
            load16(w + k, wv);
#pragma unroll
            for (int r = 0; r < TILE; ++r) {
                if (r >= nrows) break;
                const float4* x4 = reinterpret_cast<const float4*>(xs + r * K + k);
#pragma unroll
                for (int q = 0; q < V / 4; ++q) {
                    float4 xv = x4[q];
                    acc[r] += wv[4 * q] * xv.x + wv[4 * q + 1] * xv.y + wv[4 * q + 2] * xv.z + wv[4 * q + 3] * xv.w;
                }
            }
        }
        return;
    }
    for (int k = lane; k < K; k += 32) {
        float wk = to_float(w[k]);
#pragma unroll
        for (int r = 0; r < TILE; ++r)
            if (r < nrows) acc[r] += wk * xs[r * K + k];
    }
}

// w13: [E][2·IM][H] (w1 rows, then w3 rows); act: [pairs, IM].
extern "C" __global__ void __launch_bounds__(WARPS * 32)
moe_gate_up(const elem* __restrict__ xn, int H, int IM, const elem* __restrict__ w13, const int* __restrict__ perm, int* meta, int E,
            elem* __restrict__ act) {
    extern __shared__ __align__(16) float xs[];  // TILE × H
    __shared__ int slot;
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, chunks = (IM + CHUNK - 1) / CHUNK;
    Task tk;
    while (next_task(&QUEUE(meta, E)[0], meta, E, chunks, &slot, tk)) {
        load_tile(xs, xn, perm, tk, H);
        __syncthreads();
        for (int rr = 0; rr < ROWS_PER_WARP; ++rr) {
            int i = tk.chunk * CHUNK + warp * ROWS_PER_WARP + rr;
            if (i >= IM) break;
            float g[TILE] = {}, u[TILE] = {};
            const elem* w1 = w13 + ((size_t)tk.e * 2 * IM + i) * H;
            dot_tile(w1, xs, H, tk.nrows, lane, g);
            dot_tile(w1 + (size_t)IM * H, xs, H, tk.nrows, lane, u);
#pragma unroll
            for (int r = 0; r < TILE; ++r) {
                float gs = warp_sum(g[r]), us = warp_sum(u[r]);
                if (lane == r && r < tk.nrows) put(act + (size_t)(tk.row0 + r) * IM + i, silu_mul(gs, us));
            }
        }
    }
}

// w2: [E][H][IM]; y: [pairs, H].
extern "C" __global__ void __launch_bounds__(WARPS * 32)
moe_down(const elem* __restrict__ act, int H, int IM, const elem* __restrict__ w2, int* meta, int E, float* __restrict__ y) {
    extern __shared__ __align__(16) float xs[];  // TILE × IM
    __shared__ int slot;
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, chunks = (H + CHUNK - 1) / CHUNK;
    Task tk;
    while (next_task(&QUEUE(meta, E)[1], meta, E, chunks, &slot, tk)) {
        load_tile(xs, act, nullptr, tk, IM);
        __syncthreads();
        for (int rr = 0; rr < ROWS_PER_WARP; ++rr) {
            int j = tk.chunk * CHUNK + warp * ROWS_PER_WARP + rr;
            if (j >= H) break;
            float acc[TILE] = {};
            dot_tile(w2 + ((size_t)tk.e * H + j) * IM, xs, IM, tk.nrows, lane, acc);
#pragma unroll
            for (int r = 0; r < TILE; ++r) {
                float s = warp_sum(acc[r]);
                if (lane == r && r < tk.nrows) y[(size_t)(tk.row0 + r) * H + j] = s;
            }
        }
    }
}

// Step 08 — the persistent MoE kernel: a grid of warps that streams the
// chosen experts' weights.
//
// Idea: the grouped path (step 07 + cuBLAS) needs the per-expert counts on
// the host to size its GEMMs, and launches two GEMMs per expert: at decode,
// with 1 to 64 tokens, that is a host round trip and ~64 tiny launches per
// layer, each leaving most SMs idle. At decode an expert sees a few tokens,
// so its products are GEMVs, bound by how fast its weights stream from
// memory. Here the work is cut into units: (expert tile of up to TILE token
// rows, one output row i) for moe_gate_up, which reads row i of w1 and of w3
// and writes silu(w1_i·x)·(w3_i·x); (tile, DOWN_ROWS output rows) for
// moe_down. One grid of just as many blocks as fit on the GPU at once takes
// them in turn: warp g of the grid does units g, g + warps, g + 2·warps, ...
// The number of units comes from the tile offsets of step 07's scan, read
// on the device, so the host never waits. The static turn spends nothing on
// scheduling (no atomic, no shared counter); it balances the warps only as
// far as their units take equal times. Where they do not (a tile with fewer
// rows, a warp whose loads miss L2 while others hit, an SM shared with other
// work), warps that finish early idle at the end, which a queue that hands
// out units as warps free up (step 14) evens out for an atomic per unit.
// Which costs more depends on the GPU and the load: the moe-schedule
// experiment measures both. A unit is one warp's work: its
// lanes stream the unit's weight rows with 16-byte loads, several steps in
// flight (rows_dot in common.cuh), apply each weight to all the tile's
// token rows (read through L1: the warps of a block share them), and finish
// with warp shuffles. No shared memory, no barrier, no atomic.
// Traffic: each weight row is read once per token tile, so at decode (one
// tile per expert) every chosen expert's weights are read exactly once: the
// memory-bound optimum. At batch 1 there are 4·IM gate/up units and
// 4·H/DOWN_ROWS down units, enough warps for every SM to stream.
// Cost: CUDA-core FMAs, not tensor cores, and weights re-read once per
// TILE-token tile: for prefill, where an expert sees thousands of tokens,
// the grouped cuBLAS path is far faster. The engine picks this kernel when
// the pairs are few (see CUDAOptions.MoE).
// History: the first version gave each block a task from an atomic queue,
// staged the tile in shared memory behind two barriers, and walked each
// weight row one 16-byte load at a time, every load waiting for the one
// before; at batch 1 it was latency-bound (docs/lfm2.md gives the profile).
#include "lfm2/common.cuh"

#define TILE MOE_TILE  // token rows per unit (from the Go side): each weight element serves TILE tokens
#define WARPS 8
#define DOWN_ROWS 2  // w2 rows per down unit
// Two blocks per SM at least: see GEMV_MIN_BLOCKS in 11_gemv.cu for why a
// launch bound keeps the loads of several steps in flight.
#define MIN_BLOCKS 2

#define OFFSETS(m, E) ((m) + (E))
#define TILE_OFF(m, E) ((m) + 3 * (E) + 1)

static_assert(DOWN_ROWS * TILE <= 32, "each lane writes at most one output of a unit");

// Tile is rows [row0, row0 + nrows) of expert e's range of grouped rows.
struct Tile {
    int e, row0, nrows;
};

// tile_at locates tile number `tile`: its expert is the number of experts
// whose tiles all come before it (tile_off only grows), counted 32 at a
// time with a ballot. Every lane of the warp gets the same answer.
__device__ __forceinline__ Tile tile_at(const int* __restrict__ meta, int E, int tile, int lane) {
    const int *offsets = OFFSETS(meta, E), *tile_off = TILE_OFF(meta, E);
    int e = 0;
    for (int base = 0; base < E; base += 32) {
        int x = base + lane;
        e += __popc(__ballot_sync(0xffffffffu, x < E && tile_off[x + 1] <= tile));
    }
    Tile t;
    t.e = e;
    t.row0 = offsets[e] + (tile - tile_off[e]) * TILE;
    t.nrows = min(TILE, offsets[e + 1] - t.row0);
    return t;
}

// gate_up_unit: output row i of expert w13e ([2·IM][H]: w1 rows, then w3
// rows) for grouped rows [row0, row0 + nrows), nrows 1..TILE, whose tokens
// are perm[row]; writes act[row][i] = silu(w1_i·x)·(w3_i·x). One warp, all
// lanes together.
__device__ __forceinline__ void gate_up_unit(const elem* __restrict__ xn, int H, int IM, const elem* __restrict__ w13e,
                                             const int* __restrict__ perm, int row0, int nrows, int i, int lane,
                                             elem* __restrict__ act) {
    const elem* x[TILE];
#pragma unroll
    for (int r = 0; r < TILE; ++r) x[r] = xn + (size_t)perm[row0 + min(r, nrows - 1)] * H;
    const elem* w1 = w13e + (size_t)i * H;
    const elem* w[2] = {w1, w1 + (size_t)IM * H};
    float acc[2][TILE] = {};
    rows_dot<2, TILE>(w, x, nrows, H, lane, acc);
#pragma unroll
    for (int r = 0; r < TILE; ++r) {
        if (r >= nrows) break;
        float g = warp_sum(acc[0][r]), up = warp_sum(acc[1][r]);
        if (lane == r) put(act + (size_t)(row0 + r) * IM + i, silu_mul(g, up));
    }
}

// down_unit: output rows [j0, j0 + DOWN_ROWS) (those below H) of expert w2e
// ([H][IM]) for grouped rows [row0, row0 + nrows): y[row][j] = w2_j·act[row].
__device__ __forceinline__ void down_unit(const elem* __restrict__ act, int H, int IM, const elem* __restrict__ w2e, int row0,
                                          int nrows, int j0, int lane, float* __restrict__ y) {
    const elem* x[TILE];
#pragma unroll
    for (int r = 0; r < TILE; ++r) x[r] = act + (size_t)(row0 + min(r, nrows - 1)) * IM;
    const elem* w[DOWN_ROWS];
#pragma unroll
    for (int o = 0; o < DOWN_ROWS; ++o) w[o] = w2e + (size_t)min(j0 + o, H - 1) * IM;  // past H: read, not written
    float acc[DOWN_ROWS][TILE] = {};
    rows_dot<DOWN_ROWS, TILE>(w, x, nrows, IM, lane, acc);
#pragma unroll
    for (int r = 0; r < TILE; ++r) {
        if (r >= nrows) break;
#pragma unroll
        for (int o = 0; o < DOWN_ROWS; ++o) {
            float s = warp_sum(acc[o][r]);
            if (lane == o * TILE + r && j0 + o < H) y[(size_t)(row0 + r) * H + j0 + o] = s;
        }
    }
}

// w13: [E][2·IM][H] (w1 rows, then w3 rows); perm: each grouped row's
// token; act: [pairs, IM] in grouped row order.
extern "C" __global__ void __launch_bounds__(WARPS * 32, MIN_BLOCKS)
moe_gate_up(const elem* __restrict__ xn, int H, int IM, const elem* __restrict__ w13, const int* __restrict__ perm,
            const int* __restrict__ meta, int E, elem* __restrict__ act) {
    int lane = threadIdx.x & 31, warps = gridDim.x * WARPS;
    int units = TILE_OFF(meta, E)[E] * IM;
    for (int u = blockIdx.x * WARPS + (threadIdx.x >> 5); u < units; u += warps) {
        int tile = u / IM, i = u - tile * IM;
        Tile t = tile_at(meta, E, tile, lane);
        gate_up_unit(xn, H, IM, w13 + (size_t)t.e * 2 * IM * H, perm, t.row0, t.nrows, i, lane, act);
    }
}

// w2: [E][H][IM]; y: [pairs, H] in grouped row order.
extern "C" __global__ void __launch_bounds__(WARPS * 32, MIN_BLOCKS)
moe_down(const elem* __restrict__ act, int H, int IM, const elem* __restrict__ w2, const int* __restrict__ meta, int E,
         float* __restrict__ y) {
    int lane = threadIdx.x & 31, warps = gridDim.x * WARPS, chunks = (H + DOWN_ROWS - 1) / DOWN_ROWS;
    int units = TILE_OFF(meta, E)[E] * chunks;
    for (int u = blockIdx.x * WARPS + (threadIdx.x >> 5); u < units; u += warps) {
        int tile = u / chunks, j0 = (u - tile * chunks) * DOWN_ROWS;
        Tile t = tile_at(meta, E, tile, lane);
        down_unit(act, H, IM, w2 + (size_t)t.e * H * IM, t.row0, t.nrows, j0, lane, y);
    }
}

// Step 13 — one grid per expert: the experts of a MoE layer launched one
// after the other, each grid sized by its expert's token count (the schedule
// the devlog started from, and the baseline of the moe-schedule experiment).
//
// Idea: the host knows how many (token, expert) pairs each expert received
// (it read them back, as the grouped path does), and for each expert with
// tokens launches moe_gate_up_expert, then moe_down_expert, each with one
// warp per unit of that expert and no more. The units are step 08's, so that
// only the schedule differs between steps 08, 13 and 14: a unit is (token
// tile of up to TILE rows, one output row i) for gate-up, which writes
// silu(w1_i·x)·(w3_i·x) for the tile's tokens, and (tile, DOWN_ROWS output
// rows) for down; a warp streams the unit's weight rows with rows_dot. The
// unit bodies are step 08's device functions (gate_up_unit, down_unit),
// which step 14 calls too.
// Traffic: as step 08: each weight row once per token tile, so at decode
// each chosen expert's weights once.
// Cost: two launches per expert with tokens, up to 2·E per layer, that run
// one after the other; each grid ends with a tail in which SMs idle, and a
// small expert's grid does not fill the GPU at all (at decode an expert
// has one tile: IM gate-up warps and H/DOWN_ROWS down warps). A busy expert
// runs alone while the GPU could run the others' units beside it, and the
// host must know the counts before it launches (not timed in the
// experiment, which knows them from the start: that favours this step).
#include "lfm2/08_moe_persistent.cu"  // TILE, WARPS, DOWN_ROWS, MIN_BLOCKS, the units; Tile and tile_at for step 14

// One expert: its rows are [row0, row0 + rows) of the grouped order, its
// weights w13e = w13 + e·2·IM·H and w2e = w2 + e·H·IM. Unit u of the grid's
// warp u is (tile u / IM, row u % IM), tile-major like step 08, so that the
// warps of a block share their tile's inputs in L1. A warp past the last
// unit (in the last block) returns whole, so the shuffles see every lane.
extern "C" __global__ void __launch_bounds__(WARPS * 32, MIN_BLOCKS)
moe_gate_up_expert(const elem* __restrict__ xn, int H, int IM, const elem* __restrict__ w13e, const int* __restrict__ perm,
                   int row0, int rows, elem* __restrict__ act) {
    int lane = threadIdx.x & 31, u = blockIdx.x * WARPS + (threadIdx.x >> 5);
    int tiles = (rows + TILE - 1) / TILE;
    if (u >= tiles * IM) return;
    int tile = u / IM, i = u - tile * IM;
    gate_up_unit(xn, H, IM, w13e, perm, row0 + tile * TILE, min(TILE, rows - tile * TILE), i, lane, act);
}

extern "C" __global__ void __launch_bounds__(WARPS * 32, MIN_BLOCKS)
moe_down_expert(const elem* __restrict__ act, int H, int IM, const elem* __restrict__ w2e, int row0, int rows,
                float* __restrict__ y) {
    int lane = threadIdx.x & 31, u = blockIdx.x * WARPS + (threadIdx.x >> 5);
    int tiles = (rows + TILE - 1) / TILE, chunks = (H + DOWN_ROWS - 1) / DOWN_ROWS;
    if (u >= tiles * chunks) return;
    int tile = u / chunks, j0 = (u - tile * chunks) * DOWN_ROWS;
    down_unit(act, H, IM, w2e, row0 + tile * TILE, min(TILE, rows - tile * TILE), j0, lane, y);
}

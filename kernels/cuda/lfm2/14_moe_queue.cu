// Step 14 — the persistent MoE kernel with an atomic task queue: the
// devlog's design, measured against step 08's static turn and step 13's
// grid per expert.
//
// Idea: one grid of just as many blocks as fit on the GPU at once (as step
// 08) serves every expert's units, so no SM waits for the next expert's
// launch. But instead of a fixed turn, a warp takes its next task from a
// global counter: lane 0 does atomicAdd(next, 1) and shuffles the number to
// the other lanes, until the number passes the last task. A task is step
// 08's unit, numbered the same way (token tile of an expert, then output
// rows), found with step 08's tile_at, and computed by step 08's
// gate_up_unit or down_unit. It is finer than the devlog's (expert, token
// tile) task, which streams a whole expert's weights: at batch 1 there
// would be four such tasks for a GPU that holds thousands of warps. The
// number of tasks comes from step 07's tile offsets on the device, so the
// host never waits. A warp asks for its next task as it starts the current
// one, so the atomic's round trip to L2 overlaps the weight stream instead
// of preceding it. The counters are reset on the device: the last warp to
// leave a queue (counted by a second counter) sets both back to zero for
// the next launch; every warp's last atomicAdd on `next` has returned
// before it counts itself out, so none can take a task after the reset.
// The host zeroes them once, when it allocates them.
// Traffic: as steps 08 and 13; plus one atomic per task on one L2 address,
// and, per launch, one atomic per warp on another.
// Cost: one atomic per task, on one L2 address that every warp contends
// for. Against step 08's static turn, the trade is that atomic against
// balance: where tasks take equal times the static turn balances as well
// without it; where they take unequal times (a warp slowed by DRAM while
// others hit in L2, a tile with fewer rows, SMs shared with other work)
// the queue keeps warps busy that the static turn would leave idle at the
// end. Which weighs more is for the moe-schedule experiment to measure.
// Near the end a warp may hold a task it took ahead while other warps
// already left.
#include "lfm2/13_moe_per_expert.cu"

// queue, int32: gate-up next task, gate-up warps done, down next task, down
// warps done.
#define GATE_UP_QUEUE(q) (q)
#define DOWN_QUEUE(q) ((q) + 2)

// take_ahead: lane 0 takes a task number; the others get 0 until they read
// lane 0's with task_of. Split in two so that the atomic is in flight while
// the warp works.
__device__ __forceinline__ int take_ahead(int* next, int lane) { return lane == 0 ? atomicAdd(next, 1) : 0; }
__device__ __forceinline__ int task_of(int taken) { return __shfl_sync(0xffffffffu, taken, 0); }

// leave counts the warp out of queue q = {next, done}; the last warp of the
// grid out resets both for the next launch.
__device__ __forceinline__ void leave(int* q, int lane) {
    if (lane == 0 && atomicAdd(q + 1, 1) == (int)gridDim.x * WARPS - 1) {
        q[0] = 0;
        q[1] = 0;
    }
}

extern "C" __global__ void __launch_bounds__(WARPS * 32, MIN_BLOCKS)
moe_gate_up_queue(const elem* __restrict__ xn, int H, int IM, const elem* __restrict__ w13, const int* __restrict__ perm,
                  const int* __restrict__ meta, int E, elem* __restrict__ act, int* queue) {
    int* q = GATE_UP_QUEUE(queue);
    int lane = threadIdx.x & 31, tasks = TILE_OFF(meta, E)[E] * IM;
    for (int task = task_of(take_ahead(q, lane)); task < tasks;) {
        int ahead = take_ahead(q, lane);
        int tile = task / IM, i = task - tile * IM;
        Tile t = tile_at(meta, E, tile, lane);
        gate_up_unit(xn, H, IM, w13 + (size_t)t.e * 2 * IM * H, perm, t.row0, t.nrows, i, lane, act);
        task = task_of(ahead);
    }
    leave(q, lane);
}

extern "C" __global__ void __launch_bounds__(WARPS * 32, MIN_BLOCKS)
moe_down_queue(const elem* __restrict__ act, int H, int IM, const elem* __restrict__ w2, const int* __restrict__ meta, int E,
               float* __restrict__ y, int* queue) {
    int* q = DOWN_QUEUE(queue);
    int lane = threadIdx.x & 31, chunks = (H + DOWN_ROWS - 1) / DOWN_ROWS, tasks = TILE_OFF(meta, E)[E] * chunks;
    for (int task = task_of(take_ahead(q, lane)); task < tasks;) {
        int ahead = take_ahead(q, lane);
        int tile = task / chunks, j0 = (task - tile * chunks) * DOWN_ROWS;
        Tile t = tile_at(meta, E, tile, lane);
        down_unit(act, H, IM, w2 + (size_t)t.e * H * IM, t.row0, t.nrows, j0, lane, y);
        task = task_of(ahead);
    }
    leave(q, lane);
}

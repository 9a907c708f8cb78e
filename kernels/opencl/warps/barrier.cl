// Cost of a work-group barrier (suite "barrier"; the CUDA twin is
// cuda/warps/barrier.cu).
//
// The guide's claim: barrier(CLK_LOCAL_MEM_FENCE) synchronises a work-group
// through local memory; it is cheap when the work-group is one hardware warp
// of 32 (the work-items already run in lockstep) and costs more as the group
// spans more warps that must all arrive before any can continue.
//
// What this measures: `rounds` (a kernel argument) rounds of (write my value to local memory,
// barrier, read my neighbour's value, average), built with -DL=<local size>.
//   bar_sync:   the real exchange; one barrier per round (the two halves of a
//               double buffer alternate, so no second barrier is needed
//               before the next write).
//   bar_none:   the same loads, stores and arithmetic, but each work-item
//               reads its own slot, which needs no barrier, so there is none.
// The difference divided by the number of barriers executed is the cost of a
// barrier. The local buffer is accessed through a volatile pointer so that
// the compiler keeps the store and load in bar_none too.
// Why: a barrier stalls the warps of a group until the slowest arrives, which
// costs latency that only other groups on the compute unit can hide
// (occupancy). On PoCL's CPU device a work-group is a loop over work-items in
// one thread; a barrier splits the kernel into separate loops, so its cost is
// a loop exit and re-entry, spilling each work-item's live values to memory.
// That can make bar_sync FASTER than bar_none there: the barrier turns the
// kernel into a rounds loop around independent (vectorisable) work-item
// loops, while bar_none runs each work-item's 64 dependent rounds through
// volatile memory one work-item at a time. A negative cost per barrier on
// PoCL is that restructuring, not a free barrier.

#ifndef L
#define L 256
#endif

// rounds: number of exchange rounds; n must be a multiple of L.
__kernel void bar_sync(int n, int rounds, __global const float* restrict src, __global float* restrict dst) {
    __local float buf[2 * L];
    int l = get_local_id(0);
    int i = get_global_id(0);
    float v = src[i];
    for (int r = 0; r < rounds; r++) {
        volatile __local float* p = buf + (r & 1) * L;
        p[l] = v;
        barrier(CLK_LOCAL_MEM_FENCE);
        v = 0.5f * (v + p[(l + 1) & (L - 1)]);
    }
    dst[i] = v;
}

__kernel void bar_none(int n, int rounds, __global const float* restrict src, __global float* restrict dst) {
    __local float buf[2 * L];
    int l = get_local_id(0);
    int i = get_global_id(0);
    float v = src[i];
    for (int r = 0; r < rounds; r++) {
        volatile __local float* p = buf + (r & 1) * L;
        p[l] = v;
        v = 0.5f * (v + p[l]);
    }
    dst[i] = v;
}

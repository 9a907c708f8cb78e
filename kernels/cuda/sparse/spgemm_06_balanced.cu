// SpGEMM step 06 — step 04 with the long rows done in fewer searches and
// with their numeric products spread evenly over each window block's warps.
//
// Idea, first: step 04's symbolic pass spends its time finding where each
// row of B enters each window, once per entry of A and window. Here one
// symbolic block counts SYMBOLIC_SPAN = 16 windows (a bitmap of 16·WINDOW
// bits is 16 KiB), so each entry is searched a sixteenth as often; the numeric
// pass, whose accumulator must fit in shared memory, keeps one window a
// block. Second: in step 04 a window block gives each warp whole entries
// a_ik of A's row, and the warp walks the stretch of row k of B that falls
// in the window. On a power-law matrix those stretches range from nothing to
// thousands of columns, so a few warps work while the rest of the block
// waits at the barrier: Nsight Compute found the window kernels' warps
// stalled at the block barrier for half of their cycles (R-MAT scale 18, an
// H100). Here the block first measures every stretch (a thread per entry, two
// binary searches), scans the lengths into one list of the batch's products,
// and each warp takes an equal share of the list (balancedWalk in
// spgemm_window.cuh). Only the numeric pass walks this way: the symbolic
// pass's time is its searches, not its products. The hash-table bins stay as
// in step 04, but the host runs each pass's dense bin on a second stream
// alongside them (engine/sparse, run.alongside): the window blocks are
// latency bound, and the hash bins' blocks use the issue slots they leave.
// Traffic: the same reads of A and B, and a sixteenth of the symbolic
// pass's reads of A; the stretch bounds and offsets stay in shared memory
// (12 bytes per entry of a batch).
// Cost: sixteen times the symbolic bitmap per block; in the numeric pass a
// thread's binary search instead of a warp's 32-way probe for long rows of
// B, a block scan per batch of A's entries, and for every product a search
// of the offsets in shared memory (galloping on from the lane's previous
// entry: one load while the entry is the same).
#define WINDOW_BALANCED
#define SYMBOLIC_SPAN 16  // symbolicSpan of its row in engine/sparse/spgemm_cuda_steps.go
#include "sparse/spgemm_04_binned.cu"

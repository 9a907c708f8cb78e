// SpGEMM step 03 — hash tables in shared memory.
//
// Idea: keep the two phases of step 02, but accumulate each row in a hash
// table of 4096 slots in shared memory (spgemm_hash.cuh) instead of a dense
// row in global memory. A row touches only its own slots, on chip; nothing
// scans the column range; the sort is a bitonic network over the row's
// entries. Rows whose product count exceeds half the table (2048) cannot be
// guaranteed room, so they go to a dense accumulator that is on chip too: a
// window of columns at a time in shared memory (spgemm_window.cuh). The host
// sorts rows into those two bins with assign_bins.
// Traffic saved: the workspace atomics and bitmap scans leave global memory.
// Cost: one size for all. A row with 16 products still clears, compacts and
// owns a 32 KiB table and 256 threads, which caps how many rows an SM holds.
#include "sparse/spgemm_window.cuh"
#include "sparse/spgemm_hash.cuh"

HASH_SYMBOLIC_KERNEL(4096, 256, ROW_SOURCE_PARAMS, ROW_SOURCE_INIT)
HASH_NUMERIC_KERNEL(4096, 256, ROW_SOURCE_PARAMS, ROW_SOURCE_INIT)
WINDOW_SYMBOLIC_KERNEL(ROW_SOURCE_PARAMS, ROW_SOURCE_INIT)
WINDOW_NUMERIC_KERNEL(ROW_SOURCE_PARAMS, ROW_SOURCE_INIT)

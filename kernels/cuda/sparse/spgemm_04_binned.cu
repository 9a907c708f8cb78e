// SpGEMM step 04 — rows binned by size, a kernel configuration per bin.
//
// Idea (nsparse, Nagasaka et al. 2017): rows of a real matrix differ in size
// by orders of magnitude, so one configuration is wrong for almost all of
// them. assign_bins sorts rows by their bound (product count for the
// symbolic pass, exact entry count for the numeric one) into bins whose
// table is the next power of two at least twice the bound, from 64 slots and
// 32 threads up to 4096 slots and 256 threads. Rows above 2048 go to the
// windowed dense kernels of step 03. Each bin is one launch; small tables
// let many rows share an SM, large ones get the threads they need.
// Traffic: as step 03, minus the clearing and compaction of unused slots.
// Cost: the bin assignment (a pass over the rows and a read of the bin
// counts by the host) and one launch per non-empty bin.
#include "sparse/spgemm_window.cuh"
#include "sparse/spgemm_hash.cuh"

// Small tables serve rows whose B rows are short too, so their lanes work in
// groups of G = 8 or 16 per entry of A instead of a whole warp.
#define BIN(T, THREADS, G)                                                         \
    HASH_SYMBOLIC_KERNEL(T, THREADS, ROW_SOURCE_PARAMS, ROW_SOURCE_INIT_G(G)) \
    HASH_NUMERIC_KERNEL(T, THREADS, ROW_SOURCE_PARAMS, ROW_SOURCE_INIT_G(G))
BIN(64, 32, 8)
BIN(128, 32, 8)
BIN(256, 64, 8)
BIN(512, 128, 16)
BIN(1024, 256, 16)
BIN(2048, 256, 32)
BIN(4096, 256, 32)
WINDOW_SYMBOLIC_KERNEL(ROW_SOURCE_PARAMS, ROW_SOURCE_INIT)
WINDOW_NUMERIC_KERNEL(ROW_SOURCE_PARAMS, ROW_SOURCE_INIT)

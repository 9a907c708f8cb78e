// SpGEMM step 01 — a block per row of C, one pass, upper-bound output.
//
// Idea: the seed's row-wise kernel. Block i walks row i of A; for each a_ik
// a warp streams row k of B and adds a_ik·b_kj into a dense accumulator for
// row i (spgemm_dense.cuh), which then writes row i sorted. The seed left the
// output open ("// Merge?"): how many entries will row i have? One pass cannot
// know, so row i writes into a slice sized by its product count (the upper
// bound, from row_products and a scan), and gather_rows packs the slices into
// C once the real counts are scanned.
// Traffic: A once, the selected rows of B once, the products' atomics into
// the workspace, a bitmap scan over each row's touched column range, C twice
// (slice, then gather).
// Cost: an upper-bound buffer of 8 bytes per product (often several times C),
// and a dense workspace of (4 + 1/8) bytes per column for each resident block.
// A row with 3 products still pays for a 1024-thread block.
#include "sparse/spgemm_dense.cuh"

DENSE_NUMERIC_KERNEL(ROW_SOURCE_PARAMS, ROW_SOURCE_INIT)

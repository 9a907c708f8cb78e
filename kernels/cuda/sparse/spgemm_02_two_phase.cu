// SpGEMM step 02 — two phases: symbolic (count), then numeric (fill).
//
// Idea: run the row kernel twice. The symbolic pass only marks columns in
// the bitmap and counts each row's distinct entries; a scan of the counts is
// C's row-pointer array, so C is allocated exactly. The numeric pass repeats
// the accumulation with values and writes every row straight into its place
// in C: no upper-bound buffer, no gather.
// Traffic saved: the 8-bytes-per-product slice buffer and the gather's read
// and write of C. Traffic added: A and the selected rows of B are read twice.
// Cost: the symbolic pass is almost as expensive as the numeric one, so time
// goes up a little while memory drops to C plus the workspace. Every library
// (cuSPARSE, nsparse, spECK) pays this price; the next steps make each
// pass cheaper.
#include "sparse/spgemm_dense.cuh"

DENSE_SYMBOLIC_KERNEL(ROW_SOURCE_PARAMS, ROW_SOURCE_INIT)
DENSE_NUMERIC_KERNEL(ROW_SOURCE_PARAMS, ROW_SOURCE_INIT)

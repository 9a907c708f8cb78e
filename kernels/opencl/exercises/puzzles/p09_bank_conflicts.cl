// Puzzle 9 (puzzles/bank-conflicts), reference solution: out = in
// transposed through a TILE × TILE (32×32) tile padded to TILE + 1
// columns, with work-groups of TILE × BLOCK_ROWS (32×8).
//
// Idea: a GPU's local memory has 32 banks, word w in bank w mod 32.
// Reading a column of a 32×32 tile reads words 32 apart, all in one bank:
// 32 reads one after the other (a 32-way bank conflict). One padding
// column makes the row length 33, so a column's words fall in 32
// different banks. Each work-item moves TILE / BLOCK_ROWS = 4 rows of its
// tile. PoCL on the CPU has no banks: there, only a GPU's timing tells.
// Traffic: in read once, out written once, both coalesced: 8 bytes per
// element.
// Cost: one barrier per tile and 32 floats of padding; -DPAD=0 builds the
// unpadded tile, the notebook's contrast.

#ifndef PAD
#define PAD 1
#endif

__kernel __attribute__((reqd_work_group_size(TILE, BLOCK_ROWS, 1)))
void transpose(const __global float* restrict in, const int rows, const int cols, __global float* restrict out)
{
    __local float tile[TILE][TILE + PAD];
    const int tx = get_local_id(0), ty = get_local_id(1);
    const int c = get_group_id(0) * TILE + tx;
    for (int j = ty; j < TILE; j += BLOCK_ROWS) {
        const int r = get_group_id(1) * TILE + j;
        if (r < rows && c < cols) tile[j][tx] = in[r * cols + c];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    const int ocol = get_group_id(1) * TILE + tx;  // out[orow][ocol] = in[ocol][orow]
    for (int j = ty; j < TILE; j += BLOCK_ROWS) {
        const int orow = get_group_id(0) * TILE + j;
        if (orow < cols && ocol < rows) STORE(out, orow * rows + ocol, tile[tx][j]);
    }
}

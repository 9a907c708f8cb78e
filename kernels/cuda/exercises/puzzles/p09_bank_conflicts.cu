// Puzzle 9 (puzzles/bank-conflicts), reference solution: out = in
// transposed through a TILE × TILE (32×32) tile padded to TILE + 1
// columns, with blocks of TILE × BLOCK_ROWS (32×8) threads.
//
// Idea: shared memory has 32 banks, word w in bank w mod 32. Reading a
// column of a 32×32 tile reads words 32 apart, all in one bank: 32 reads
// one after the other (a 32-way bank conflict). One padding column makes
// the row length 33, so a column's words fall in 32 different banks. Each
// thread moves TILE / BLOCK_ROWS = 4 rows of its tile, so a block of 256
// threads moves 1024 elements.
// Traffic: in read once, out written once, both coalesced: 8 bytes per
// element.
// Cost: one barrier per tile and 32 floats of padding; -DPAD=0 builds the
// unpadded tile, the notebook's contrast.

#ifndef PAD
#define PAD 1
#endif

extern "C" __global__ void transpose(const float* __restrict__ in, int rows, int cols, float* __restrict__ out) {
    __shared__ float tile[TILE][TILE + PAD];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int c = blockIdx.x * TILE + tx;
    for (int j = ty; j < TILE; j += BLOCK_ROWS) {
        const int r = blockIdx.y * TILE + j;
        if (r < rows && c < cols) tile[j][tx] = in[r * cols + c];
    }
    __syncthreads();
    const int ocol = blockIdx.y * TILE + tx;  // out[orow][ocol] = in[ocol][orow]
    for (int j = ty; j < TILE; j += BLOCK_ROWS) {
        const int orow = blockIdx.x * TILE + j;
        if (orow < cols && ocol < rows) STORE(out, orow * rows + ocol, tile[tx][j]);
    }
}

// Puzzle 8 (puzzles/transpose), reference solution: out = in transposed (in
// is rows × cols, out cols × rows), through a TILE × TILE tile in shared
// memory.
//
// Idea: a warp's loads and stores are fast when its threads touch
// neighbouring addresses (coalesced). Transposing element by element reads
// rows but writes columns, a stride of rows floats between threads. The
// tile fixes the writes: the block reads a tile of in row by row, waits,
// then writes the tile's columns as rows of out, again row by row.
// Traffic: in read once, out written once, both coalesced: 8 bytes per
// element.
// Cost: one barrier per tile; the column reads of the tile hit one shared
// memory bank TILE times over (puzzle 9 pads them away).

extern "C" __global__ void transpose(const float* __restrict__ in, int rows, int cols, float* __restrict__ out) {
    __shared__ float tile[TILE][TILE];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int r = blockIdx.y * TILE + ty, c = blockIdx.x * TILE + tx;
    if (r < rows && c < cols) tile[ty][tx] = in[r * cols + c];
    __syncthreads();
    const int orow = blockIdx.x * TILE + ty, ocol = blockIdx.y * TILE + tx;  // out[orow][ocol] = in[ocol][orow]
    if (orow < cols && ocol < rows) STORE(out, orow * rows + ocol, tile[tx][ty]);
}

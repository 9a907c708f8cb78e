// Puzzle 8 (puzzles/transpose), reference solution: out = in transposed (in
// is rows × cols, out cols × rows), through a TILE × TILE tile in local
// memory.
//
// Idea: loads and stores are fast on a GPU when neighbouring work-items
// touch neighbouring addresses (coalesced). Transposing element by element
// reads rows but writes columns, a stride of rows floats between
// work-items. The tile fixes the writes: the group reads a tile of in row
// by row, waits, then writes the tile's columns as rows of out, again row
// by row.
// Traffic: in read once, out written once, both coalesced: 8 bytes per
// element.
// Cost: one barrier per tile; on a GPU the tile's column reads hit one
// local memory bank many times over (puzzle 9 pads them away).

__kernel __attribute__((reqd_work_group_size(TILE, TILE, 1)))
void transpose(const __global float* restrict in, const int rows, const int cols, __global float* restrict out)
{
    __local float tile[TILE][TILE];
    const int tx = get_local_id(0), ty = get_local_id(1);
    const int r = get_group_id(1) * TILE + ty, c = get_group_id(0) * TILE + tx;
    if (r < rows && c < cols) tile[ty][tx] = in[r * cols + c];
    barrier(CLK_LOCAL_MEM_FENCE);
    const int orow = get_group_id(0) * TILE + ty, ocol = get_group_id(1) * TILE + tx;  // out[orow][ocol] = in[ocol][orow]
    if (orow < cols && ocol < rows) STORE(out, orow * rows + ocol, tile[tx][ty]);
}

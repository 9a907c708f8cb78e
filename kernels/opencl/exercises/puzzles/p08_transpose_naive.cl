// Puzzle 8's contrast: the transpose element by element.
//
// Idea: each work-item copies in[r][c] to out[c][r]: the reads are
// coalesced, neighbouring work-items' writes are rows floats apart.
// Traffic: in read once, out written once, but on a GPU in 32-byte
// sectors of which a write uses 4 bytes.
// Cost: the strided writes; the notebook times it next to yours.

__kernel __attribute__((reqd_work_group_size(TILE, TILE, 1)))
void transpose(const __global float* restrict in, const int rows, const int cols, __global float* restrict out)
{
    const int c = get_global_id(0), r = get_global_id(1);
    if (r < rows && c < cols) STORE(out, c * rows + r, in[r * cols + c]);
}

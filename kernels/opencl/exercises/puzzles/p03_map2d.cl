// Puzzle 3 (puzzles/2d-map), reference solution: out[r][c] = a[r][c] +
// b[c] for a rows × cols matrix a (row-major), on a 2-D NDRange.
//
// Idea: work-groups of 16×16 tile the matrix; dimension 0 walks the
// columns and dimension 1 the rows, so that neighbouring work-items in
// dimension 0 read neighbouring floats: coalesced on a GPU. The NDRange
// is rounded up to whole groups, which hang over the right and bottom
// edges, so both indices are guarded.
// Traffic: a read and out written once, b read once per row (from cache):
// 8 bytes per element.
// Cost: none beyond the guard.

__kernel __attribute__((reqd_work_group_size(16, 16, 1)))
void broadcast_add(const __global float* restrict a, const __global float* restrict b, const int rows,
                   const int cols, __global float* restrict out)
{
    const int c = get_global_id(0), r = get_global_id(1);
    if (r < rows && c < cols) STORE(out, r * cols + c, a[r * cols + c] + b[c]);
}

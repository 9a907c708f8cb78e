// Puzzle 3 (puzzles/2d-map), reference solution: out[r][c] = a[r][c] +
// b[c] for a rows × cols matrix a (row-major), on a 2-D grid.
//
// Idea: blocks of 16×16 threads tile the matrix; x walks the columns and
// y the rows, so that the 16 threads of a row of a block (neighbouring in
// x, hence in a warp) read neighbouring floats: coalesced. The grid is
// ceil(cols / 16) × ceil(rows / 16) blocks; the last ones hang over the
// right and bottom edges, so both indices are guarded.
// Traffic: a read and out written once, b read once per row (from cache):
// 8 bytes per element.
// Cost: none beyond the guard.

extern "C" __global__ void broadcast_add(const float* __restrict__ a, const float* __restrict__ b, int rows,
                                         int cols, float* __restrict__ out) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    const int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < rows && c < cols) STORE(out, r * cols + c, a[r * cols + c] + b[c]);
}

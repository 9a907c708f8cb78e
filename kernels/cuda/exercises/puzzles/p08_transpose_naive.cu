// Puzzle 8's contrast: the transpose element by element.
//
// Idea: each thread copies in[r][c] to out[c][r]: the reads are coalesced,
// the writes of a warp are rows floats apart, one memory transaction each.
// Traffic: in read once, out written once, but in 32-byte sectors of
// which a write uses 4 bytes.
// Cost: the strided writes; the notebook times it next to yours.

extern "C" __global__ void transpose(const float* __restrict__ in, int rows, int cols, float* __restrict__ out) {
    const int c = blockIdx.x * TILE + threadIdx.x, r = blockIdx.y * TILE + threadIdx.y;
    if (r < rows && c < cols) STORE(out, c * rows + r, in[r * cols + c]);
}

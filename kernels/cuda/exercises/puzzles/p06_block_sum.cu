// Puzzle 6 (puzzles/block-reduce), reference solution: sums[row] = the sum
// of row row of x (width floats), one block of BLOCK threads per row.
//
// Idea: each thread sums a strided share of the row (i = tid, tid + BLOCK,
// ...: neighbouring threads read neighbouring floats), then a tree in a
// shared array halves the BLOCK partial sums log2(BLOCK) times, with a
// __syncthreads() after each step, until part[0] holds the row's sum. A
// thread with no element adds 0; an empty row sums to 0.
// Traffic: x read once: 4 bytes per element, and a sum per row.
// Cost: 9 barriers per row; warp shuffles (puzzle 5) would replace the
// last five.

extern "C" __global__ void row_sum(const float* __restrict__ x, int width, float* __restrict__ sums) {
    __shared__ float part[BLOCK];
    const int row = blockIdx.x, t = threadIdx.x;
    const float* xr = x + (size_t)row * width;
    float s = 0.f;
    for (int i = t; i < width; i += BLOCK) s += xr[i];
    part[t] = s;
    __syncthreads();
    for (int stride = BLOCK / 2; stride > 0; stride >>= 1) {
        if (t < stride) part[t] += part[t + stride];
        __syncthreads();
    }
    if (t == 0) STORE(sums, row, part[0]);
}

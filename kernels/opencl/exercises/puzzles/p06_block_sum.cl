// Puzzle 6 (puzzles/block-reduce), reference solution: sums[row] = the sum
// of row row of x (width floats), one work-group of BLOCK per row.
//
// Idea: each work-item sums a strided share of the row (i = lid, lid +
// BLOCK, ...: neighbouring work-items read neighbouring floats), then a
// tree in a __local array halves the BLOCK partial sums log2(BLOCK) times,
// with a barrier after each step, until part[0] holds the row's sum. A
// work-item with no element adds 0; an empty row sums to 0.
// Traffic: x read once: 4 bytes per element, and a sum per row.
// Cost: 9 barriers per row.

__kernel __attribute__((reqd_work_group_size(BLOCK, 1, 1)))
void row_sum(const __global float* restrict x, const int width, __global float* restrict sums)
{
    __local float part[BLOCK];
    const int row = get_group_id(0), t = get_local_id(0);
    const __global float* xr = x + (size_t)row * width;
    float s = 0.0f;
    for (int i = t; i < width; i += BLOCK) s += xr[i];
    part[t] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int stride = BLOCK / 2; stride > 0; stride >>= 1) {
        if (t < stride) part[t] += part[t + stride];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (t == 0) STORE(sums, row, part[0]);
}

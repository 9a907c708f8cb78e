// Puzzle 5 (puzzles/warp-reduce), reference solution: sums[w] = x[32w] +
// ... + x[32w + 31] (those below n), in local memory.
//
// Idea: CUDA adds a warp's 32 values with register shuffles. OpenCL C 1.2
// has no shuffles, and sub-groups (OpenCL 2.1's sub_group_reduce_add) are
// optional: PoCL on the CPU has none. So each segment of 32 work-items
// reduces in a __local array: five halving steps (16, 8, 4, 2, 1), each
// work-item adding the value offset places above it, with a barrier after each
// step (a barrier is for the whole group, so the 8 segments of a group
// step together). Work-items past n put 0.
// Traffic: x read once: 4 bytes per element, and a sum per 32.
// Cost: five barriers per group, where CUDA's shuffles need none.

__kernel __attribute__((reqd_work_group_size(BLOCK, 1, 1)))
void warp_sum(const __global float* restrict x, const int n, __global float* restrict sums)
{
    __local float part[BLOCK];
    const int i = get_global_id(0), lid = get_local_id(0), lane = lid % 32;
    part[lid] = i < n ? x[i] : 0.0f;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int offset = 16; offset > 0; offset >>= 1) {
        if (lane < offset) part[lid] += part[lid + offset];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lane == 0 && i < n) STORE(sums, i / 32, part[lid]);
}
